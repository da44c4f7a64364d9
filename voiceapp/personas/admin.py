"""Admin for personas and voices. Staff who are not superusers see and edit only
the organization they currently act for (the one chosen in the dashboard)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from voiceapp.personas import server_tools
from voiceapp.personas.models import (
    MAX_FACTS_PER_PERSONA,
    Action,
    Persona,
    PersonaFact,
    PersonaTool,
    Voice,
)
from voiceapp.personas.services import (
    persona_fact_create,
    persona_fact_delete,
    persona_fact_update,
    voice_add,
    voices_sync,
)
from voiceapp.personas.voices import VoiceConfigError
from voiceapp.tenants.middleware import current_membership
from voiceapp.tenants.models import LLMEndpoint


def _acting_org_id(request: HttpRequest) -> int | None:
    membership = current_membership(request)
    return membership.org_id if membership else None


class PersonaFactFormSet(BaseInlineFormSet):
    default_error_messages = {
        "too_many_forms": "A persona can hold at most %(num)d facts. Merge related facts "
        "into one answer, or delete some.",
    }


class PersonaFactInline(admin.TabularInline):
    """The persona's knowledge. Only reachable through a persona the user may see."""

    model = PersonaFact
    formset = PersonaFactFormSet
    fields = ["question", "answer", "position"]
    extra = 1
    max_num = MAX_FACTS_PER_PERSONA
    verbose_name = "fact"
    verbose_name_plural = (
        "Knowledge: facts the agent answers from (when none matches, it says it does not "
        "know, and offers to take a message when that action is on)"
    )

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "answer":
            kwargs["widget"] = forms.Textarea(attrs={"rows": 2, "cols": 60})
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        # Refuse more than the cap with a form error instead of dropping extra rows.
        return super().get_formset(request, obj, validate_max=True, **kwargs)


class PersonaToolAdminForm(forms.ModelForm):
    class Meta:
        model = PersonaTool
        fields = ["name", "description", "parameters", "url", "timeout_ms", "enabled"]

    def clean_url(self) -> str:
        return server_tools.clean_url(self.cleaned_data.get("url", ""))

    def clean_parameters(self) -> dict[str, Any]:
        return server_tools.clean_parameters(self.cleaned_data.get("parameters"))


