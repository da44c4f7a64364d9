"""Documents in the Django admin: staff add a file for their org's persona, see
its passages, and see nothing of other organizations."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.support.tenants import Tenant, staff_client
from voiceapp.knowledge.models import KnowledgeDocument
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff_of_a(tenant_a: Tenant) -> Client:
    return staff_client(tenant_a.org, permissions_ending="knowledgedocument")


def test_staff_add_a_document_and_see_its_passages(staff_of_a: Client, persona: Persona) -> None:
    response = staff_of_a.post(
        reverse("admin:knowledge_knowledgedocument_add"),
        {
            "persona": persona.pk,
            "title": "Payment",
            "file": SimpleUploadedFile("payment.md", b"## Payment\nWe take cash and cards.\n"),
            "page_url": "",
            "refresh": "24",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    document = KnowledgeDocument.objects.get()
    assert (document.title, document.status, document.passage_count) == ("Payment", "ready", 1)
    page = staff_of_a.get(reverse("admin:knowledge_knowledgedocument_change", args=[document.pk]))
    assert "We take cash and cards." in page.content.decode()


def test_staff_get_a_form_error_for_a_bad_file(staff_of_a: Client, persona: Persona) -> None:
    response = staff_of_a.post(
        reverse("admin:knowledge_knowledgedocument_add"),
        {
            "persona": persona.pk,
            "title": "",
            "file": SimpleUploadedFile("scan.pdf", b"not a pdf"),
            "page_url": "",
            "refresh": "0",
        },
    )
    assert response.status_code == 200
    assert "named as a PDF, but it is not one" in response.content.decode()
    assert not KnowledgeDocument.objects.exists()


def test_staff_see_only_their_orgs_documents(staff_of_a: Client, tenant_b: Tenant) -> None:
    theirs = Persona.objects.get(org=tenant_b.org, slug="assistant")
    other = KnowledgeDocument.objects.create(persona=theirs, title="Bravo listings")
    listing = staff_of_a.get(reverse("admin:knowledge_knowledgedocument_changelist"))
    assert "Bravo listings" not in listing.content.decode()
    change = staff_of_a.get(reverse("admin:knowledge_knowledgedocument_change", args=[other.pk]))
    assert change.status_code == 302  # "does not exist": back to the admin index
