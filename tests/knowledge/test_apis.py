"""The JSON API for a persona's documents: /api/v1/personas/<id>/documents/."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.support.api import Api, error_of
from tests.support.documents import PageServer
from tests.support.tenants import Tenant
from voiceapp.knowledge.models import KnowledgeDocument
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db(transaction=True)

FAQ = b"## Parking\nThe town car park on Mill Lane is free for an hour.\n"


def upload(api: Api, persona: Persona, name: str, data: bytes, **fields: str):  # type: ignore[no-untyped-def]
    return api.client.post(
        f"/api/v1/personas/{persona.pk}/documents/",
        {"file": SimpleUploadedFile(name, data), **fields},
        headers=api.headers,
    )


def test_a_file_is_uploaded_processed_and_its_passages_listed(api: Api, persona: Persona) -> None:
    # when a file is posted as multipart
    created = upload(api, persona, "faq.md", FAQ, title="Our FAQ")
    # then it is created, and (the task ran on commit) ready with its passage
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["title"] == "Our FAQ" and body["filename"] == "faq.md"
    doc = api.get(f"personas/{persona.pk}/documents/{body['id']}/").json()
    assert (doc["status"], doc["progress"], doc["passage_count"]) == ("ready", 100, 1)
    passages = api.get(f"personas/{persona.pk}/documents/{body['id']}/passages/").json()
    assert passages == [
        {
            "position": 0,
            "heading": "Parking",
            "text": "The town car park on Mill Lane is free for an hour.",
        }
    ]
    listed = api.get(f"personas/{persona.pk}/documents/").json()
    assert [d["id"] for d in listed] == [body["id"]]


def test_a_url_is_added_as_json(api: Api, persona: Persona, pages: PageServer) -> None:
    pages.pages["/faq"] = (200, "text/plain", b"We open at 9 on weekdays.")
    created = api.post(
        f"personas/{persona.pk}/documents/", {"url": f"{pages.url}/faq", "refresh_hours": 168}
    )
    assert created.status_code == 201, created.content
    doc = api.get(f"personas/{persona.pk}/documents/{created.json()['id']}/").json()
    assert (doc["status"], doc["refresh_hours"], doc["passage_count"]) == ("ready", 168, 1)
    # processed again on request
    again = api.post(f"personas/{persona.pk}/documents/{doc['id']}/refresh/")
    assert again.status_code == 202
    assert pages.hits["/faq"] == 2


def test_bad_requests_get_clear_errors_and_store_nothing(api: Api, persona: Persona) -> None:
    fake = upload(api, persona, "prices.pdf", b"not a pdf at all")
    assert fake.status_code == 400
    assert "not one" in error_of(fake)["message"]
    neither = api.post(f"personas/{persona.pk}/documents/", {"title": "nothing"})
    assert neither.status_code == 400
    assert "either a file" in error_of(neither)["message"]
    bad_url = api.post(f"personas/{persona.pk}/documents/", {"url": "ftp://example.com/x"})
    assert bad_url.status_code == 400
    assert not KnowledgeDocument.objects.exists()


def test_another_orgs_documents_are_not_found(api: Api, persona: Persona, tenant_b: Tenant) -> None:
    theirs = Persona.objects.get(org=tenant_b.org, slug="assistant")
    document = KnowledgeDocument.objects.create(persona=theirs, title="B's prices")
    assert api.get(f"personas/{theirs.pk}/documents/").status_code == 404
    assert api.get(f"personas/{theirs.pk}/documents/{document.pk}/").status_code == 404
    # nor through one's own persona
    assert api.get(f"personas/{persona.pk}/documents/{document.pk}/").status_code == 404
    assert api.delete(f"personas/{persona.pk}/documents/{document.pk}/").status_code == 404
    assert KnowledgeDocument.objects.filter(pk=document.pk).exists()


def test_a_document_is_deleted_with_its_passages(api: Api, persona: Persona) -> None:
    created = upload(api, persona, "faq.md", FAQ).json()
    gone = api.delete(f"personas/{persona.pk}/documents/{created['id']}/")
    assert gone.status_code == 204
    assert api.get(f"personas/{persona.pk}/documents/{created['id']}/").status_code == 404
    assert not persona.documents.exists()
