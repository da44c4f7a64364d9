from django.contrib import admin
from django.http import HttpRequest

from webhooks.models import WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "org", "enabled", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["url", "org__name"]
    readonly_fields = ["org", "url", "events", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the secret is made and shown by the dashboard or the API


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["webhook_id", "event_type", "endpoint", "status", "attempts", "created_at"]
    list_filter = ["status", "event_type"]
    search_fields = ["webhook_id"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
