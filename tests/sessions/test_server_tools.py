"""Server tools: a persona's functions that the server runs by POSTing each call,
signed, to the business's URL (a real HTTP server on loopback here). In a real
call with the embedded models (in-process), through the dashboard and the API."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from standardwebhooks import Webhook

from sessions.actions import TOOL_APOLOGY
from sessions.models import CallItem
from sessions.realtime import session as realtime_session
from sessions.runner import start_realtime_session
from tests.sessions.test_actions import of_type, text_event, until
from tests.sessions.test_runner import grant_for, wait_ended
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from tests.support.webhook_receiver import Receiver, webhook_receiver
from voiceapp.inference import runtime
from voiceapp.personas.models import Persona, PersonaTool
from voiceapp.personas.server_tools import (
    persona_tool_create,
    persona_tool_target,
    tool_call,
)
from voiceapp.tenants.models import Role
from voiceapp.tenants.services import secret_key_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

ORDER = {
    "type": "object",
    "properties": {"order_number": {"type": "string", "description": "The order's number."}},
    "required": ["order_number"],
}
STATUS = b'{"status": "shipped", "arrives": "Friday"}'


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True  # the business's endpoint is on loopback
    with webhook_receiver() as running:
        running.reply = STATUS
        yield running


@pytest.fixture
def embedded(settings: Any, monkeypatch: pytest.MonkeyPatch, models: Any) -> None:
    settings.INFERENCE_EMBEDDED = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(runtime, "_local", models)


def order_tool(persona: Persona, url: str, **extra: Any) -> tuple[PersonaTool, str]:
    return persona_tool_create(
        persona=persona,
        name="lookup_order",
        description="Look up the status of the caller's order by its order number.",
        parameters=ORDER,
        url=url,
        headers={"X-Api-Key": "k-123-secret"},
        **extra,
    )


def forced(name: str) -> str:
    """The embedded model does not choose tools: the client names the one to call."""
    return json.dumps(
        {
            "type": "session.update",
            "session": {"type": "realtime", "tool_choice": {"type": "function", "name": name}},
        }
    )


async def ask_order(grant: Any, transport: ListTransport, done_count: int) -> str:
    session = await start_realtime_session(grant=grant, transport=transport, client_info={})
    await session.handle_text(forced("lookup_order"))
    await session.handle_text(text_event("Where is my order A1234?"))
    await session.handle_text('{"type": "response.create"}')
    await until(transport, lambda ev: len(of_type(ev, "response.done")) >= done_count)
    assert not session.ended.is_set()  # the call goes on, whatever the tool did
    await session.close("hangup")
    call_id = str(uuid.UUID(session.id.removeprefix("sess_")))
    await wait_ended(call_id)
    return call_id


def spoken(events: list[dict[str, Any]]) -> list[str]:
    return [e["transcript"] for e in of_type(events, "response.output_audio_transcript.done")]


def test_a_server_tool_is_called_signed_and_the_agent_answers_from_it(
    tenant_a: Tenant, receiver: Receiver, embedded: None
) -> None:
    # given a persona with a tool that looks orders up at the business's URL
    grant = grant_for(tenant_a)
    _, secret = order_tool(tenant_a.org.personas.get(), receiver.url)
    transport = ListTransport()

    # when the model calls it
    call_id = asyncio.run(ask_order(grant, transport, done_count=2))

    # then the business got one signed call, with its header and the arguments
    (request,) = receiver.received
    body = Webhook(secret).verify(request.body, request.headers)
    assert body["type"] == "tool.call" and body["tool"] == "lookup_order"
    assert body["call_id"] == call_id and set(body["arguments"]) == {"order_number"}
    assert request.headers["x-api-key"] == "k-123-secret"
    # and the client never saw the call; a second reply answered from the output
    events = transport.events
    assert not of_type(events, "error")
    assert not of_type(events, "response.function_call_arguments.done")
    first, second = of_type(events, "response.done")[:2]
    assert first["response"]["output"] == []
    assert second["response"]["status"] == "completed"
    assert second["response"]["output"][0]["content"][0]["transcript"].strip()
    # and the record has the call with what came back
    tool = CallItem.objects.get(call_id=call_id, role="tool")
    assert tool.tool["name"] == "lookup_order" and tool.tool["ok"] is True
    assert tool.tool["output"] == STATUS.decode()


def test_a_slow_failing_tool_gets_a_filler_then_an_apology_and_the_call_goes_on(
    tenant_a: Tenant, receiver: Receiver, embedded: None
) -> None:
    # given a tool whose URL answers slowly, with an error
    grant = grant_for(tenant_a)
    order_tool(tenant_a.org.personas.get(), receiver.url)
    receiver.delay_s = realtime_session.ACTION_FILLER_AFTER_S + 0.5
    receiver.answer(500)
    transport = ListTransport()

    call_id = asyncio.run(ask_order(grant, transport, done_count=3))

    # then the caller heard the filler, then the apology
    assert spoken(transport.events) == [realtime_session.ACTION_FILLER, TOOL_APOLOGY]
    # and the record says what went wrong
    tool = CallItem.objects.get(call_id=call_id, role="tool")
    assert tool.tool["ok"] is False
    assert json.loads(tool.tool["output"])["error"].startswith("HTTP 500")


def test_a_timeout_or_a_private_address_is_an_error_not_a_hang(
    tenant_a: Tenant, receiver: Receiver, settings: Any
) -> None:
    tool, _ = order_tool(tenant_a.org.personas.get(), receiver.url, timeout_ms=500)
    target = persona_tool_target(tool=tool)
    receiver.delay_s = 1.5
    slow = tool_call(target, call_id="c", arguments={"order_number": "A1"})
    assert not slow.ok and slow.output == "No answer within 0.5 s." and slow.ms < 1400
    for _ in range(60):  # the slow request lands once the receiver stops sleeping
        if receiver.received:
            break
        time.sleep(0.05)
    receiver.delay_s = 0
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False  # as in production
    guarded = tool_call(target, call_id="c", arguments={})
    assert not guarded.ok
    assert guarded.output.startswith("Tool calls cannot be sent to 127.0.0.1")
    assert len(receiver.received) == 1  # the guarded call never left


def test_tools_are_checked_and_their_headers_stored_encrypted(
    tenant_a: Tenant, settings: Any
) -> None:
    persona = tenant_a.org.personas.get()
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False

    def refused(**fields: Any) -> dict[str, list[str]]:
        data = {"name": "lookup", "description": "Look up.", "url": "https://example.com/t"}
        with pytest.raises(ValidationError) as error:
            persona_tool_create(persona=persona, **{**data, **fields})
        return error.value.message_dict

    assert "built-in action" in refused(name="end_call")["name"][0]
    assert "letters, digits" in refused(name="look up!")["name"][0]
    assert refused(url="http://example.com/t") == {"url": ["Use an https:// URL."]}
    assert "JSON schema of an object" in refused(parameters={"type": "string"})["parameters"][0]
    assert "set by the request" in refused(headers={"webhook-signature": "x"})["headers"][0]
    assert "500 to 7000" in refused(timeout_ms=60000)["timeout_ms"][0]
    tool, secret = persona_tool_create(
        persona=persona,
        name="lookup",
        description="Look up.",
        url="https://example.com/t",
        headers="Authorization: Bearer tok-987\nX-Shop: 12",
    )
    assert secret.startswith("whsec_")
    stored = PersonaTool.objects.get(pk=tool.pk)
    assert "tok-987" not in stored.headers_encrypted and secret not in stored.secret_encrypted
    assert persona_tool_target(tool=stored).headers == {
        "Authorization": "Bearer tok-987",
        "X-Shop": "12",
    }
    assert "already has a tool" in refused(name="lookup")["name"][0]


def test_the_dashboard_adds_and_tests_a_tool(
    tenant_a: Tenant, receiver: Receiver, member_of: Any
) -> None:
    persona = tenant_a.org.personas.get()
    client = tenant_a.client
    # when the owner adds a tool
    added = client.post(
        reverse("dashboard:persona_tool_create", args=[persona.pk]),
        {
            "name": "lookup_order",
            "description": "Look up an order by its number.",
            "parameters": json.dumps(ORDER),
            "url": receiver.url,
            "timeout_ms": "3000",
            "headers": "X-Api-Key: k-1",
            "enabled": "on",
        },
    )
    # then its signing secret is shown, once, with the test form
    html = added.content.decode()
    assert added.status_code == 200, html
    secret = re.search(r"whsec_[A-Za-z0-9+/=]+", html)
    assert secret is not None
    tool = PersonaTool.objects.get(persona=persona)
    page = client.get(reverse("dashboard:persona_edit", args=[persona.pk])).content.decode()
    assert "<code>lookup_order</code>" in page and "whsec_" not in page
    # and Test tool sends a real signed call and shows the answer and its time
    tested = client.post(
        reverse("dashboard:persona_tool_test", args=[persona.pk, tool.pk]),
        {"arguments": '{"order_number": "A1234"}'},
    ).content.decode()
    assert re.search(r"Answered in \d+ ms · HTTP 200", tested), tested
    assert "shipped" in tested
    body = Webhook(secret.group(0)).verify(receiver.received[0].body, receiver.received[0].headers)
    assert body["call_id"] == "test" and body["arguments"] == {"order_number": "A1234"}
    # and a failing URL shows what went wrong
    receiver.answer(404)
    failed = client.post(
        reverse("dashboard:persona_tool_test", args=[persona.pk, tool.pk]),
        {"arguments": "{}"},
    ).content.decode()
    assert "Failed in" in failed and "HTTP 404" in failed
    # and a bad form is answered on the page, and a member may not add tools
    bad = client.post(
        reverse("dashboard:persona_tool_create", args=[persona.pk]),
        {"name": "end_call", "description": "x", "url": receiver.url, "timeout_ms": "3000"},
    )
    assert bad.status_code == 200 and "is a built-in action" in bad.content.decode()
    _, member = member_of(tenant_a.org, Role.MEMBER)
    assert (
        member.get(reverse("dashboard:persona_tool_create", args=[persona.pk])).status_code == 403
    )


def test_the_api_manages_and_tests_tools_of_its_own_org_only(
    tenant_a: Tenant, tenant_b: Tenant, receiver: Receiver
) -> None:
    persona = tenant_a.org.personas.get()
    _, raw = secret_key_create(org=tenant_a.org, name="tools")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    base = f"/api/v1/personas/{persona.pk}/tools/"
    created = api.post(
        base,
        {
            "name": "lookup_order",
            "description": "Look up an order.",
            "parameters": ORDER,
            "url": receiver.url,
            "headers": {"X-Api-Key": "k-2"},
        },
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    made = created.json()
    assert made["secret"].startswith("whsec_") and made["has_headers"] is True
    assert "headers" not in made
    listed = api.get(base).json()
    assert [t["name"] for t in listed] == ["lookup_order"] and "secret" not in listed[0]
    changed = api.patch(
        f"{base}{made['id']}/", {"timeout_ms": 2000}, content_type="application/json"
    )
    assert changed.status_code == 200 and changed.json()["timeout_ms"] == 2000
    tested = api.post(
        f"{base}{made['id']}/test/",
        {"arguments": {"order_number": "A9"}},
        content_type="application/json",
    ).json()
    assert tested["ok"] is True and tested["status"] == 200 and tested["output"] == STATUS.decode()
    bad = api.post(
        base,
        {"name": "take_message", "description": "x", "url": receiver.url},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "built-in action" in json.dumps(bad.json())
    # another organization's key sees none of it
    _, other = secret_key_create(org=tenant_b.org, name="other")
    foreign = Client(HTTP_AUTHORIZATION=f"Bearer {other}")
    assert foreign.get(base).status_code == 404
    assert (
        foreign.post(f"{base}{made['id']}/test/", {}, content_type="application/json").status_code
        == 404
    )
    assert api.delete(f"{base}{made['id']}/").status_code == 204
    assert not PersonaTool.objects.exists()
