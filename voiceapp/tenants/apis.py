"""JSON API for the organization's own LLM endpoints (``/api/v1/llm-endpoints/``).

The API key is write-only: responses say whether one is set and its last four
characters, never the key.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from voiceapp.api.viewsets import OrgModelViewSet
from voiceapp.tenants.models import LLMEndpoint
from voiceapp.tenants.selectors import llm_endpoint_list
from voiceapp.tenants.services import (
    API_KEY_MAX_CHARS,
    llm_endpoint_check,
    llm_endpoint_create,
    llm_endpoint_delete,
    llm_endpoint_update,
)


class LLMEndpointSerializer(serializers.ModelSerializer):
    # Declared here so their rules and messages come from the services alone.
    base_url = serializers.CharField(max_length=500)
    timeout_s = serializers.FloatField(required=False)
    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=API_KEY_MAX_CHARS,
        help_text="Write-only. Omit to keep the stored key; an empty string removes it.",
    )

    class Meta:
        model = LLMEndpoint
        fields = [
            "id",
            "name",
            "base_url",
            "model",
            "api_key",
            "has_api_key",
            "api_key_hint",
            "timeout_s",
            "is_default",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "has_api_key", "api_key_hint", "created_at", "updated_at"]
        # Validation (URL scheme, timeout range, unique name) runs in the services.
        validators: list[Any] = []

    def create(self, validated_data: dict[str, Any]) -> LLMEndpoint:
        return llm_endpoint_create(org=self.context["org"], **validated_data)

    def update(self, instance: LLMEndpoint, validated_data: dict[str, Any]) -> LLMEndpoint:
        return llm_endpoint_update(endpoint=instance, **validated_data)


EndpointCheckSerializer = inline_serializer(
    "EndpointCheck",
    {
        "ok": serializers.BooleanField(),
        "first_token_ms": serializers.FloatField(allow_null=True),
        "total_ms": serializers.FloatField(allow_null=True),
        "reply": serializers.CharField(),
        "code": serializers.CharField(),
        "error": serializers.CharField(),
    },
)


class LLMEndpointViewSet(OrgModelViewSet):
    """The organization's OpenAI-compatible LLM endpoints."""

    serializer_class = LLMEndpointSerializer
    queryset = LLMEndpoint.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self) -> Any:
        return llm_endpoint_list(org=self.request.user.org)

    def perform_destroy(self, instance: LLMEndpoint) -> None:
        llm_endpoint_delete(endpoint=instance)

    @extend_schema(request=None, responses=EndpointCheckSerializer)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Stream a tiny completion and report the time to the first token, or the error."""
        return Response(asdict(llm_endpoint_check(endpoint=self.get_object())))
