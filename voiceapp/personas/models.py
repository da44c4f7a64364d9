from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from voiceapp.tenants.models import Organization
from voiceapp.tenants.origins import origins_normalize


class Voice(models.Model):
    """A Piper voice found on this installation (a package or the models directory)."""

    class Source(models.TextChoices):
        PACKAGE = "package", "Installed package"
        DIRECTORY = "directory", "Models directory"

    voice_id = models.CharField(max_length=120, unique=True)
    name = models.CharField(max_length=120)
    language = models.CharField(max_length=20)
    quality = models.CharField(max_length=20, blank=True)
    sample_rate = models.PositiveIntegerField()
    model_path = models.CharField(max_length=500)
    source = models.CharField(max_length=20, choices=Source.choices)
    is_available = models.BooleanField(default=True)
    preview_path = models.CharField(max_length=500, blank=True)
    preview_generated_at = models.DateTimeField(null=True, blank=True)
    discovered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["language", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.language}, {self.quality or 'n/a'})"


class LLMBackend(models.TextChoices):
    LOCAL = "local", "Local (llama.cpp)"
    HTTP = "http", "OpenAI-compatible HTTP endpoint"


def validate_slug_not_reserved(value: str) -> None:
    if value in {"new", "edit", "delete"}:
        raise ValidationError(f"“{value}” is reserved; choose another slug.")


MAX_ANALYSIS_FIELDS = 20


def validate_analysis_fields(value: object) -> None:
    """A JSON schema of an object whose properties are the fields a call's analysis
    fills in (names of letters, digits and _; each a schema of its own)."""
    if value in ({}, None):
        return
    if not isinstance(value, dict) or not isinstance(value.get("properties"), dict):
        raise ValidationError(
            'Give a JSON schema of an object: {"type": "object", "properties": {...}}.'
        )
    properties = value["properties"]
    if len(properties) > MAX_ANALYSIS_FIELDS:
        raise ValidationError(f"Give at most {MAX_ANALYSIS_FIELDS} fields.")
    for name, schema in properties.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", str(name)):
            raise ValidationError(
                f"“{name}” is not a field name: use letters, digits and _ (up to 64)."
            )
        if not isinstance(schema, dict):
            raise ValidationError(f"The field “{name}” needs a schema (an object).")


class ASRModel(models.TextChoices):
    """The packaged Whisper models (voiceapp.engine.asr.ASR_MODELS)."""

    TINY_EN = "tiny.en", "Whisper tiny.en (fastest)"
    BASE = "base", "Whisper base (more accurate, slower)"


RECORDING_RETENTION_DAYS = 30  # a persona's default for how long call recordings are kept


class Action(models.TextChoices):
    """The built-in actions a persona can switch on (sessions/actions.py runs them)."""

    TAKE_MESSAGE = "take_message", "Take a message (name, callback number, message)"
    END_CALL = "end_call", "End the call when the caller is done"
    TRANSFER_CALL = "transfer_call", "Hand the caller to a person (says the handoff text)"
    PRESS_KEYS = "press_keys", "Press keys to answer automated phone menus (phone calls)"


