from __future__ import annotations

from datetime import date
from typing import Any

from allauth.account.forms import SignupForm as AllauthSignupForm
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.http import HttpRequest

from sessions.models import Call
from telephony.selectors import trunk_list
from voiceapp.knowledge.models import REFRESH_HOURS_CHOICES
from voiceapp.personas.models import (
    RECORDING_RETENTION_DAYS,
    Action,
    ASRModel,
    Persona,
    PersonaFact,
    Voice,
)
from voiceapp.personas.selectors import persona_list
from voiceapp.tenants.models import LLMEndpoint, Organization, Role, User
from voiceapp.tenants.onboarding import organization_onboard
from voiceapp.tenants.origins import origins_normalize
from webhooks.models import EventType


class OriginsField(forms.CharField):
    """One origin per line (or comma-separated) in, a normalized list out."""

    widget = forms.Textarea(attrs={"rows": 3, "placeholder": "https://www.example.com"})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        # One entry per line or comma: "not a url" is one bad entry, not three.
        text = super().to_python(value) or ""
        return [part.strip() for part in text.replace(",", "\n").splitlines() if part.strip()]

    def validate(self, value: Any) -> None:
        if self.required and not value:
            raise ValidationError(self.error_messages["required"], code="required")

    def clean(self, value: Any) -> list[str]:
        origins = super().clean(value)
        return origins_normalize(origins)


class SignupForm(AllauthSignupForm):
    organization_name = forms.CharField(
        max_length=120,
        required=False,
        label="Organization name",
        help_text="Your company or team. Leave it empty if you are joining a team by invitation.",
    )

    field_order = ["organization_name", "email", "password1", "password2"]

    def save(self, request: HttpRequest) -> User:
        user: User = super().save(request)
        if self.cleaned_data.get("organization_name", "").strip():
            organization_onboard(name=self.cleaned_data["organization_name"], owner=user)
        return user


class OrganizationForm(forms.Form):
    name = forms.CharField(max_length=120, label="Organization name")


