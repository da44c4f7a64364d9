"""JSON API for a persona's server tools (``/api/v1/personas/<id>/tools/``).

The signing secret is in the answer to the POST that creates a tool, and nowhere
else; headers are write-only (`has_headers` says whether any are stored).
`POST .../tools/<id>/test/` sends one real, signed call and returns its answer."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from voiceapp.personas.apis import OfPersona
from voiceapp.personas.models import PersonaTool
from voiceapp.personas.server_tools import (
    persona_tool_create,
    persona_tool_delete,
    persona_tool_list,
    persona_tool_target,
    persona_tool_update,
    tool_call,
)
from voiceapp.tenants import crypto


class PersonaToolSerializer(serializers.ModelSerializer):
    parameters = serializers.JSONField(
        required=False, help_text="A JSON schema of the arguments (an object)."
    )
    headers = serializers.DictField(
        child=serializers.CharField(max_length=1000),
        required=False,
        allow_null=True,
        write_only=True,
        help_text="Sent with every call (stored encrypted, never returned); null clears them.",
    )
    has_headers = serializers.SerializerMethodField()

    class Meta:
        model = PersonaTool
        fields = [
            "id",
            "name",
            "description",
            "parameters",
            "url",
            "timeout_ms",
            "enabled",
            "headers",
            "has_headers",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def get_has_headers(self, tool: PersonaTool) -> bool:
        return bool(tool.headers_encrypted)

    # Validation (names, schema, URL, headers, the cap) runs in the services.
    def update(self, instance: PersonaTool, validated_data: dict[str, Any]) -> PersonaTool:
        return persona_tool_update(tool=instance, **validated_data)


class PersonaToolCreatedSerializer(PersonaToolSerializer):
    secret = serializers.CharField(
        help_text="The whsec_ secret that signs every call. Shown in this answer only."
    )

    class Meta(PersonaToolSerializer.Meta):
        fields = [*PersonaToolSerializer.Meta.fields, "secret"]


class ToolTestSerializer(serializers.Serializer):
    arguments = serializers.DictField(required=False, default=dict)


class ToolTestResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    status = serializers.IntegerField(allow_null=True, help_text="The HTTP status, if any.")
    ms = serializers.IntegerField(help_text="How long the call took.")
    output = serializers.CharField(help_text="The body (ok), or what went wrong.")


@extend_schema_view(
    list=extend_schema(summary="List a persona's server tools"),
    retrieve=extend_schema(summary="One server tool"),
    update=extend_schema(summary="Change a server tool"),
    partial_update=extend_schema(summary="Change some fields of a server tool"),
    destroy=extend_schema(summary="Delete a server tool"),
)
class PersonaToolViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
    OfPersona,
):
    """Functions the persona's model may call; each call is POSTed, signed, to the
    tool's URL, and the agent answers from what it sends back (docs/TOOLS.md)."""

    serializer_class = PersonaToolSerializer
    queryset = PersonaTool.objects.none()  # for the schema; requests use get_queryset
    pagination_class = None  # at most MAX_TOOLS_PER_PERSONA per persona

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return PersonaTool.objects.none()
        return PersonaTool.objects.filter(
            pk__in=[t.pk for t in persona_tool_list(persona=self.persona())]
        ).order_by("name")

    @extend_schema(
        summary="Add a server tool (the answer holds its signing secret, once)",
        responses={201: PersonaToolCreatedSerializer},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = PersonaToolSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        tool, secret = persona_tool_create(persona=self.persona(), **given.validated_data)
        data = {**PersonaToolSerializer(tool).data, "secret": secret}
        return Response(data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: PersonaTool) -> None:
        persona_tool_delete(tool=instance)

    @extend_schema(
        summary="Send one real, signed test call and return its answer",
        request=ToolTestSerializer,
        responses={200: ToolTestResultSerializer},
    )
    @action(detail=True, methods=["post"])
    def test(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = ToolTestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            target = persona_tool_target(tool=self.get_object())
        except crypto.DecryptionError as exc:
            return Response({"ok": False, "status": None, "ms": 0, "output": str(exc)})
        result = tool_call(target, call_id="test", arguments=given.validated_data["arguments"])
        return Response(
            {"ok": result.ok, "status": result.status, "ms": result.ms, "output": result.output}
        )
