"""JSON API for an organization's SIP trunks (`/api/v1/sip-trunks/`) and phone
numbers (`/api/v1/phone-numbers/`). A trunk's password is write-only."""

from __future__ import annotations

from typing import Any

from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from telephony.models import OutboundCall, PhoneNumber, SipTrunk
from telephony.selectors import outbound_call_list, phone_number_list, trunk_get, trunk_list
from telephony.services import (
    OutboundRefused,
    outbound_call_create,
    phone_number_create,
    phone_number_delete,
    phone_number_update,
    trunk_create,
    trunk_delete,
    trunk_update,
)
from voiceapp.api.viewsets import OrgModelViewSet
from voiceapp.personas.selectors import persona_get, persona_get_by_slug


class SipTrunkSerializer(serializers.ModelSerializer):
    password = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=128,
        help_text="The digest password (write-only); needs a username.",
    )
    uses_digest = serializers.BooleanField(read_only=True)

    class Meta:
        model = SipTrunk
        fields = [
            "id",
            "name",
            "allowed_addresses",
            "username",
            "password",
            "uses_digest",
            "enabled",
            "outbound_address",
            "caller_id",
            "quiet_hours_start",
            "quiet_hours_end",
            "time_zone",
            "created_at",
        ]
        read_only_fields = ["id", "uses_digest", "created_at"]

    def create(self, validated_data: dict[str, Any]) -> SipTrunk:
        validated_data.pop("enabled", None)
        return trunk_create(org=self.context["org"], **validated_data)

    def update(self, instance: SipTrunk, validated_data: dict[str, Any]) -> SipTrunk:
        return trunk_update(instance, **validated_data)


class PhoneNumberSerializer(serializers.ModelSerializer):
    persona = serializers.IntegerField(source="persona_id", help_text="The persona's id.")
    trunk = serializers.IntegerField(
        source="trunk_id",
        required=False,
        allow_null=True,
        help_text="The trunk that may deliver its calls; null: any of the organization's.",
    )
    number = serializers.CharField(
        max_length=60, help_text="E.164 (+15550104477) or a SIP user name (sales)."
    )

    class Meta:
        model = PhoneNumber
        fields = ["id", "number", "persona", "trunk", "label", "created_at"]
        read_only_fields = ["id", "created_at"]

    def _persona(self, pk: int) -> Any:
        return persona_get(org=self.context["org"], pk=pk)

    def _trunk(self, pk: int | None) -> SipTrunk | None:
        return None if pk is None else trunk_get(org=self.context["org"], pk=pk)

    def create(self, validated_data: dict[str, Any]) -> PhoneNumber:
        return phone_number_create(
            org=self.context["org"],
            number=validated_data["number"],
            persona=self._persona(validated_data["persona_id"]),
            trunk=self._trunk(validated_data.get("trunk_id")),
            label=validated_data.get("label", ""),
        )

    def update(self, instance: PhoneNumber, validated_data: dict[str, Any]) -> PhoneNumber:
        if "number" in validated_data and validated_data["number"] != instance.number:
            raise serializers.ValidationError(
                {"number": ["A number cannot change; delete it and add the new one."]}
            )
        changes: dict[str, Any] = {}
        if "persona_id" in validated_data:
            changes["persona"] = self._persona(validated_data["persona_id"])
        if "trunk_id" in validated_data:
            changes["trunk"] = self._trunk(validated_data["trunk_id"])
        if "label" in validated_data:
            changes["label"] = validated_data["label"]
        return phone_number_update(instance, **changes)


class SipTrunkViewSet(OrgModelViewSet):
    """The organization's SIP trunks: who may deliver calls to its numbers."""

    serializer_class = SipTrunkSerializer
    queryset = SipTrunk.objects.none()

    def get_queryset(self) -> Any:
        return trunk_list(org=self.request.user.org)

    def perform_destroy(self, instance: SipTrunk) -> None:
        trunk_delete(instance)


class PhoneNumberViewSet(OrgModelViewSet):
    """The organization's phone numbers, each routed to a persona."""

    serializer_class = PhoneNumberSerializer
    queryset = PhoneNumber.objects.none()

    def get_queryset(self) -> Any:
        return phone_number_list(org=self.request.user.org)

    def perform_destroy(self, instance: PhoneNumber) -> None:
        phone_number_delete(instance)


class OutboundCallSerializer(serializers.ModelSerializer):
    persona = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    trunk = serializers.PrimaryKeyRelatedField(read_only=True)
    call = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta:
        model = OutboundCall
        fields = [
            "id",
            "to",
            "persona",
            "trunk",
            "variables",
            "status",
            "detail",
            "call",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class OutboundCallCreateSerializer(serializers.Serializer):
    to = serializers.CharField(max_length=40, help_text="The number to call, e.g. +15550104477.")
    persona = serializers.CharField(max_length=80, help_text="The persona's slug (or id).")
    variables = serializers.DictField(required=False, help_text="Kept with the call.")
    trunk = serializers.IntegerField(
        required=False,
        help_text="The trunk to call through; by default the first with an outbound address.",
    )


def outbound_call_place(request: Request) -> Response:
    """`POST /api/v1/calls/`: queue an outbound phone call (202); its progress is at
    `/api/v1/outbound-calls/<id>/` and in `call.progress` webhooks."""
    org = request.user.org
    given = OutboundCallCreateSerializer(data=request.data)
    given.is_valid(raise_exception=True)
    data = given.validated_data
    ref = str(data["persona"])
    persona = (
        persona_get(org=org, pk=int(ref))
        if ref.isdigit()
        else persona_get_by_slug(org=org, slug=ref)
    )
    trunk = trunk_get(org=org, pk=data["trunk"]) if "trunk" in data else None
    try:
        outbound = outbound_call_create(
            org=org, persona=persona, to=data["to"], variables=data.get("variables"), trunk=trunk
        )
    except OutboundRefused as exc:
        return Response({"error": {"code": exc.code, "message": exc.message}}, status=exc.status)
    return Response(OutboundCallSerializer(outbound).data, status=status.HTTP_202_ACCEPTED)


class OutboundCallViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The organization's outbound calls and their progress."""

    serializer_class = OutboundCallSerializer
    queryset = OutboundCall.objects.none()

    def get_queryset(self) -> Any:
        return outbound_call_list(org=self.request.user.org)