class PersonaForm(forms.ModelForm):
    allowed_origins = OriginsField(
        required=False,
        label="Extra allowed origins",
        help_text="Sites that may start calls with this persona, besides the key's own. "
        "One per line.",
    )
    # Optional in the form (forms posted without it keep the default model).
    asr_model = forms.ChoiceField(
        choices=ASRModel.choices,
        required=False,
        initial=ASRModel.TINY_EN,
        label="Speech recognition model",
        help_text="Whisper base hears more words right; each turn takes longer to transcribe.",
    )

    actions = forms.MultipleChoiceField(
        choices=Action.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Actions",
        help_text="What the agent may do during a call besides talking. With “take a "
        "message” on, a question it cannot answer is met with an offer to take one; the "
        "messages arrive in Messages, by email and as a message.taken webhook. A caller "
        "handed to a person hears the handoff text below; the widget shows its link.",
    )

    handoff_url = forms.URLField(
        assume_scheme="https",
        required=False,
        max_length=500,
        label="Handoff link",
        help_text=Persona._meta.get_field("handoff_url").help_text,
    )

    def clean_asr_model(self) -> str:
        return str(self.cleaned_data.get("asr_model") or ASRModel.TINY_EN)

    def clean_actions(self) -> list[str]:
        return list(self.cleaned_data.get("actions") or [])

    def clean_analysis_fields(self) -> dict[str, Any]:
        return self.cleaned_data.get("analysis_fields") or {}  # empty: no fields

    def clean_recording_retention_days(self) -> int:
        days = self.cleaned_data.get("recording_retention_days")
        return int(days) if days is not None else RECORDING_RETENTION_DAYS

    class Meta:
        model = Persona
        fields = [
            "name",
            "slug",
            "is_active",
            "instructions",
            "greeting",
            "agent_speaks_first",
            "voice",
            "language",
            "llm_backend",
            "llm_model",
            "temperature",
            "max_reply_tokens",
            "general_questions",
            "vad_threshold",
            "end_of_turn_silence_ms",
            "interruptions_enabled",
            "idle_timeout_s",
            "max_call_duration_s",
            "allowed_origins",
            "llm_endpoint",
            "asr_model",
            "record_calls",
            "recording_notice",
            "recording_retention_days",
            "actions",
            "handoff_text",
            "handoff_url",
            "transfer_to",
            "voicemail_message",
            "analysis_fields",
            "success_criterion",
        ]
        widgets = {
            "instructions": forms.Textarea(attrs={"rows": 6}),
            "analysis_fields": forms.Textarea(attrs={"rows": 4, "class": "mono"}),
            "temperature": forms.NumberInput(attrs={"step": "0.1", "min": "0", "max": "2"}),
            "vad_threshold": forms.NumberInput(
                attrs={"step": "0.05", "min": "0.05", "max": "0.95"}
            ),
        }
        help_texts = {
            "slug": "Used in URLs and by API clients (model=…). Letters, digits and dashes.",
            "end_of_turn_silence_ms": "How long the caller is silent before the agent answers.",
            "vad_threshold": "Speech probability that counts as speech (higher: less sensitive).",
            "max_reply_tokens": "Caps how long one spoken reply can get.",
        }

    def __init__(self, *args: Any, org: Organization, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        voices = Voice.objects.filter(is_available=True)
        self.fields["voice"].queryset = voices
        if self.instance.voice_id is None and "voice" not in self.initial:
            # A new persona starts on the deployment's default voice, not on "---------".
            default = voices.filter(voice_id=settings.DEFAULT_VOICE).first() or voices.first()
            self.initial["voice"] = default.pk if default else None
        self.fields["slug"].required = False
        # Optional in the form (forms posted without it keep the default).
        self.fields["recording_retention_days"].required = False
        endpoints = LLMEndpoint.objects.filter(org=org)
        default = endpoints.filter(is_default=True).first()
        endpoint = self.fields["llm_endpoint"]
        endpoint.queryset = endpoints
        endpoint.empty_label = (
            f"Organization default ({default.name})"
            if default
            else "Organization default (the embedded demo model, SmolLM2-135M)"
        )
        endpoint.help_text = (
            "Your own OpenAI-compatible server answers this persona's calls. "
            "Endpoints are managed under Language models."
        )


class DocumentUploadForm(forms.Form):
    prefix = "upload"  # beside DocumentURLForm on the persona page
    file = forms.FileField(
        help_text="PDF, Word (.docx), Markdown, HTML or plain text, up to 10 MB.",
        error_messages={"required": "Choose a file to upload."},
        widget=forms.ClearableFileInput(
            attrs={"accept": ".pdf,.docx,.md,.markdown,.html,.htm,.txt"}
        ),
    )
    title = forms.CharField(
        max_length=200, required=False, help_text="Optional: the file's name is used otherwise."
    )


class DocumentURLForm(forms.Form):
    prefix = "page"
    url = forms.CharField(
        label="URL",
        max_length=500,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/faq"}),
        error_messages={"required": "Give the address of a web page."},
    )
    title = forms.CharField(max_length=200, required=False)
    refresh_hours = forms.TypedChoiceField(
        label="Fetch again",
        coerce=int,
        choices=REFRESH_HOURS_CHOICES,
        initial=24,
        help_text="The page is fetched again on this schedule, so the agent keeps up with it.",
    )


class PersonaFactForm(forms.ModelForm):
    class Meta:
        model = PersonaFact
        fields = ["question", "answer"]
        labels = {"question": "Question (optional)"}
        widgets = {
            "question": forms.TextInput(attrs={"placeholder": "When are you open?"}),
            "answer": forms.Textarea(
                attrs={"rows": 3, "placeholder": "We are open Monday to Friday, 9 am to 5 pm."}
            ),
        }
        help_texts = {
            "question": "How a caller might ask for this. Helps the agent find the fact.",
            "answer": (
                "Write it as a spoken sentence: with the built-in model the agent says it "
                "as written. Up to 1000 characters."
            ),
        }
        error_messages = {"answer": {"required": "Write the answer the agent should give."}}


class SecretKeyForm(forms.Form):
    name = forms.CharField(max_length=80, label="Key name", help_text="Where it will be used.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Both key forms are on one page: ids of their own keep each label on its field.
        kwargs.setdefault("auto_id", "id_secret_%s")
        super().__init__(*args, **kwargs)


class PublishableKeyForm(forms.Form):
    name = forms.CharField(max_length=80, label="Key name", help_text="The site it is for.")
    allowed_origins = OriginsField(
        label="Allowed origins", help_text="The widget only works on these sites. One per line."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_publishable_%s")
        super().__init__(*args, **kwargs)


class InvitationForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class LLMEndpointForm(forms.Form):
    """Values are validated by the services (the same messages as the API)."""

    name = forms.CharField(max_length=80, help_text="To recognise it, e.g. “vLLM on gpu-1”.")
    base_url = forms.CharField(
        max_length=500,
        label="Base URL",
        widget=forms.TextInput(attrs={"placeholder": "http://10.0.0.5:8000/v1"}),
        help_text="The OpenAI-compatible API root, usually ending in /v1.",
    )
    model = forms.CharField(
        max_length=200, help_text="The model name the server expects, e.g. llama3.1:8b."
    )
    api_key = forms.CharField(
        required=False,
        label="API key",
        max_length=4096,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave empty if the server needs none.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored API key")
    timeout_s = forms.FloatField(
        label="Timeout (s)",
        initial=10.0,
        widget=forms.NumberInput(attrs={"step": "0.5", "min": "1", "max": "120"}),
        help_text="How long to wait to connect, for the first token and for each next one.",
    )
    is_default = forms.BooleanField(
        required=False,
        label="Organization default",
        help_text="Personas without an endpoint of their own use this one.",
    )

    def __init__(
        self, data: Any = None, *, endpoint: LLMEndpoint | None = None, **kwargs: Any
    ) -> None:
        if endpoint is not None and data is None:
            kwargs["initial"] = {
                "name": endpoint.name,
                "base_url": endpoint.base_url,
                "model": endpoint.model,
                "timeout_s": endpoint.timeout_s,
                "is_default": endpoint.is_default,
            }
        super().__init__(data, **kwargs)
        if endpoint is None or not endpoint.has_api_key:
            del self.fields["clear_api_key"]
        else:
            hint = f" ending in {endpoint.api_key_hint}" if endpoint.api_key_hint else ""
            self.fields[
                "api_key"
            ].help_text = (
                f"A key{hint} is stored. Enter a new one to replace it; leave empty to keep it."
            )

    def service_fields(self) -> dict[str, Any]:
        """The cleaned values as the services take them (`api_key` None keeps the key)."""
        data = dict(self.cleaned_data)
        clear = data.pop("clear_api_key", False)
        api_key = data.pop("api_key", "")
        data["api_key"] = "" if clear else (api_key or None)
        return data


class WebhookEndpointForm(forms.Form):
    # The URL's checks (scheme, public address) run in webhooks.services.
    url = forms.CharField(
        max_length=500,
        label="URL",
        widget=forms.URLInput(attrs={"placeholder": "https://api.example.com/hooks/voice"}),
        help_text="Receives a signed POST for each event. It must be reachable from the "
        "internet (private and loopback addresses are refused).",
    )
    events = forms.MultipleChoiceField(
        choices=EventType.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[EventType.CALL_ENDED],
        label="Events",
    )


FIRST_DAY, LAST_DAY = date(2000, 1, 1), date(2999, 12, 31)
DAY_HELP = f"Give a date like 2026-01-31, from {FIRST_DAY} to {LAST_DAY}."


class DayField(forms.DateField):
    """A day written YYYY-MM-DD, within the years calls can have."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            required=False,
            input_formats=["%Y-%m-%d"],
            error_messages={"invalid": DAY_HELP},
            validators=[
                MinValueValidator(FIRST_DAY, message=DAY_HELP),
                MaxValueValidator(LAST_DAY, message=DAY_HELP),
            ],
            widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
            **kwargs,
        )


class CallFilterForm(forms.Form):
    """The calls list's filters, read from the query string; all optional.
    ``start``/``end`` are UTC days, both included."""

    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search transcripts",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Words said in the call"}),
    )
    persona = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    end_reason = forms.ChoiceField(
        required=False, label="Ended", choices=[("", "Any ending"), *Call.EndReason.choices]
    )
    start = DayField(label="From")
    end = DayField(label="To")

    def __init__(self, *args: Any, personas: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        persona = self.fields["persona"]
        assert isinstance(persona, forms.TypedChoiceField)
        persona.choices = [("", "All personas"), *((p.pk, p.name) for p in personas)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if start and end and end < start:
            self.add_error("end", "The end date is before the start date.")
        return data

    def active(self) -> dict[str, str]:
        """The filters in use, as query parameters (for the page links)."""
        return {name: str(self.data[name]) for name in self.fields if self.data.get(name)}


class PersonaToolForm(forms.Form):
    """A server tool of a persona (voiceapp/personas/server_tools.py checks it)."""

    name = forms.CharField(max_length=64, help_text="What the model calls it, e.g. “lookup_order”.")
    description = forms.CharField(
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="When the model should call it, e.g. “Look up an order by its number.”",
    )
    parameters = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false"}),
        label="Parameters (JSON schema)",
        help_text='Its arguments, e.g. {"type": "object", "properties": {"order_number": '
        '{"type": "string"}}, "required": ["order_number"]}. Empty: no arguments.',
    )
    url = forms.CharField(
        max_length=500,
        label="URL",
        help_text="Each call is POSTed here as JSON, signed like our webhooks (https).",
    )
    timeout_ms = forms.IntegerField(
        min_value=500,
        max_value=7000,
        initial=3000,
        label="Timeout (ms)",
        help_text="A slower answer is an error: the agent apologises and the call goes on.",
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        help_text="Sent with every call, one “Name: value” per line (an API key, say). "
        "Stored encrypted and never shown again; leave empty to keep the current ones.",
    )
    clear_headers = forms.BooleanField(required=False, label="Remove the stored headers")
    enabled = forms.BooleanField(required=False, initial=True)


class ToolTestForm(forms.Form):
    arguments = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="The arguments of the test call, as JSON.",
    )

    def clean_arguments(self) -> dict[str, Any]:
        import json

        try:
            value = json.loads(self.cleaned_data["arguments"])
        except ValueError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc}.") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("Give the arguments as a JSON object.")
        return value


class SipTrunkForm(forms.Form):
    # Addresses, digest and names are checked by telephony.services.
    name = forms.CharField(max_length=100, widget=forms.TextInput(attrs={"placeholder": "Carrier"}))
    allowed_addresses = forms.CharField(
        required=False,
        label="Allowed addresses",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "203.0.113.7\n198.51.100.0/24"}),
        help_text="Where the trunk sends calls from: addresses or CIDR networks, one a line.",
    )
    username = forms.CharField(
        max_length=64,
        required=False,
        help_text="For digest authentication (a PBX registering no fixed address).",
    )
    password = forms.CharField(
        max_length=128, required=False, widget=forms.PasswordInput(render_value=False)
    )
    outbound_address = forms.CharField(
        max_length=200,
        required=False,
        label="Outbound address",
        widget=forms.TextInput(attrs={"placeholder": "sip.carrier.example:5060"}),
        help_text="Where outbound calls go (host or host:port). Empty: no outbound calls.",
    )
    caller_id = forms.CharField(
        max_length=40,
        required=False,
        label="Caller ID",
        help_text="The number outbound calls come from, if the carrier lets you set it.",
    )
    quiet_hours_start = forms.TimeField(
        required=False,
        label="Quiet hours from",
        widget=forms.TimeInput(attrs={"type": "time"}),
        help_text="No outbound calls from this time...",
    )
    quiet_hours_end = forms.TimeField(
        required=False,
        label="until",
        widget=forms.TimeInput(attrs={"type": "time"}),
        help_text="...to this one (it may run past midnight).",
    )
    time_zone = forms.CharField(
        max_length=64,
        required=False,
        initial="UTC",
        label="In the time zone",
        widget=forms.TextInput(attrs={"placeholder": "America/New_York"}),
        help_text="Of the people you call, as in the tz database.",
    )

    def clean_allowed_addresses(self) -> list[str]:
        return [a for a in self.cleaned_data["allowed_addresses"].split() if a]


class PhoneNumberForm(forms.Form):
    number = forms.CharField(
        max_length=60,
        widget=forms.TextInput(attrs={"placeholder": "+15550104477"}),
        help_text="In international form, or a SIP user name such as “sales”.",
    )
    persona = forms.TypedChoiceField(coerce=int, label="Answered by")
    trunk = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        label="Delivered by",
        help_text="Only this trunk may deliver its calls; “any” takes them from all.",
    )
    label = forms.CharField(max_length=100, required=False)

    def __init__(self, *args: Any, org: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["persona"].choices = [(p.pk, p.name) for p in persona_list(org=org)]
        self.fields["trunk"].choices = [("", "Any of our trunks")] + [
            (t.pk, t.name) for t in trunk_list(org=org)
        ]
