"""Post-call analysis: written when a call ends (a Celery task, eager in tests),
shown on the call's page and in the API, and sent as the call.analyzed webhook;
an organization's own LLM endpoint writes it when the persona asks for fields."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook

from sessions.analysis import call_analyze
from sessions.models import CallAnalysis
from tests.support.api import Api
from tests.support.calls import make_call
from tests.support.llm_server import LLMServer
from tests.support.tenants import Tenant
from tests.support.webhook_receiver import Receiver, webhook_receiver
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_update
from voiceapp.tenants.services import llm_endpoint_create
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS = {
    "type": "object",
    "properties": {
        "callback_number": {"type": "string"},
        "caller_name": {"type": "string"},
        "reason": {"type": "string", "description": "why they called"},
    },
}
ITEMS = [
    ("assistant", "Hello, Alpha Dental, how can I help?", 0.5, False),
    ("user", "Hi, I chipped a tooth and I'd like an appointment this week.", 3.0, False),
    ("assistant", "I can book you in. What is your name and number?", 6.0, False),
    ("user", "My name is Tom Baker, my number is 07700 900 456.", 9.0, False),
    ("assistant", "Thank you Tom, your appointment is booked for Thursday at 9 am.", 12.0, False),
]


@pytest.fixture
def persona(tenant_a: Tenant) -> Persona:
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    return persona_update(
        persona=persona,
        analysis_fields=FIELDS,
        success_criterion="The caller booked an appointment.",
    )


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    with webhook_receiver() as running:
        yield running


def test_an_ended_call_is_analysed_and_the_webhook_sent(
    tenant_a: Tenant, persona: Persona, receiver: Receiver
) -> None:
    _, secret = webhook_endpoint_create(
        org=tenant_a.org, url=receiver.url, events=["call.analyzed"]
    )
    # when a call ends (its analysis task runs once the end commits)
    call = make_call(persona, started_at=timezone.now() - timedelta(minutes=1), items=ITEMS)
    # then its analysis holds the fields, the summary and the verdict
    analysis = CallAnalysis.objects.get(call=call)
    assert analysis.fields == {
        "callback_number": "07700 900 456",
        "caller_name": "Tom Baker",
        "reason": "Hi, I chipped a tooth and I'd like an appointment this week.",
    }
    assert "chipped a tooth" in analysis.summary
    assert analysis.success is True and analysis.method == "rules"
    assert analysis.criterion == "The caller booked an appointment."
    # and call.analyzed went out, signed, with the same record
    for _ in range(100):
        if receiver.received:
            break
        time.sleep(0.05)
    body = Webhook(secret).verify(receiver.received[0].body, receiver.received[0].headers)
    assert body["type"] == "call.analyzed"
    assert body["data"]["call_id"] == str(call.pk)
    assert body["data"]["fields"]["caller_name"] == "Tom Baker"
    assert body["data"]["success"] is True
    # a second run (a task delivered twice) writes nothing new
    assert call_analyze(call_id=str(call.pk)).pk == analysis.pk
    assert CallAnalysis.objects.count() == 1


def test_the_analysis_is_on_the_calls_page_and_in_the_api(
    tenant_a: Tenant, persona: Persona, secret_key_a: str
) -> None:
    call = make_call(persona, started_at=timezone.now() - timedelta(minutes=1), items=ITEMS)
    page = tenant_a.client.get(reverse("dashboard:call_detail", args=[call.pk])).content.decode()
    assert "After the call" in page and "Successful" in page and "Tom Baker" in page
    body = Api(secret_key_a).get(f"calls/{call.pk}/").json()
    assert body["analysis"]["fields"]["callback_number"] == "07700 900 456"
    assert body["analysis"]["success"] is True and body["analysis"]["method"] == "rules"


def test_a_call_not_yet_ended_has_no_analysis(tenant_a: Tenant, persona: Persona) -> None:
    call = make_call(persona, started_at=timezone.now(), duration_s=None, items=ITEMS)
    assert call_analyze(call_id=str(call.pk)) is None
    page = tenant_a.client.get(reverse("dashboard:call_detail", args=[call.pk])).content.decode()
    assert "After the call" not in page


def test_the_orgs_own_llm_writes_the_analysis_when_it_has_one(
    tenant_a: Tenant, persona: Persona, llm_server: LLMServer
) -> None:
    endpoint = llm_endpoint_create(
        org=tenant_a.org,
        name="Our server",
        base_url=llm_server.base_url,
        api_key=llm_server.api_key,
        model=llm_server.model,
        is_default=True,
    )
    assert endpoint.pk
    before = llm_server.completions()
    call = make_call(persona, started_at=timezone.now() - timedelta(minutes=1), items=ITEMS)
    analysis = CallAnalysis.objects.get(call=call)
    # the endpoint was asked; what it wrote is kept when it is a JSON record, and the
    # rules' record otherwise (SmolLM2 on that server rarely writes one)
    assert llm_server.completions() == before + 1
    assert analysis.method in ("llm", "rules")
    assert analysis.summary and set(analysis.fields) == set(FIELDS["properties"])


def test_fields_that_are_not_a_schema_are_refused(persona: Persona) -> None:
    for bad, message in [
        (["reason"], "JSON schema of an object"),
        ({"type": "object", "properties": {"call back": {}}}, "not a field name"),
        ({"type": "object", "properties": {"reason": "text"}}, "needs a schema"),
    ]:
        with pytest.raises(ValidationError, match=message):
            persona_update(persona=persona, analysis_fields=bad)
    assert Persona.objects.get(pk=persona.pk).analysis_fields == FIELDS
