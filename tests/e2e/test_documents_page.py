"""The Documents section of a persona's page in a real browser: it fits the window,
and a document being processed shows its progress until the page shows it ready."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.support.tenants import Tenant
from voiceapp.knowledge.models import KnowledgeDocument
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db(transaction=True)
Status = KnowledgeDocument.Status


def log_in(page: Any, live_server: Any, tenant: Tenant) -> None:
    client = Client()
    client.force_login(tenant.owner)
    page.context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )


@pytest.mark.parametrize("width", [390, 1280])
def test_documents_in_every_state_fit_the_window(
    live_server: Any, page: Any, tenant_a: Tenant, width: int, tmp_path: Any
) -> None:
    # given a persona with a ready page, a file being processed and a failed file
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    KnowledgeDocument.objects.create(
        persona=persona,
        title="Our frequently asked questions and answers, with prices and opening hours",
        url="https://www.example-bakery.test/pages/frequently-asked-questions?lang=en&print=1",
        status=Status.READY,
        passage_count=42,
        format="html",
    )
    KnowledgeDocument.objects.create(
        persona=persona,
        title="price-list-2027.pdf",
        filename="price-list-2027.pdf",
        status=Status.PROCESSING,
        progress=55,
        stage="Indexing passages (32 of 80)",
    )
    KnowledgeDocument.objects.create(
        persona=persona,
        title="scan.pdf",
        filename="scan.pdf",
        status=Status.FAILED,
        error="No text was found in this PDF. A scanned PDF holds pictures of its pages.",
    )
    log_in(page, live_server, tenant_a)
    page.set_viewport_size({"width": width, "height": 900})
    # when the persona's page opens
    page.goto(f"{live_server.url}/dashboard/personas/{persona.pk}/#documents")
    # then every state is shown, and nothing reaches past the window's right edge
    section = page.locator("#documents")
    assert section.locator("progress").get_attribute("value") == "55"
    assert "No text was found" in section.inner_text()
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the persona page is {overflow}px wider than the window at {width}px"
    if os.environ.get("SCREENSHOTS"):
        section.screenshot(path=str(tmp_path / f"documents-{width}.png"))
        print(tmp_path)


def test_a_document_being_processed_updates_and_the_page_shows_it_ready(
    live_server: Any, page: Any, tenant_a: Tenant
) -> None:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    document = KnowledgeDocument.objects.create(
        persona=persona, title="menu.md", filename="menu.md", status=Status.QUEUED
    )
    log_in(page, live_server, tenant_a)
    page.goto(f"{live_server.url}/dashboard/personas/{persona.pk}/")
    row = page.locator(f'tr[data-document="{document.pk}"]')
    assert row.locator(".badge").inner_text() == "Queued"
    # when the task reports progress, the row follows it without a reload
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status=Status.PROCESSING, progress=40, stage="Indexing passages (8 of 20)"
    )
    page.wait_for_function(
        "document.querySelector('.document-stage').textContent.includes('8 of 20')",
        timeout=10_000,
    )
    assert row.locator("progress").get_attribute("value") == "40"
    # and when it is done, the page shows it ready with its passages
    KnowledgeDocument.objects.filter(pk=document.pk).update(
        status=Status.READY, progress=100, stage="", passage_count=20
    )
    page.wait_for_function("!document.querySelector('[data-documents-status]')", timeout=10_000)
    assert "Ready" in row.locator(".document-state").inner_text()
    assert row.locator(".document-passages").inner_text() == "20"
