"""Adding, processing, refreshing and deleting a persona's documents: passages
stored whole or not at all, errors that say what to do, URLs fetched on schedule.
Processing runs through Celery (eagerly in tests) with the real sentence encoder."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from tests.support.documents import PageServer, docx_bytes, pdf_bytes
from voiceapp.engine.knowledge import Fact
from voiceapp.inference.runtime import call_config_from_persona
from voiceapp.knowledge.models import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENTS_PER_PERSONA,
    KnowledgeDocument,
    KnowledgePassage,
)
from voiceapp.knowledge.selectors import persona_document_facts
from voiceapp.knowledge.services import (
    document_create_from_file,
    document_create_from_url,
    document_process,
    document_refresh,
    documents_refresh_due,
)
from voiceapp.personas.models import Persona
from voiceapp.personas.selectors import persona_get_for_call

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit runs the task

FAQ = b"""# Rosie's Bakery

## Parking
There is no car park of our own. The town car park on Mill Lane is free for an hour.

## Payment
We take cash and all cards, including contactless.
"""
Status = KnowledgeDocument.Status


def test_an_upload_is_processed_into_passages_with_embeddings(persona: Persona) -> None:
    # when a Markdown file is uploaded
    document = document_create_from_file(persona=persona, name="faq.md", data=FAQ)
    # then it has been processed (the task ran on commit) into passages
    document.refresh_from_db()
    assert document.status == Status.READY and document.progress == 100
    assert document.format == "markdown" and document.title == "faq.md"
    passages = list(document.passages.order_by("position"))
    assert [p.heading for p in passages] == ["Parking", "Payment"]
    assert passages[0].text == (
        "There is no car park of our own. The town car park on Mill Lane is free for an hour."
    )
    assert document.passage_count == 2
    # each with a unit-length embedding of 384 floats
    vector = np.frombuffer(bytes(passages[0].embedding), dtype="<f4")
    assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-3


def test_a_call_gets_the_passages_as_facts_after_the_personas_own(persona: Persona) -> None:
    # given a fact and a processed document
    persona.facts.create(answer="We open at 7.", position=0)
    document_create_from_file(persona=persona, name="faq.md", data=FAQ)
    # when the call's configuration is built from the persona as a call loads it
    loaded = persona_get_for_call(org_id=persona.org_id, pk=persona.pk)
    facts = call_config_from_persona(loaded).facts
    # then the persona's facts come first, then the passages, which carry embeddings
    assert facts[0] == Fact(answer="We open at 7.")
    assert [f.answer for f in facts[1:]] == [
        "There is no car park of our own. The town car park on Mill Lane is free for an hour.",
        "We take cash and all cards, including contactless.",
    ]
    assert all(f.passage and f.vector is not None for f in facts[1:])
    assert persona_document_facts(persona=loaded) == facts[1:]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("prices.pdf", b"this is not a pdf", "named as a PDF, but it is not one"),
        ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not text, PDF or a Word"),
        ("empty.md", b"   \n", "The file is empty."),
        ("huge.txt", b"x" * (MAX_DOCUMENT_BYTES + 1), "upload at most 10.0 MB"),
    ],
)
def test_a_bad_file_is_refused_and_nothing_is_stored(
    persona: Persona, name: str, data: bytes, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        document_create_from_file(persona=persona, name=name, data=data)
    assert not KnowledgeDocument.objects.exists() and not KnowledgePassage.objects.exists()


def test_a_file_that_fails_inside_is_marked_failed_with_no_passages(persona: Persona) -> None:
    # given a PDF cut short: it looks like a PDF, but cannot be read
    broken = pdf_bytes("<p>Our prices are on the board.</p>")[:300]
    # when it is uploaded
    document = document_create_from_file(persona=persona, name="prices.pdf", data=broken)
    document.refresh_from_db()
    # then it failed, saying why, and stored no passage
    assert document.status == Status.FAILED
    assert "could not be read" in document.error or "No text" in document.error
    assert document.passage_count == 0 and not document.passages.exists()


def test_word_and_pdf_files_are_read(persona: Persona) -> None:
    word = docx_bytes([("Heading 1", "Deposits"), ("", "A deposit of £20 secures a cake.")])
    pdf = pdf_bytes("<h2>Delivery</h2><p>We deliver within five miles for £4.</p>")
    a = document_create_from_file(persona=persona, name="terms.docx", data=word)
    b = document_create_from_file(persona=persona, name="delivery.pdf", data=pdf)
    texts = list(KnowledgePassage.objects.values_list("text", flat=True))
    assert "A deposit of £20 secures a cake." in texts
    assert any("We deliver within five miles for £4." in t for t in texts)
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.format, a.status, b.format, b.status) == ("docx", Status.READY, "pdf", Status.READY)


def test_a_persona_holds_a_limited_number_of_documents(persona: Persona) -> None:
    for n in range(MAX_DOCUMENTS_PER_PERSONA):
        KnowledgeDocument.objects.create(persona=persona, title=f"d{n}", status=Status.READY)
    with pytest.raises(ValidationError, match="the most it can"):
        document_create_from_file(persona=persona, name="faq.md", data=FAQ)


def test_a_url_is_fetched_processed_and_fetched_again_when_due(
    persona: Persona, pages: PageServer
) -> None:
    pages.pages["/faq"] = (200, "text/html; charset=utf-8", b"<h1>Hours</h1><p>We open at 9.</p>")
    # when a page is added, to be fetched daily
    document = document_create_from_url(persona=persona, url=f"{pages.url}/faq", refresh_hours=24)
    document.refresh_from_db()
    # then it was fetched and processed, and its next fetch is set
    assert document.status == Status.READY and document.format == "html"
    assert list(document.passages.values_list("text", flat=True)) == ["We open at 9."]
    assert document.next_refresh_at > timezone.now() + timedelta(hours=23)
    # when the page changes and its refresh comes due
    pages.pages["/faq"] = (200, "text/html", b"<h1>Hours</h1><p>We now open at 8.</p>")
    KnowledgeDocument.objects.filter(pk=document.pk).update(next_refresh_at=timezone.now())
    assert documents_refresh_due() == 1
    # then the new text replaced the old
    assert list(document.passages.values_list("text", flat=True)) == ["We now open at 8."]
    assert pages.hits["/faq"] == 2
    # and nothing is due until the next day
    assert documents_refresh_due() == 0


def test_a_failed_refresh_keeps_the_passages_it_had_and_says_why(
    persona: Persona, pages: PageServer
) -> None:
    pages.pages["/faq"] = (200, "text/plain", b"We open at 9 on weekdays.")
    document = document_create_from_url(persona=persona, url=f"{pages.url}/faq")
    # when the page is gone at the next fetch
    pages.pages["/faq"] = (404, "text/plain", b"gone")
    document_refresh(document=document)
    document.refresh_from_db()
    # then the document says so, and the agent keeps answering from what it had
    assert document.status == Status.FAILED and "HTTP 404" in document.error
    assert list(document.passages.values_list("text", flat=True)) == ["We open at 9 on weekdays."]
    # and the next try is scheduled
    assert document.next_refresh_at is not None


def test_redirects_are_followed_and_checked(persona: Persona, pages: PageServer) -> None:
    pages.pages["/old"] = (301, "text/plain", b"/new")
    pages.pages["/new"] = (200, "text/markdown", b"## Prices\nA loaf is 4 dollars.")
    document = document_create_from_url(persona=persona, url=f"{pages.url}/old")
    document.refresh_from_db()
    assert document.status == Status.READY and document.format == "markdown"


def test_private_addresses_are_refused_unless_allowed(persona: Persona, settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False  # as in production
    with pytest.raises(ValidationError, match="loopback"):
        document_create_from_url(persona=persona, url="http://127.0.0.1:9/faq")
    with pytest.raises(ValidationError, match="http:// or https://"):
        document_create_from_url(persona=persona, url="file:///etc/passwd")
    assert not KnowledgeDocument.objects.exists()


def test_refreshing_a_document_being_processed_is_refused(persona: Persona) -> None:
    document = KnowledgeDocument.objects.create(
        persona=persona, title="busy", status=Status.PROCESSING
    )
    with pytest.raises(ValidationError, match="being processed already"):
        document_refresh(document=document)


def test_a_document_deleted_while_processed_stores_nothing(persona: Persona) -> None:
    document = KnowledgeDocument.objects.create(
        persona=persona, title="gone", format="markdown", content=FAQ
    )
    pk = document.pk
    document.delete()
    assert document_process(document_id=pk) is None
    assert not KnowledgePassage.objects.exists()
