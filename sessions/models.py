from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization, PublishableKey, SecretKey, User


class ClientSecret(models.Model):
    """A short-lived, single-use credential (``ek_...``) for one call with one persona.

    Browsers cannot keep a secret key; they get one of these from the widget's
    session-start endpoint (or a customer's server makes one with its secret key)."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="client_secrets")
    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="client_secrets")
    value_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    origin = models.CharField(max_length=200, blank=True)
    session_config = models.JSONField(default=dict, blank=True)
    # Who minted it, exactly one of these: it dies with that key, and a call it
    # opened may be resumed only by the same key (or member).
    secret_key = models.ForeignKey(
        SecretKey, null=True, blank=True, on_delete=models.CASCADE, related_name="client_secrets"
    )
    publishable_key = models.ForeignKey(
        PublishableKey,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="client_secrets",
    )
    created_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]

    def __str__(self) -> str:
        return f"client secret for {self.persona} until {self.expires_at:%H:%M:%S}"


class Call(models.Model):
    class Transport(models.TextChoices):
        WEBSOCKET = "websocket", "WebSocket"
        WEBRTC = "webrtc", "WebRTC"
        SIP = "sip", "Phone (SIP)"

    class EndReason(models.TextChoices):
        HANGUP = "hangup", "Caller hung up"
        MAX_DURATION = "max_duration", "Maximum duration reached"
        IDLE_TIMEOUT = "idle_timeout", "Idle timeout"
        ERROR = "error", "Error"
        LOST = "lost", "Connection lost"
        SERVER_SHUTDOWN = "server_shutdown", "Server shut down"
        REVOKED = "revoked", "Key revoked"
        QUOTA_EXHAUSTED = "quota_exhausted", "Included minutes used up"
        AGENT_HANGUP = "agent_hangup", "Agent ended the call"
        TRANSFERRED = "transferred", "Transferred to a person"
        VOICEMAIL = "voicemail", "Left a voicemail message"

    class Source(models.TextChoices):
        """Who placed the call, from the credential that started it."""

        WIDGET = "widget", "Widget"
        API = "api", "API"
        TEST = "test", "Dashboard test"
        PHONE = "phone", "Phone"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="calls")
    persona = models.ForeignKey(Persona, on_delete=models.SET_NULL, null=True, related_name="calls")
    persona_name = models.CharField(max_length=80)
    transport = models.CharField(max_length=10, choices=Transport.choices)
    client_info = models.JSONField(default=dict, blank=True)
    # Set once at the start from the call's grant: a widget call's publishable key and
    # the page origin it was checked against, an API call's secret key, or a member's
    # test call from the dashboard. Blank on calls recorded before these existed.
    source = models.CharField(max_length=10, choices=Source.choices, blank=True)
    origin = models.CharField(max_length=200, blank=True)
    caller_number = models.CharField(max_length=64, blank=True)  # phone calls: the From user
    # phone calls: where a transfer (SIP REFER) sent the caller, once it went through
    transferred_to = models.CharField(max_length=200, blank=True)
    key_name = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    end_reason = models.CharField(max_length=20, choices=EndReason.choices, blank=True)
    # What the call used so far, added up as it runs (billing/ reads them at the end).
    asr_seconds = models.FloatField(default=0.0)
    llm_input_tokens = models.PositiveIntegerField(default=0)
    llm_output_tokens = models.PositiveIntegerField(default=0)
    tts_characters = models.PositiveIntegerField(default=0)
    tool_calls = models.PositiveIntegerField(default=0, help_text="Actions the agent took.")

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["org", "-started_at"]),
            models.Index(fields=["ended_at", "last_seen_at"]),
        ]

    def __str__(self) -> str:
        return f"call {self.id} with {self.persona_name}"

    @property
    def is_live(self) -> bool:
        return self.ended_at is None


class CallerMessage(models.Model):
    """A message a caller left with the agent (the persona's take_message action),
    for the organization's inbox. It outlives its call's record (retention)."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="caller_messages")
    call = models.ForeignKey(
        Call, on_delete=models.SET_NULL, null=True, blank=True, related_name="caller_messages"
    )
    persona = models.ForeignKey(
        Persona, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    persona_name = models.CharField(max_length=80)
    name = models.CharField(max_length=120, blank=True)
    callback_number = models.CharField(max_length=40, blank=True)
    message = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["org", "read_at"]),
            models.Index(fields=["org", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"message from {self.name or 'a caller'}: {self.message[:40]}"


class CallItem(models.Model):
    """One transcript entry: what the user said or what the agent actually said."""

    class Role(models.TextChoices):
        USER = "user", "Caller"
        ASSISTANT = "assistant", "Agent"
        SYSTEM = "system", "System"
        TOOL = "tool", "Action"

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="items")
    item_id = models.CharField(max_length=64)
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField(blank=True)
    interrupted = models.BooleanField(default=False)
    at_s = models.FloatField(help_text="Seconds since the call started.")
    # An action's item (role tool): {"name", "arguments", "output", "ok", "ms"}.
    tool = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at_s", "pk"]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:60]}"


class CallTurn(models.Model):
    """The latency spans of one response, in milliseconds (null where a span did not happen)."""

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="turns")
    response_id = models.CharField(max_length=64)
    status = models.CharField(max_length=12)
    at_s = models.FloatField()
    v2v_ms = models.FloatField(null=True)
    endpoint_ms = models.FloatField(null=True)
    asr_ms = models.FloatField(null=True)
    llm_queue_ms = models.FloatField(null=True)
    llm_first_token_ms = models.FloatField(null=True)
    first_clause_ms = models.FloatField(null=True)
    tts_first_audio_ms = models.FloatField(null=True)
    tool_ms = models.FloatField(null=True)
    spans = models.JSONField(default=dict)

    class Meta:
        ordering = ["at_s", "pk"]

    def __str__(self) -> str:
        return f"turn {self.response_id}: {self.v2v_ms} ms"


class CallRecording(models.Model):
    """A call's audio: the caller on the left channel, the agent on the right, Ogg Opus."""

    call = models.OneToOneField(Call, on_delete=models.CASCADE, related_name="recording")
    file = models.FileField(upload_to="call-recordings/", max_length=200)
    duration_s = models.FloatField()
    size_bytes = models.PositiveBigIntegerField()
    # Where each transcript line starts in the audio (item id -> seconds).
    marks = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"recording of call {self.call_id} ({self.duration_s:.0f} s)"


class CallAnalysis(models.Model):
    """What was written about a call after it ended: a summary, the persona's fields
    (`Persona.analysis_fields`) and the verdict on its `success_criterion`."""

    class Method(models.TextChoices):
        RULES = "rules", "Built-in rules (embedded model)"
        LLM = "llm", "The organization's own LLM"

    call = models.OneToOneField(Call, on_delete=models.CASCADE, related_name="analysis")
    summary = models.TextField()
    fields = models.JSONField(default=dict, blank=True)
    success = models.BooleanField(null=True, blank=True)
    success_reason = models.CharField(max_length=500, blank=True)
    criterion = models.CharField(max_length=300, blank=True)  # as it was when analysed
    method = models.CharField(max_length=10, choices=Method.choices)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"analysis of call {self.call_id}"
