from __future__ import annotations

from typing import Any

from allauth.account.forms import SignupForm as AllauthSignupForm
from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from voiceapp.personas.models import ASRModel, Persona, Voice
from voiceapp.tenants.models import Role, User
from voiceapp.tenants.services import organization_create, origins_normalize


class OriginsField(forms.CharField):
    """One origin per line (or comma-separated) in, a normalized list out."""

    widget = forms.Textarea(attrs={"rows": 3, "placeholder": "https://www.example.com"})

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value) or ""
        return [part for part in text.replace(",", "\n").split() if part]

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
            organization_create(name=self.cleaned_data["organization_name"], owner=user)
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

    def clean_asr_model(self) -> str:
        return str(self.cleaned_data.get("asr_model") or ASRModel.TINY_EN)

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
            "vad_threshold",
            "end_of_turn_silence_ms",
            "interruptions_enabled",
            "idle_timeout_s",
            "max_call_duration_s",
            "allowed_origins",
            "asr_model",
        ]
        widgets = {
            "instructions": forms.Textarea(attrs={"rows": 6}),
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["voice"].queryset = Voice.objects.filter(is_available=True)
        self.fields["slug"].required = False


class SecretKeyForm(forms.Form):
    name = forms.CharField(max_length=80, label="Key name", help_text="Where it will be used.")


class PublishableKeyForm(forms.Form):
    name = forms.CharField(max_length=80, label="Key name", help_text="The site it is for.")
    allowed_origins = OriginsField(
        label="Allowed origins", help_text="The widget only works on these sites. One per line."
    )


class InvitationForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)