class PersonaToolInline(admin.TabularInline):
    """The persona's server tools. They are added in the dashboard or the API, where
    the signing secret is shown once; here they can be changed, switched off or
    deleted (headers stay as stored)."""

    model = PersonaTool
    form = PersonaToolAdminForm
    fields = ["name", "description", "parameters", "url", "timeout_ms", "enabled"]
    extra = 0
    verbose_name = "server tool"
    verbose_name_plural = (
        "Server tools (add them in the dashboard or the API, where the signing secret "
        "is shown once)"
    )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class PersonaAdminForm(forms.ModelForm):
    actions = forms.MultipleChoiceField(
        choices=Action.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="What the agent may do during a call besides talking.",
    )
    handoff_url = forms.URLField(
        assume_scheme="https",
        required=False,
        max_length=500,
        label="Handoff link",
        help_text=Persona._meta.get_field("handoff_url").help_text,
    )

    class Meta:
        model = Persona
        fields = ["actions", "handoff_url"]  # the rest come from the admin's fieldsets

    def clean_actions(self) -> list[str]:
        return list(self.cleaned_data.get("actions") or [])


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    form = PersonaAdminForm
    inlines = [PersonaFactInline, PersonaToolInline]
    list_display = ["name", "slug", "org", "voice", "llm_backend", "is_active", "updated_at"]
    list_filter = ["is_active", "llm_backend", "agent_speaks_first", "language", "voice"]
    search_fields = ["name", "slug", "instructions", "greeting"]
    prepopulated_fields = {"slug": ["name"]}
    fieldsets = (
        (None, {"fields": ("org", "name", "slug", "is_active")}),
        ("Conversation", {"fields": ("instructions", "greeting", "agent_speaks_first")}),
        ("Voice and language", {"fields": ("voice", "language", "asr_model")}),
        (
            "Language model",
            {
                "fields": (
                    "llm_endpoint",
                    "llm_backend",
                    "llm_model",
                    "temperature",
                    "max_reply_tokens",
                    "general_questions",
                )
            },
        ),
        (
            "Turn-taking",
            {"fields": ("vad_threshold", "end_of_turn_silence_ms", "interruptions_enabled")},
        ),
        ("Limits", {"fields": ("idle_timeout_s", "max_call_duration_s", "allowed_origins")}),
        (
            "Actions",
            {
                "fields": (
                    "actions",
                    "handoff_text",
                    "handoff_url",
                    "transfer_to",
                    "voicemail_message",
                )
            },
        ),
        (
            "Call recording",
            {"fields": ("record_calls", "recording_notice", "recording_retention_days")},
        ),
        ("After each call", {"fields": ("analysis_fields", "success_criterion")}),
    )

    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        filters = list(super().get_list_filter(request))
        return (["org", *filters]) if request.user.is_superuser else filters

    def get_queryset(self, request: HttpRequest) -> QuerySet[Persona]:
        personas = super().get_queryset(request).select_related("org", "voice")
        if request.user.is_superuser:
            return personas
        return personas.filter(org_id=_acting_org_id(request))

    def get_exclude(self, request: HttpRequest, obj: Persona | None = None) -> list[str]:
        return [] if request.user.is_superuser else ["org"]

    def get_fieldsets(self, request: HttpRequest, obj: Persona | None = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if request.user.is_superuser:
            return fieldsets
        first = dict(fieldsets[0][1])
        first["fields"] = tuple(f for f in first["fields"] if f != "org")
        return ((fieldsets[0][0], first), *fieldsets[1:])

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "llm_endpoint" and not request.user.is_superuser:
            kwargs["queryset"] = LLMEndpoint.objects.filter(org_id=_acting_org_id(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request: HttpRequest, obj: Persona | None = None, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, **kwargs)

        class SameOrgEndpointForm(form):  # type: ignore[misc,valid-type]
            def clean(self) -> dict[str, Any]:
                data: dict[str, Any] = super().clean()
                endpoint, org = data.get("llm_endpoint"), data.get("org")
                if endpoint is not None and org is not None and endpoint.org_id != org.pk:
                    self.add_error("llm_endpoint", "Choose one of this organization's endpoints.")
                return data

        return SameOrgEndpointForm

    def save_model(self, request: HttpRequest, obj: Persona, form: Any, change: bool) -> None:
        if not request.user.is_superuser:
            org_id = _acting_org_id(request)
            if org_id is None:
                raise PermissionError("You act for no organization.")
            obj.org_id = org_id
        super().save_model(request, obj, form, change)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not PersonaFact:
            super().save_formset(request, form, formset, change)
            return
        # Facts are written through the services, like the dashboard and the API do.
        formset.save(commit=False)
        for fact in formset.deleted_objects:
            persona_fact_delete(fact=fact)
        for fact, _ in formset.changed_objects:
            persona_fact_update(
                fact=fact, question=fact.question, answer=fact.answer, position=fact.position
            )
        for fact in formset.new_objects:
            persona_fact_create(
                persona=form.instance,
                question=fact.question,
                answer=fact.answer,
                position=fact.position or None,
            )

    def has_add_permission(self, request: HttpRequest) -> bool:
        if not request.user.is_superuser and _acting_org_id(request) is None:
            return False
        return super().has_add_permission(request)


@admin.register(Voice)
class VoiceAdmin(admin.ModelAdmin):
    list_display = [
        "voice_id",
        "name",
        "language",
        "quality",
        "sample_rate",
        "source",
        "is_available",
    ]
    list_filter = ["language", "quality", "source", "is_available"]
    search_fields = ["voice_id", "name", "language"]
    readonly_fields = [
        "voice_id",
        "model_path",
        "sample_rate",
        "source",
        "discovered_at",
        "preview_path",
        "preview_generated_at",
    ]
    actions = ["rescan"]

    change_list_template = "admin/personas/voice/change_list.html"

    def get_urls(self) -> list[Any]:
        upload = path(
            "upload/",
            self.admin_site.admin_view(self.upload_view),
            name="personas_voice_upload",
        )
        return [upload, *super().get_urls()]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Add a Piper voice from an uploaded ``.onnx`` and ``.onnx.json`` pair.
        Superusers only: a voice is a file on the server, shared by every organization."""
        if not request.user.is_superuser:
            raise PermissionDenied
        form = VoiceUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                voice = voice_upload(
                    model=form.cleaned_data["model"], config=form.cleaned_data["config"]
                )
            except VoiceConfigError as exc:
                form.add_error(None, str(exc))
            else:
                self.message_user(
                    request,
                    f"Added {voice.voice_id} ({voice.language}, {voice.sample_rate} Hz).",
                    messages.SUCCESS,
                )
                return redirect("admin:personas_voice_changelist")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Add a Piper voice",
            "form": form,
        }
        return TemplateResponse(request, "admin/personas/voice/upload.html", context)

    @admin.action(description="Rescan installed voices")
    def rescan(self, request: HttpRequest, queryset: QuerySet[Voice]) -> None:
        result = voices_sync()
        self.message_user(
            request,
            f"{len(result.created)} new, {len(result.updated)} updated, "
            f"{len(result.missing)} no longer installed.",
            messages.SUCCESS,
        )
        for problem in result.problems:
            self.message_user(request, problem, messages.WARNING)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # voices are discovered from files; new ones come through upload_view


class VoiceUploadForm(forms.Form):
    model = forms.FileField(help_text="NAME.onnx: the Piper model (NAME becomes the voice id).")
    config = forms.FileField(help_text="NAME.onnx.json: its config, from the same voice.")

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        model, config = data.get("model"), data.get("config")
        if model is not None and not model.name.endswith(".onnx"):
            self.add_error("model", "Choose the voice's .onnx file.")
        elif model is not None and config is not None and config.name != model.name + ".json":
            self.add_error("config", f"Choose {model.name}.json, the config of that model.")
        return data


def voice_upload(*, model: UploadedFile, config: UploadedFile) -> Voice:
    """Write an uploaded pair to a scratch folder under its own names, then add it."""
    with tempfile.TemporaryDirectory(prefix="voice-upload-") as scratch:
        model_path = Path(scratch) / Path(str(model.name)).name
        config_path = model_path.with_name(model_path.name + ".json")
        for upload, target in ((model, model_path), (config, config_path)):
            with target.open("wb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
        return voice_add(model_path=model_path, config_path=config_path)
