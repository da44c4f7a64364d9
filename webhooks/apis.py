"""JSON API for the organization's webhook endpoints (``/api/v1/webhooks/``).

The signing secret is in the answer to the POST that creates the endpoint, and
nowhere else.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from voiceapp.api.viewsets import OrgModelViewSet
from webhooks.models import EventType, WebhookEndpoint
from webhooks.selectors import webhook_endpoint_list
from webhooks.services import webhook_endpoint_create, webhook_endpoint_delete


class WebhookEndpointSerializer(serializers.ModelSerializer):
    events = serializers.ListField(child=serializers.ChoiceField(choices=EventType.choices))

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "enabled", "created_at"]
        read_only_fields = fields


class WebhookEndpointCreateSerializer(serializers.Serializer):
    # Checked by the service (scheme, public address, known events).
    url = serializers.CharField(max_length=500)
    events = serializers.ListField(
        child=serializers.CharField(max_length=40),
        help_text=f"Any of: {', '.join(EventType.values)}.",
    )


class WebhookEndpointCreatedSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(
        help_text="The whsec_ signing secret. Shown in this answer only: keep it now."
    )

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookEndpointViewSet(OrgModelViewSet):
    """The organization's webhook endpoints: create, list, read and delete."""

    serializer_class = WebhookEndpointSerializer
    queryset = WebhookEndpoint.objects.none()  # for the schema; requests use get_queryset
    http_method_names = ["get", "post", "delete", "head", "options"]

    def get_queryset(self) -> Any:
        return webhook_endpoint_list(org=self.request.user.org)

    @extend_schema(
        request=WebhookEndpointCreateSerializer,
        responses={201: WebhookEndpointCreatedSerializer},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        given = WebhookEndpointCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        endpoint, secret = webhook_endpoint_create(org=request.user.org, **given.validated_data)
        data = {**WebhookEndpointSerializer(endpoint).data, "secret": secret}
        return Response(data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: WebhookEndpoint) -> None:
        webhook_endpoint_delete(endpoint=instance)
