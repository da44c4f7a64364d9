"""Admin for knowledge documents. Staff who are not superusers see only the
documents of the organization they act for; adding one uploads a file or a URL
through the same services as the dashboard, and it is processed the same way."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from voiceapp.personas.admin import _acting_org_id
from voiceapp.personas.models import Persona

from .extract import UnreadableDocument, detect_format
from .models import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS_PER_PERSONA,
    REFRESH_HOURS_CHOICES,
    KnowledgeDocument,
    KnowledgePassage,
)
from .services import (
    document_create_from_file,
    document_create_from_url,
    document_delete,
    document_refresh,
)


class DocumentAddForm(forms.ModelForm):
    file = forms.FileField(required=False, help_text="PDF, DOCX, Markdown, HTML or text.")
    page_url = forms.CharField(label="URL", required=False, max_length=500)
    refresh = forms.TypedChoiceField(
        label="Fetch again", coerce=int, choices=REFRESH_HOURS_CHOICES, initial=24
    )

    class Meta:
        model = KnowledgeDocument
        fields = ["persona", "title"]

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean()
        if bool(data.get("file")) == bool(data.get("page_url")):
            raise ValidationError("Give either a file or a URL.")
        upload = data.get("file")
        if upload is not None:
            if upload.size > MAX_DOCUMENT_BYTES:
                raise ValidationError(f"Upload at most {MAX_DOCUMENT_BYTES // 2**20} MB.")
            try:
                detect_format(upload.read(), name=upload.name or "")
            except UnreadableDocument as exc:
                raise ValidationError(str(exc)) from exc
            finally:
                upload.seek(0)
        persona = data.get("persona")
        if persona is not None and persona.documents.count() >= MAX_DOCUMENTS_PER_PERSONA:
            raise ValidationError(
                f"This persona holds {MAX_DOCUMENTS_PER_PERSONA} documents, the most it can."
            )
        return data


class PassageInline(admin.TabularInline):
    model = KnowledgePassage
    fields = ["position", "heading", "text"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # passages come with their document: whoever may see it sees them
        user = request.user
        return user.has_perm("knowledge.view_knowledgedocument") or user.has_perm(
            "knowledge.change_knowledgedocument"
        )


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "persona", "status", "progress", "passage_count", "processed_at"]
    list_filter = ["status"]
    search_fields = ["title", "url", "filename"]
    readonly_fields = [
        "persona",
        "filename",
        "url",
        "format",
        "size_bytes",
        "status",
        "progress",
        "stage",
        "error",
        "passage_count",
        "fetched_at",
        "processed_at",
        "next_refresh_at",
    ]
    fields = ["title", "refresh_hours", *readonly_fields]
    inlines = [PassageInline]
    actions = ["process_again"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeDocument]:
        documents = super().get_queryset(request).defer("content").select_related("persona")
        if request.user.is_superuser:
            return documents
        return documents.filter(persona__org_id=_acting_org_id(request))

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = DocumentAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["persona", "title", "file", "page_url", "refresh"]
        return self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else self.readonly_fields

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        return [] if obj is None else self.inlines

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "persona" and not request.user.is_superuser:
            kwargs["queryset"] = Persona.objects.filter(org_id=_acting_org_id(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        data = form.cleaned_data
        try:
            if data.get("file"):
                created = document_create_from_file(
                    persona=data["persona"],
                    name=data["file"].name,
                    data=data["file"].read(),
                    title=data.get("title") or "",
                )
            else:
                created = document_create_from_url(
                    persona=data["persona"],
                    url=data["page_url"],
                    title=data.get("title") or "",
                    refresh_hours=data["refresh"],
                )
        except ValidationError as exc:  # a URL refused, or the cap reached meanwhile
            messages.error(request, " ".join(exc.messages))
            return
        obj.pk = created.pk
        obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: KnowledgeDocument) -> None:
        document_delete(document=obj)

    @admin.action(description="Process again (fetch URLs again)")
    def process_again(self, request: HttpRequest, queryset: QuerySet[KnowledgeDocument]) -> None:
        queued = 0
        for document in queryset:
            try:
                document_refresh(document=document)
                queued += 1
            except ValidationError:
                pass
        messages.success(request, f"{queued} document(s) queued.")
