"""A persona's built-in actions in a real call, in-process (the runner, a realtime
session, the recorder, the embedded models): take_message stores the caller's
message, shows it in the inbox, emails the owner and sends a signed
message.taken webhook; end_call says goodbye and hangs up; a slow action gets a
filler line and a failing one an apology, and neither drops the call.

With the embedded model the actions are taken by rules over the caller's words
(voiceapp/engine/intents.py); tests/engine/test_intents.py has their cases."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from standardwebhooks import Webhook

from sessions.actions import MESSAGE_TAKEN, PersonaActions
from sessions.models import Call, CallerMessage, CallItem, CallTurn
from sessions.realtime import session as realtime_session
from sessions.realtime.actions import ActionResult
from sessions.runner import start_realtime_session
from tests.sessions.test_runner import grant_for, wait_ended
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from tests.support.webhook_receiver import Receiver, webhook_receiver
from voiceapp.engine.prompt import MESSAGE_DECLINE
from voiceapp.inference import runtime
from voiceapp.personas.services import persona_fact_create
from voiceapp.tenants.services import secret_key_create
from webhooks.services import webhook_endpoint_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

CALLER = "My name is Ann Lee. Please call me back on 555 0134 about my birthday cake order."
ANSWER = "Yes please, this is Tom Baker, my number is 07700 900123."
HOURS = "We are open from 8 to 4, Monday to Saturday."


def text_event(text: str) -> str:
    return json.dumps(
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
            },
        }
    )


@pytest.fixture(autouse=True)
def embedded(settings: Any, monkeypatch: pytest.MonkeyPatch, models: Any) -> None:
    """The models in this process (the session's worker runs in its event loop)."""
    settings.INFERENCE_EMBEDDED = True
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    monkeypatch.setattr(runtime, "_local", models)


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True  # the test receiver is on loopback
    with webhook_receiver() as running:
        yield running


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


async def until(transport: ListTransport, done: Any, timeout_s: float = 90) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if done(transport.events):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(
        f"not seen in {timeout_s} s; events: {[e['type'] for e in transport.events]}"
    )


def with_actions(tenant: Tenant, *actions: str) -> None:
    persona = tenant.org.personas.get()
    persona.actions = list(actions)
    persona.temperature = 0.0  # a 135M model drifts when sampling
    persona.save()


def test_take_message_stores_shows_emails_and_emits_it(
    tenant_a: Tenant, receiver: Receiver
) -> None:
    _, secret = webhook_endpoint_create(
        org=tenant_a.org, url=receiver.url, events=["message.taken"]
    )
    grant = grant_for(tenant_a)
    with_actions(tenant_a, "take_message", "end_call")
    persona = tenant_a.org.personas.get()
    persona_fact_create(persona=persona, question="When are you open?", answer=HOURS)
    transport = ListTransport()

    async def call() -> str:
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        # a question no fact answers: declined, with the offer of a message
        await session.handle_text(text_event("Do you cater weddings?"))
        await session.handle_text('{"type": "response.create"}')
        await until(transport, lambda ev: len(of_type(ev, "response.done")) >= 1)
        # the caller takes it up: the action's call, then the confirmation
        await session.handle_text(text_event(ANSWER))
        await session.handle_text('{"type": "response.create"}')
        await until(transport, lambda ev: len(of_type(ev, "response.done")) >= 3)
        await session.close("hangup")
        call_id = str(uuid.UUID(session.id.removeprefix("sess_")))
        await wait_ended(call_id)
        return call_id

    call_id = asyncio.run(call())

    events = transport.events
    assert not of_type(events, "error")
    assert _transcripts(events) == [MESSAGE_DECLINE, MESSAGE_TAKEN]
    # the client never sees the action's call: it is the server's to run
    assert not of_type(events, "response.function_call_arguments.done")
    assert all(i["type"] != "function_call" for i in _items(events))
    called = of_type(events, "response.done")[1]["response"]
    assert called["status"] == "completed" and called["output"] == []
    assert of_type(events, "response.output_audio.delta")

    taken = CallerMessage.objects.get()
    assert str(taken.call_id) == call_id and taken.org == tenant_a.org
    assert taken.name == "Tom Baker" and taken.callback_number == "07700 900123"
    assert taken.message == f"Do you cater weddings? {ANSWER}" and taken.read_at is None
    assert taken.persona_name == tenant_a.org.personas.get().name
    tool = CallItem.objects.get(call_id=call_id, role="tool")
    assert tool.tool["name"] == "take_message" and tool.tool["ok"] is True
    assert json.loads(tool.tool["output"])["message_id"] == taken.pk
    assert isinstance(tool.tool["ms"], int)
    # the turn that called it has a tool span (the rules wrote the call at once)
    (calling,) = CallTurn.objects.filter(call_id=call_id).exclude(tool_ms=None)
    assert 0 <= calling.tool_ms < 1000

    # the webhook, signed
    bodies = [Webhook(secret).verify(r.body, r.headers) for r in receiver.received]
    assert [b["type"] for b in bodies] == ["message.taken"]
    data = bodies[0]["data"]
    assert data["id"] == taken.pk and data["call_id"] == call_id
    assert data["message"] == taken.message and data["callback_number"] == taken.callback_number

    # the owner's email
    assert len(mail.outbox) == 1
    email = mail.outbox[0]
    assert email.to == [tenant_a.owner.email]
    assert taken.message in email.body and "/dashboard/messages/" in email.body

    # the inbox, with its unread count, and marking the message read
    client = Client()
    client.force_login(tenant_a.owner)
    page = client.get("/dashboard/messages/")
    html = page.content.decode()
    assert page.status_code == 200
    assert taken.message in html or taken.message[:40] in html
    assert 'aria-label="1 unread"' in html
    marked = client.post(f"/dashboard/messages/{taken.pk}/mark/", {"read": "1"})
    assert marked.status_code == 302
    taken.refresh_from_db()
    assert taken.read_at is not None
    assert 'aria-label="1 unread"' not in client.get("/dashboard/messages/").content.decode()
    # the API's call shows the action and counts it, and so does the usage
    _, raw = secret_key_create(org=tenant_a.org, name="reader")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    detail_json = api.get(f"/api/v1/calls/{call_id}/").json()
    assert detail_json["tool_calls"] == 1
    (action,) = [i for i in detail_json["transcript"] if i["role"] == "tool"]
    assert action["tool"]["name"] == "take_message"
    assert json.loads(action["tool"]["arguments"])["callback_number"] == "07700 900123"
    assert api.get("/api/v1/usage/").json()["tool_calls"] == 1
    # the transcript shows the action in its place
    detail = client.get(f"/dashboard/calls/{call_id}/").content.decode()
    assert "<code>take_message</code>" in detail


def test_end_call_says_goodbye_and_hangs_up(tenant_a: Tenant) -> None:
    grant = grant_for(tenant_a)
    with_actions(tenant_a, "end_call")
    transport = ListTransport()

    async def call() -> tuple[str, RealtimeEnd]:
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        await session.handle_text(text_event("Thanks, that's all I needed. Goodbye!"))
        await session.handle_text('{"type": "response.create"}')
        async with asyncio.timeout(90):
            await session.ended.wait()
        call_id = str(uuid.UUID(session.id.removeprefix("sess_")))
        return call_id, RealtimeEnd(session.end_reason, transport.closed)

    call_id, end = asyncio.run(call())
    assert end.reason == "agent_hangup"
    assert end.closed == (1000, "agent_hangup")
    done = of_type(transport.events, "response.done")
    words = [
        o["content"][0]["transcript"]
        for d in done
        for o in d["response"]["output"]
        if o["type"] == "message"
    ]
    assert any("goodbye" in w.lower() for w in words)  # said before the line went down
    assert of_type(transport.events, "response.output_audio.delta")
    ended = Call.objects.get(pk=call_id)
    assert ended.end_reason == "agent_hangup" and ended.ended_at is not None
    assert CallItem.objects.filter(call_id=call_id, role="tool", tool__name="end_call").exists()


class RealtimeEnd:
    def __init__(self, reason: str | None, closed: tuple[int, str] | None) -> None:
        self.reason = reason
        self.closed = closed


class SlowThenFailing(PersonaActions):
    """take_message that takes longer than the filler threshold, then fails."""

    async def run(self, name: str, arguments: str) -> ActionResult:
        await asyncio.sleep(realtime_session.ACTION_FILLER_AFTER_S + 0.5)
        raise RuntimeError("the message store is down")


def test_a_slow_action_gets_a_filler_and_a_failing_one_an_apology(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sessions.runner.PersonaActions", SlowThenFailing)
    grant = grant_for(tenant_a)
    with_actions(tenant_a, "take_message")
    transport = ListTransport()

    async def call() -> str:
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        await session.handle_text(text_event(CALLER))
        await session.handle_text('{"type": "response.create"}')
        apology = realtime_session.ACTION_APOLOGY
        await until(transport, lambda ev: apology in _transcripts(ev))
        await session.handle_text(
            json.dumps({"type": "session.update", "session": {"tool_choice": "none"}})
        )
        await session.handle_text(text_event("Never mind. What is two plus two?"))
        await session.handle_text('{"type": "response.create"}')
        await until(transport, lambda ev: len(of_type(ev, "response.done")) >= 4)
        await session.close("hangup")
        call_id = str(uuid.UUID(session.id.removeprefix("sess_")))
        await wait_ended(call_id)
        return call_id

    call_id = asyncio.run(call())
    said = _transcripts(transport.events)
    # the call's silent reply, the filler, the apology, and the call goes on
    assert said[:2] == [realtime_session.ACTION_FILLER, realtime_session.ACTION_APOLOGY]
    assert len(said) >= 3 and said[2].strip()
    assert not CallerMessage.objects.exists()
    tool = CallItem.objects.get(call_id=call_id, role="tool")
    assert tool.tool["ok"] is False and "failed" in tool.tool["output"]
    assert tool.tool["ms"] >= 1000 * realtime_session.ACTION_FILLER_AFTER_S
    assert Call.objects.get(pk=call_id).end_reason == "hangup"


def _items(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["item"] for e in events if "item" in e]


def _transcripts(events: list[dict[str, Any]]) -> list[str]:
    return [e["transcript"] for e in of_type(events, "response.output_audio_transcript.done")]


class Slow(PersonaActions):
    """take_message that takes longer than the filler threshold, then succeeds."""

    async def run(self, name: str, arguments: str) -> ActionResult:
        await asyncio.sleep(realtime_session.ACTION_FILLER_AFTER_S + 1.5)
        return ActionResult(output='{"stored": true}', say=MESSAGE_TAKEN)


def test_a_caller_who_speaks_during_an_action_is_answered_first(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sessions.runner.PersonaActions", Slow)
    grant = grant_for(tenant_a)
    with_actions(tenant_a, "take_message")
    transport = ListTransport()
    filler = realtime_session.ACTION_FILLER

    async def call() -> None:
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        await session.handle_text(text_event(CALLER))
        await session.handle_text('{"type": "response.create"}')
        # while the action runs and its filler plays, the caller asks something else
        await until(transport, lambda ev: filler in _deltas(ev))
        await session.handle_text(text_event("And what is two plus two?"))
        await session.handle_text('{"type": "response.create"}')
        await until(transport, lambda ev: MESSAGE_TAKEN in _transcripts(ev))
        await session.close("hangup")

    asyncio.run(call())
    done = [e["response"] for e in of_type(transport.events, "response.done")]
    said = [(r["status"], [o["content"][0]["transcript"] for o in r["output"]]) for r in done]
    # the action's silent call; its filler, cut by the caller's turn; that turn answered
    # in full; and only then the action's result, not over the caller's answer
    assert [status for status, _ in said] == ["completed", "cancelled", "completed", "completed"]
    assert said[0][1] == [] and said[1][1] == [filler]
    assert said[2][1][0] not in (filler, MESSAGE_TAKEN) and said[2][1][0].strip()
    assert said[3][1] == [MESSAGE_TAKEN]


def _deltas(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of_type(events, "response.output_audio_transcript.delta"))


HANDOFF = "Please call Sam on 555 0100, or use the contact form I am showing you now."


def test_transfer_call_hands_the_caller_over_and_tells_the_business(
    tenant_a: Tenant, receiver: Receiver
) -> None:
    # given a persona that hands callers who ask for a person to Sam
    _, secret = webhook_endpoint_create(
        org=tenant_a.org, url=receiver.url, events=["call.transfer_requested"]
    )
    grant = grant_for(tenant_a)
    with_actions(tenant_a, "take_message", "transfer_call")
    persona = tenant_a.org.personas.get()
    persona.handoff_text, persona.handoff_url = HANDOFF, "https://shop.test/contact"
    persona.save()
    transport = ListTransport()

    async def call() -> tuple[str, bool]:
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        # when the caller asks for a person
        await session.handle_text(text_event("Can I talk to a real person, please?"))
        await session.handle_text('{"type": "response.create"}')
        await until(transport, lambda ev: len(of_type(ev, "response.done")) >= 2)
        still_on = not session.ended.is_set()
        await session.close("hangup")
        call_id = str(uuid.UUID(session.id.removeprefix("sess_")))
        await wait_ended(call_id)
        return call_id, still_on

    call_id, still_on = asyncio.run(call())

    # then the agent says the handoff text, and its response.done carries the handoff
    events = transport.events
    assert not of_type(events, "error")
    assert _transcripts(events) == [HANDOFF]
    handoffs = [d["response"]["handoff"] for d in of_type(events, "response.done")[1:]]
    assert handoffs == [
        {
            "reason": "Can I talk to a real person, please?",
            "text": HANDOFF,
            "url": "https://shop.test/contact",
        }
    ]
    # and the call goes on until the caller hangs up
    assert still_on and Call.objects.get(pk=call_id).end_reason == "hangup"
    # and the record has the action, and the business a signed webhook
    tool = CallItem.objects.get(call_id=call_id, role="tool")
    assert tool.tool["name"] == "transfer_call" and tool.tool["ok"] is True
    bodies = [Webhook(secret).verify(r.body, r.headers) for r in receiver.received]
    assert [b["type"] for b in bodies] == ["call.transfer_requested"]
    data = bodies[0]["data"]
    assert data["call_id"] == call_id and data["reason"] == "Can I talk to a real person, please?"
    assert data["handoff_text"] == HANDOFF and data["handoff_url"] == "https://shop.test/contact"


def test_transfer_call_needs_a_handoff_text(tenant_a: Tenant) -> None:
    from django.core.exceptions import ValidationError

    persona = tenant_a.org.personas.get()
    persona.actions = ["transfer_call"]
    with pytest.raises(ValidationError) as refused:
        persona.full_clean()
    assert "handoff_text" in refused.value.message_dict
    persona.handoff_text, persona.handoff_url = HANDOFF, "http://shop.test/contact"
    with pytest.raises(ValidationError) as refused:
        persona.full_clean()
    assert refused.value.message_dict == {"handoff_url": ["Give an https:// link."]}
    # and through the dashboard's form, the owner sees the same error on the page
    from django.urls import reverse

    from tests.dashboard.test_pages import persona_form

    page = tenant_a.client.post(
        reverse("dashboard:persona_edit", args=[persona.pk]),
        persona_form(persona.voice_id, slug=persona.slug, actions=["transfer_call"]),
    )
    assert page.status_code == 200
    assert "Write what a caller who asks for a person hears" in page.content.decode()
    saved = tenant_a.client.post(
        reverse("dashboard:persona_edit", args=[persona.pk]),
        persona_form(
            persona.voice_id, slug=persona.slug, actions=["transfer_call"], handoff_text=HANDOFF
        ),
    )
    assert saved.status_code == 302
    persona.refresh_from_db()
    assert persona.actions == ["transfer_call"] and persona.handoff_text == HANDOFF
