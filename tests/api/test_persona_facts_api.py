"""The JSON API for a persona's facts: /api/v1/personas/<id>/facts/."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.support.api import Api, error_of
from tests.support.tenants import Tenant
from voiceapp.personas.models import MAX_FACTS_PER_PERSONA, Persona, PersonaFact
from voiceapp.personas.services import persona_fact_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def persona(tenant_a: Tenant) -> Persona:
    return Persona.objects.get(org=tenant_a.org, slug="assistant")


def test_create_list_and_retrieve(api: Api, persona: Persona) -> None:
    # when two facts are posted
    hours = api.post(
        f"personas/{persona.pk}/facts/",
        {"question": "When are you open?", "answer": "9 to 5, Monday to Friday."},
    )
    address = api.post(f"personas/{persona.pk}/facts/", {"answer": "Main Street 1."})
    # then they are stored in that order
    assert hours.status_code == 201, hours.content
    assert address.status_code == 201, address.content
    body = hours.json()
    assert body["question"] == "When are you open?" and body["position"] == 0
    assert set(body) == {"id", "question", "answer", "position", "created_at", "updated_at"}
    assert address.json()["question"] == "" and address.json()["position"] == 1

    listed = api.get(f"personas/{persona.pk}/facts/")
    assert listed.status_code == 200
    assert [f["answer"] for f in listed.json()] == ["9 to 5, Monday to Friday.", "Main Street 1."]

    one = api.get(f"personas/{persona.pk}/facts/{body['id']}/")
    assert one.status_code == 200 and one.json() == body


def test_update_partial_update_and_delete(api: Api, persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, question="Hours?", answer="9 to 5.")
    url = f"personas/{persona.pk}/facts/{fact.pk}/"

    put = api.put(url, {"question": "When are you open?", "answer": "8 to 4."})
    assert put.status_code == 200, put.content
    assert (put.json()["question"], put.json()["answer"]) == ("When are you open?", "8 to 4.")

    patch = api.patch(url, {"position": 7})
    assert patch.status_code == 200
    assert patch.json()["position"] == 7 and patch.json()["answer"] == "8 to 4."

    assert api.delete(url).status_code == 204
    assert not PersonaFact.objects.filter(pk=fact.pk).exists()
    assert error_of(api.get(url))["code"] == "not_found"


def test_replace_all_facts(api: Api, persona: Persona) -> None:
    persona_fact_create(persona=persona, answer="Old.")

    response = api.put(
        f"personas/{persona.pk}/facts/",
        [{"question": "Hours?", "answer": "9 to 5."}, {"answer": "Main Street 1."}],
    )

    assert response.status_code == 200, response.content
    assert [(f["question"], f["answer"], f["position"]) for f in response.json()] == [
        ("Hours?", "9 to 5.", 0),
        ("", "Main Street 1.", 1),
    ]
    assert list(persona.facts.values_list("answer", flat=True)) == ["9 to 5.", "Main Street 1."]
    assert api.put(f"personas/{persona.pk}/facts/", []).json() == []
    assert not persona.facts.exists()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"question": "When?"}, "answer"),
        ({"answer": ""}, "answer"),
        ({"answer": "   "}, "answer"),
        ({"answer": "x" * 1001}, "answer"),
        ({"question": "q" * 301, "answer": "Fine."}, "question"),
        ({"answer": "Fine.", "position": -1}, "position"),
        ({"answer": "Fine.", "position": "first"}, "position"),
        ({"answer": ["not", "text"]}, "answer"),
    ],
)
def test_bad_facts_get_json_errors(
    api: Api, persona: Persona, payload: dict[str, Any], field: str
) -> None:
    response = api.post(f"personas/{persona.pk}/facts/", payload)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert field in error["details"], error
    assert not persona.facts.exists()


@pytest.mark.parametrize(
    "payload",
    [{"answer": "not a list"}, [{"question": "no answer"}], [{"answer": "x" * 1001}], '"text"'],
)
def test_bad_replacements_get_json_errors_and_change_nothing(
    api: Api, persona: Persona, payload: Any
) -> None:
    persona_fact_create(persona=persona, answer="Kept.")

    response = api.put(f"personas/{persona.pk}/facts/", payload)

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_request"
    assert list(persona.facts.values_list("answer", flat=True)) == ["Kept."]


def test_the_cap_is_a_json_error(api: Api, persona: Persona) -> None:
    PersonaFact.objects.bulk_create(
        PersonaFact(persona=persona, answer=f"F{i}", position=i)
        for i in range(MAX_FACTS_PER_PERSONA)
    )

    added = api.post(f"personas/{persona.pk}/facts/", {"answer": "One too many."})
    replaced = api.put(
        f"personas/{persona.pk}/facts/",
        [{"answer": f"F{i}"} for i in range(MAX_FACTS_PER_PERSONA + 1)],
    )

    assert added.status_code == 400
    assert f"already has {MAX_FACTS_PER_PERSONA} facts" in error_of(added)["message"]
    assert replaced.status_code == 400
    assert error_of(replaced)["code"] == "invalid_request"
    assert persona.facts.count() == MAX_FACTS_PER_PERSONA


def test_unknown_persona_or_fact_is_a_json_404(api: Api, persona: Persona) -> None:
    fact = persona_fact_create(persona=persona, answer="Here.")

    for path in (
        "personas/999999/facts/",
        f"personas/999999/facts/{fact.pk}/",
        f"personas/{persona.pk}/facts/999999/",
        f"personas/{persona.pk}/facts/abc/",
    ):
        response = api.get(path)
        assert response.status_code == 404, path
        assert error_of(response)["code"] == "not_found"


def test_facts_need_a_key(db: None, persona: Persona) -> None:
    response = Client().get(f"/api/v1/personas/{persona.pk}/facts/")

    assert response.status_code == 401
    assert error_of(response)["code"] == "not_authenticated"


def test_facts_are_in_the_openapi_schema(db: None) -> None:
    response = Client().get("/api/v1/schema/", headers={"Accept": "application/json"})

    schema = response.json()
    collection = schema["paths"]["/api/v1/personas/{persona_pk}/facts/"]
    detail = schema["paths"]["/api/v1/personas/{persona_pk}/facts/{id}/"]
    assert set(collection) >= {"get", "post", "put"}
    assert set(detail) >= {"get", "put", "patch", "delete"}
    assert collection["put"]["operationId"] == "personas_facts_replace"
    assert "PersonaFact" in schema["components"]["schemas"]
