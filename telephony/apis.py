"""JSON API for an organization's SIP trunks (`/api/v1/sip-trunks/`) and phone
numbers (`/api/v1/phone-numbers/`). A trunk's password is write-only."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from telephony.models import PhoneNumber, SipTrunk
from telephony.selectors import phone_number_list, trunk_get, trunk_list
from telephony.services import (
    phone_number_create,
    phone_number_delete,
    phone_number_update,
    trunk_create,
    trunk_delete,
    trunk_update,
)
from voiceapp.api.viewsets import OrgModelViewSet
from voiceapp.personas.selectors import persona_get


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
