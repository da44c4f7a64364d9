"""Webhook endpoints of an organization and the log of every message sent to them."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from voiceapp.tenants.models import Organization


class EventType(models.TextChoices):
    CALL_STARTED = "call.started", "A call started"
    CALL_ENDED = "call.ended", "A call ended (transcript and latency included)"
    USAGE_THRESHOLD = "usage.threshold", "Usage crossed a threshold of the plan"
    MESSAGE_TAKEN = "message.taken", "A caller left a message with the agent"
    CALL_TRANSFER_REQUESTED = (
        "call.transfer_requested",
        "A caller asked for a person and the agent handed them over",
    )
    CALL_ANALYZED = (
        "call.analyzed",
        "A call's summary, fields and success verdict were written",
    )
    CALL_PROGRESS = (
        "call.progress",
        "An outbound phone call rang, was answered (by whom), was busy, not answered or failed",
    )


class WebhookEndpoint(models.Model):
    """A URL of the organization's that receives the events it subscribed to.

    The signing secret (``whsec_...``) is shown once at creation and stored
    encrypted (`voiceapp.tenants.crypto`), as LLM endpoint API keys are."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField("URL", max_length=500)
    events = models.JSONField(default=list, help_text="The event types sent to this URL.")
    secret_encrypted = models.TextField(editable=False)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One message to one endpoint, with every attempt's outcome. A retry or a
    resend sends the same `payload` under the same `webhook_id`."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_type = models.CharField(max_length=40, choices=EventType.choices)
    webhook_id = models.CharField("webhook-id", max_length=64)
    # The exact body sent (JSON text), so every attempt signs and sends the same bytes.
    payload = models.TextField()
    attempts = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    last_response_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "webhook_id"], name="webhook_delivery_unique_message"
            )
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event_type} {self.webhook_id} to {self.endpoint_id}"
