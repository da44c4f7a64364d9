"""Dashboard pages for a persona's documents: upload a file or add a URL, watch it
being processed (the persona page polls `documents_status_view`), read its
passages, process it again, delete it."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from voiceapp.dashboard.forms import DocumentUploadForm, DocumentURLForm
from voiceapp.dashboard.views import _add_errors, _persona_page, org_required
from voiceapp.knowledge.models import MAX_DOCUMENT_BYTES, KnowledgeDocument
from voiceapp.knowledge.selectors import document_get, document_list, passage_list
from voiceapp.knowledge.services import (
    document_create_from_file,
    document_create_from_url,
    document_delete,
    document_refresh,
)
from voiceapp.personas.models import Persona
from voiceapp.personas.selectors import persona_get
from voiceapp.tenants.models import Membership


def _documents_url(persona: Persona) -> str:
    return reverse("dashboard:persona_edit", args=[persona.pk]) + "#documents"


def _document(persona: Persona, document_pk: int) -> KnowledgeDocument:
    try:
        return document_get(persona=persona, pk=document_pk)
    except KnowledgeDocument.DoesNotExist as exc:
        raise Http404("No such document.") from exc


@org_required()
@require_POST
def document_upload_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    form = DocumentUploadForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            if upload.size > MAX_DOCUMENT_BYTES:
                raise ValidationError(
                    f"The file is {upload.size / 2**20:.1f} MB; upload at most "
                    f"{MAX_DOCUMENT_BYTES // 2**20} MB."
                )
            document = document_create_from_file(
                persona=persona,
                name=upload.name or "",
                data=upload.read(),
                title=form.cleaned_data["title"],
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Uploaded “{document.title}”. It is being processed.")
            return redirect(_documents_url(persona))
    return _persona_page(request, membership, persona, upload_form=form)


@org_required()
@require_POST
def document_url_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    form = DocumentURLForm(request.POST)
    if form.is_valid():
        try:
            document = document_create_from_url(persona=persona, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            messages.success(request, f"Added “{document.title}”. It is being fetched.")
            return redirect(_documents_url(persona))
    return _persona_page(request, membership, persona, url_form=form)


@org_required()
@require_POST
def document_refresh_view(
    request: HttpRequest, membership: Membership, pk: int, document_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    document = _document(persona, document_pk)
    try:
        document_refresh(document=document)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        what = "fetched" if document.url else "processed"
        messages.success(request, f"“{document.title}” is being {what} again.")
    return redirect(_documents_url(persona))


@org_required()
@require_POST
def document_delete_view(
    request: HttpRequest, membership: Membership, pk: int, document_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    document = _document(persona, document_pk)
    title = document.title
    document_delete(document=document)
    messages.success(request, f"Deleted “{title}” and its passages.")
    return redirect(_documents_url(persona))


@org_required()
def document_detail_view(
    request: HttpRequest, membership: Membership, pk: int, document_pk: int
) -> HttpResponse:
    persona = persona_get(org=membership.org, pk=pk)
    document = _document(persona, document_pk)
    return render(
        request,
        "dashboard/document_detail.html",
        {
            "section": "personas",
            "persona": persona,
            "document": document,
            "passages": passage_list(document=document),
        },
    )


@org_required()
def documents_status_view(request: HttpRequest, membership: Membership, pk: int) -> JsonResponse:
    """Each document's processing state, for the persona page to poll."""
    persona = persona_get(org=membership.org, pk=pk)
    return JsonResponse(
        {
            "documents": [
                {
                    "id": d.pk,
                    "status": d.status,
                    "status_label": d.get_status_display(),
                    "progress": d.progress,
                    "stage": d.stage,
                    "error": d.error,
                    "passage_count": d.passage_count,
                }
                for d in document_list(persona=persona)
            ]
        }
    )
