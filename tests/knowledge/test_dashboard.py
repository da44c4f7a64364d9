"""The Documents section of a persona's page: upload, add a page, progress, the
passages page, process again, delete."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.support.documents import PageServer
from tests.support.tenants import Tenant
from voiceapp.knowledge.models import KnowledgeDocument
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db(transaction=True)

FAQ = b"## Payment\nWe take cash and all cards, including contactless.\n"


def page_text(response: Any) -> str:
    return html.unescape(response.content.decode())


def edit_url(persona: Persona) -> str:
    return reverse("dashboard:persona_edit", args=[persona.pk])


def test_upload_shows_the_document_ready_with_its_passages(
    tenant_a: Tenant, persona: Persona
) -> None:
    client = tenant_a.client
    empty = page_text(client.get(edit_url(persona)))
    assert "No documents yet." in empty
    # when a file is uploaded
    response = client.post(
        reverse("dashboard:persona_document_upload", args=[persona.pk]),
        {"upload-file": SimpleUploadedFile("payment.md", FAQ), "upload-title": "Payment"},
        follow=True,
    )
    # then the page lists it, ready, with its passage count
    text = page_text(response)
    assert "Uploaded “Payment”." in text
    assert "Ready" in text and "payment.md" in text
    document = persona.documents.get()
    detail = page_text(
        client.get(reverse("dashboard:persona_document_detail", args=[persona.pk, document.pk]))
    )
    assert "We take cash and all cards, including contactless." in detail


def test_a_bad_file_is_shown_as_a_form_error(tenant_a: Tenant, persona: Persona) -> None:
    response = tenant_a.client.post(
        reverse("dashboard:persona_document_upload", args=[persona.pk]),
        {"upload-file": SimpleUploadedFile("prices.docx", b"plain words, not a Word file")},
    )
    assert response.status_code == 200
    assert "named as a Word document, but it is not one" in page_text(response)
    assert not KnowledgeDocument.objects.exists()


def test_a_page_is_added_and_its_progress_polled(
    tenant_a: Tenant, persona: Persona, pages: PageServer
) -> None:
    pages.pages["/hours"] = (200, "text/plain", b"We open at 9 on weekdays.")
    response = tenant_a.client.post(
        reverse("dashboard:persona_document_url", args=[persona.pk]),
        {"page-url": f"{pages.url}/hours", "page-refresh_hours": "24"},
        follow=True,
    )
    assert "It is being fetched." in page_text(response)
    status = tenant_a.client.get(
        reverse("dashboard:persona_documents_status", args=[persona.pk])
    ).json()
    assert [(d["status"], d["passage_count"]) for d in status["documents"]] == [("ready", 1)]


def test_a_busy_document_shows_its_progress(tenant_a: Tenant, persona: Persona) -> None:
    KnowledgeDocument.objects.create(
        persona=persona,
        title="Big manual",
        status=KnowledgeDocument.Status.PROCESSING,
        progress=60,
        stage="Indexing passages (64 of 120)",
    )
    text = page_text(tenant_a.client.get(edit_url(persona)))
    assert 'value="60"' in text and "Indexing passages (64 of 120)" in text
    assert "data-documents-status=" in text  # the page polls until it is done


def test_delete_and_other_orgs_documents(
    tenant_a: Tenant, tenant_b: Tenant, persona: Persona
) -> None:
    theirs = Persona.objects.get(org=tenant_b.org, slug="assistant")
    other = KnowledgeDocument.objects.create(persona=theirs, title="B's")
    mine = KnowledgeDocument.objects.create(persona=persona, title="Mine")
    client = tenant_a.client
    foreign = client.post(reverse("dashboard:persona_document_delete", args=[persona.pk, other.pk]))
    assert foreign.status_code == 404
    deleted = client.post(
        reverse("dashboard:persona_document_delete", args=[persona.pk, mine.pk]), follow=True
    )
    assert "Deleted “Mine” and its passages." in page_text(deleted)
    assert list(KnowledgeDocument.objects.values_list("title", flat=True)) == ["B's"]