_SIP_URI = re.compile(r"^sips?:[A-Za-z0-9._~+%!*'()-]+@[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
_E164 = re.compile(r"^\+[0-9]{6,15}$")


def _transfer_target_ok(target: str) -> bool:
    return bool(_SIP_URI.match(target) or _E164.match(target))


class Persona(models.Model):
    """An agent a business configures: what it says, how it sounds, how it takes turns."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="personas")
    name = models.CharField(max_length=80)
    slug = models.SlugField(max_length=60, validators=[validate_slug_not_reserved])
    instructions = models.TextField(
        max_length=20_000, help_text="The system prompt: who the agent is and how it behaves."
    )
    greeting = models.CharField(max_length=500, blank=True)
    agent_speaks_first = models.BooleanField(
        default=True, help_text="Speak the greeting as soon as the call connects."
    )
    voice = models.ForeignKey(Voice, on_delete=models.PROTECT, related_name="personas")
    llm_backend = models.CharField(
        "LLM backend", max_length=10, choices=LLMBackend.choices, default=LLMBackend.LOCAL
    )
    llm_model = models.CharField(
        "LLM model",
        max_length=200,
        blank=True,
        help_text="Model name; empty uses the deployment's default.",
    )
    temperature = models.FloatField(
        default=0.6,
        validators=[
            MinValueValidator(0.0, "Temperature must be between 0 and 2."),
            MaxValueValidator(2.0, "Temperature must be between 0 and 2."),
        ],
    )
    max_reply_tokens = models.PositiveIntegerField(
        "max tokens per reply",
        default=120,
        validators=[
            MinValueValidator(8, "Allow at least 8 tokens per reply."),
            MaxValueValidator(1024, "At most 1024 tokens per reply: long replies feel slow."),
        ],
    )
    language = models.CharField(max_length=10, default="en")
    general_questions = models.BooleanField(
        "answer general questions",
        default=False,
        help_text=(
            "Let the agent answer general knowledge: sums, history, science, geography. "
            "Off, the built-in model says it can't help with general questions, since it "
            "gets about half of them wrong. A persona on your own LLM answers them either way."
        ),
    )
    vad_threshold = models.FloatField(
        "VAD threshold",
        default=0.5,
        validators=[
            MinValueValidator(0.05, "The VAD threshold must be between 0.05 and 0.95."),
            MaxValueValidator(0.95, "The VAD threshold must be between 0.05 and 0.95."),
        ],
    )
    end_of_turn_silence_ms = models.PositiveIntegerField(
        "end-of-turn silence (ms)",
        default=500,
        validators=[
            MinValueValidator(100, "End-of-turn silence must be between 100 and 3000 ms."),
            MaxValueValidator(3000, "End-of-turn silence must be between 100 and 3000 ms."),
        ],
    )
    interruptions_enabled = models.BooleanField(
        default=True, help_text="Let the caller interrupt the agent by speaking."
    )
    idle_timeout_s = models.PositiveIntegerField(
        "idle timeout (s)",
        default=60,
        validators=[
            MinValueValidator(5, "The idle timeout must be between 5 and 3600 seconds."),
            MaxValueValidator(3600, "The idle timeout must be between 5 and 3600 seconds."),
        ],
    )
    max_call_duration_s = models.PositiveIntegerField(
        "max call duration (s)",
        default=600,
        validators=[
            MinValueValidator(30, "The maximum call duration must be between 30 s and 4 h."),
            MaxValueValidator(14_400, "The maximum call duration must be between 30 s and 4 h."),
        ],
    )
    allowed_origins = models.JSONField(
        default=list,
        blank=True,
        help_text="Origins the widget may call this persona from, in addition to the key's.",
    )
    is_active = models.BooleanField("active", default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # Bring your own LLM: this persona's endpoint; empty uses the org's default endpoint,
    # and without one the embedded model (or `llm_backend`). Same org: checked in services.
    llm_endpoint = models.ForeignKey(
        "tenants.LLMEndpoint",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="personas",
        verbose_name="LLM endpoint",
    )
    asr_model = models.CharField(
        "speech recognition model",
        max_length=20,
        choices=ASRModel.choices,
        default=ASRModel.TINY_EN,
        help_text="Whisper base hears more words right and takes longer per turn than tiny.en.",
    )
    record_calls = models.BooleanField(
        default=False,
        help_text="Keep the audio of each call (caller and agent) to listen to on the call's "
        "page. Many places require telling callers: say so in the greeting or the notice below.",
    )
    recording_notice = models.CharField(
        max_length=300,
        blank=True,
        help_text="Spoken at the start of every recorded call, before the greeting "
        "(for example “This call is recorded.”). Empty: nothing is added.",
    )
    recording_retention_days = models.PositiveIntegerField(
        "keep recordings (days)",
        default=RECORDING_RETENTION_DAYS,
        validators=[
            MinValueValidator(1, "Keep recordings between 1 and 3650 days."),
            MaxValueValidator(3650, "Keep recordings between 1 and 3650 days."),
        ],
        help_text="Recordings are deleted this many days after the call (or with the call).",
    )
    actions = models.JSONField(
        default=list,
        blank=True,
        help_text="Built-in actions the agent may take during a call. With “take a message” "
        "on, a question the agent cannot answer is met with an offer to take one.",
    )

    handoff_text = models.CharField(
        max_length=300,
        blank=True,
        help_text="What the agent says when a caller asks for a person, for example “Please "
        "call us on 555 0100 and ask for Sam.” Needed with “hand the caller to a person” on.",
    )
    analysis_fields = models.JSONField(
        "fields to note after each call",
        default=dict,
        blank=True,
        validators=[validate_analysis_fields],
        help_text="A JSON schema of what each call's record should hold, filled in after the "
        'call, e.g. {"type": "object", "properties": {"callback_number": {"type": "string"}, '
        '"reason": {"type": "string", "description": "why they called"}}}.',
    )
    success_criterion = models.CharField(
        "a successful call",
        max_length=300,
        blank=True,
        help_text="One sentence, e.g. “The caller booked an appointment.” Each call is marked "
        "as meeting it or not, after the call. Empty: no verdict.",
    )
    handoff_url = models.URLField(
        "handoff link",
        max_length=500,
        blank=True,
        help_text="A page the call widget links to with the handoff text (a contact form, "
        "a booking page). https only. Optional.",
    )
    transfer_to = models.CharField(
        "phone transfer to",
        max_length=200,
        blank=True,
        help_text="On a phone call, where a caller who asks for a person is transferred "
        "(a SIP REFER) after the handoff text: a number (+15550100) or a SIP URI "
        "(sip:front-desk@pbx.example.com). Empty: the agent only says the handoff text.",
    )
    voicemail_message = models.CharField(
        max_length=500,
        blank=True,
        help_text="On an outbound phone call that reaches voicemail: what the agent says "
        "after the beep, then it hangs up. Empty: it hangs up without a message.",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["org", "slug"], name="persona_unique_slug_per_org")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.agent_speaks_first and not self.greeting.strip():
            raise ValidationError({"greeting": "A greeting is needed when the agent speaks first."})
        if not isinstance(self.allowed_origins, list):
            raise ValidationError({"allowed_origins": "Give a list of origins."})
        try:
            self.allowed_origins = origins_normalize([str(o) for o in self.allowed_origins])
        except ValidationError as exc:
            raise ValidationError({"allowed_origins": exc.messages}) from exc
        if not isinstance(self.actions, list) or any(a not in Action.values for a in self.actions):
            known = ", ".join(Action.values)
            raise ValidationError({"actions": f"Give a list of actions out of: {known}."})
        self.actions = [a for a in Action.values if a in self.actions]  # known order, once each
        self.handoff_text = self.handoff_text.strip()
        if Action.TRANSFER_CALL in self.actions and not self.handoff_text:
            raise ValidationError(
                {
                    "handoff_text": "Write what a caller who asks for a person hears (a number "
                    "to call, who to ask for), or switch “hand the caller to a person” off."
                }
            )
        if self.handoff_url and not self.handoff_url.startswith("https://"):
            raise ValidationError({"handoff_url": "Give an https:// link."})
        self.transfer_to = self.transfer_to.strip()
        if self.transfer_to and not _transfer_target_ok(self.transfer_to):
            raise ValidationError(
                {
                    "transfer_to": "Give a number in international form (+15550100) or a "
                    "SIP URI (sip:user@host)."
                }
            )
        if self.voice_id and not Voice.objects.filter(pk=self.voice_id, is_available=True).exists():
            raise ValidationError({"voice": "This voice is not installed on this server."})


# --- Persona knowledge ------------------------------------------------------------

MAX_FACTS_PER_PERSONA = 200
FACT_QUESTION_MAX_CHARS = 300
FACT_ANSWER_MAX_CHARS = 1000


class PersonaFact(models.Model):
    """One thing the agent knows about the business: an answer, and optionally how a
    caller might ask for it. The call's retriever picks the ones that match a turn."""

    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="facts")
    question = models.CharField(
        max_length=FACT_QUESTION_MAX_CHARS,
        blank=True,
        help_text="How a caller might ask, e.g. “When are you open?” (optional).",
    )
    answer = models.CharField(
        max_length=FACT_ANSWER_MAX_CHARS,
        error_messages={"blank": "Write the answer the agent should give."},
        help_text="What the agent should know, e.g. “We are open 9 to 5, Monday to Friday.”",
    )
    position = models.PositiveIntegerField(default=0, help_text="Lower numbers come first.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "id"]
        indexes = [models.Index(fields=["persona", "position"], name="fact_persona_position")]

    def __str__(self) -> str:
        text = self.question or self.answer
        return text if len(text) <= 60 else f"{text[:59]}…"


MAX_TOOLS_PER_PERSONA = 20
TOOL_TIMEOUT_MS_MIN = 500
TOOL_TIMEOUT_MS_MAX = 7000  # under the session's 8 s action timeout, so its error is the tool's
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"


class PersonaTool(models.Model):
    """A server tool: a function the persona's model may call, which the server runs
    by POSTing the call to the business's URL (voiceapp/personas/server_tools.py).

    Headers (an API key, say) and the signing secret are stored encrypted
    (`voiceapp.tenants.crypto`), as LLM endpoint keys and webhook secrets are."""

    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(
        max_length=64,
        validators=[
            RegexValidator(
                TOOL_NAME_PATTERN,
                "Use 1 to 64 letters, digits, _ or -, starting with a letter or _.",
            )
        ],
        help_text="What the model calls it, e.g. “lookup_order”: letters, digits, _ and -.",
    )
    description = models.TextField(
        max_length=1000,
        help_text="When the model should call it, e.g. “Look up an order by its number.”",
    )
    parameters = models.JSONField(
        default=dict,
        blank=True,
        help_text="A JSON schema of its arguments (an object), e.g. "
        '{"type": "object", "properties": {"order_number": {"type": "string"}}}.',
    )
    url = models.CharField(
        "URL", max_length=500, help_text="Where the call is POSTed (https), signed."
    )
    timeout_ms = models.PositiveIntegerField(
        "timeout (ms)",
        default=3000,
        validators=[
            MinValueValidator(TOOL_TIMEOUT_MS_MIN, "Give a timeout of 500 to 7000 ms."),
            MaxValueValidator(TOOL_TIMEOUT_MS_MAX, "Give a timeout of 500 to 7000 ms."),
        ],
        help_text="A slower answer is an error: the agent apologises and the call goes on.",
    )
    headers_encrypted = models.TextField(blank=True, editable=False)
    secret_encrypted = models.TextField(editable=False)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["persona", "name"], name="persona_tool_unique_name")
        ]

    def __str__(self) -> str:
        return self.name
