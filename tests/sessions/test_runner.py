"""Starting and resuming calls in-process: the runner's bookkeeping, without a socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sessions.auth import AuthError, CallGrant
from sessions.models import Call
from sessions.runner import start_realtime_session
from tests.support.llm_server import LLMServer
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from voiceapp.engine.knowledge import Fact
from voiceapp.personas.services import persona_fact_create, persona_update
from voiceapp.tenants.services import llm_endpoint_create, secret_key_create

pytestmark = pytest.mark.django_db(transaction=True)


def grant_for(tenant: Tenant) -> CallGrant:
    """A grant as a secret key of `tenant` gives it (resuming needs the same key)."""
    persona = tenant.org.personas.get()
    persona.agent_speaks_first = False
    persona.save()
    key, _ = secret_key_create(org=tenant.org, name="runner tests")
    return CallGrant(
        org_id=tenant.org.pk,
        persona_id=persona.pk,
        persona_slug=persona.slug,
        session_config={},
        secret_key_id=key.pk,
    )


async def wait_ended(call_id: str) -> Call:
    for _ in range(100):
        call = await Call.objects.aget(pk=call_id)
        if call.ended_at is not None:
            return call
        await asyncio.sleep(0.1)
    raise AssertionError("call not ended")


def test_resume_restores_history_and_the_record(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_RESUME_WINDOW_S = 2
    grant = grant_for(tenant_a)

    async def scenario() -> tuple[list[dict[str, str]], str, str, Call]:
        first = await start_realtime_session(grant=grant, transport=ListTransport(), client_info={})
        await first.handle_text(
            '{"type": "conversation.item.create", "item": {"type": "message",'
            ' "role": "user", "content": [{"type": "input_text",'
            ' "text": "My name is Zelda."}]}}'
        )
        await first.close("lost")
        second = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}, resume=first.id
        )
        history = list(second.call.history)
        await second.close("hangup")
        call_id = first.id.removeprefix("sess_")
        import uuid

        return history, first.id, second.id, await wait_ended(str(uuid.UUID(call_id)))

    history, first_id, second_id, call = asyncio.run(scenario())

    assert history == [{"role": "user", "content": "My name is Zelda."}]
    assert first_id == second_id
    assert call.end_reason == "hangup"
    assert Call.objects.count() == 1


def test_lost_call_ends_after_the_resume_window(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_RESUME_WINDOW_S = 1
    grant = grant_for(tenant_a)

    async def scenario() -> tuple[Call, str]:
        session = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}
        )
        await session.close("lost")
        import uuid

        call = await wait_ended(str(uuid.UUID(session.id.removeprefix("sess_"))))
        with pytest.raises(AuthError) as exc:
            await start_realtime_session(
                grant=grant, transport=ListTransport(), client_info={}, resume=session.id
            )
        return call, exc.value.code

    call, code = asyncio.run(scenario())

    assert call.end_reason == "lost"
    assert code == "resume_not_possible"


def test_other_org_cannot_resume(tenant_a: Tenant, tenant_b: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_RESUME_WINDOW_S = 2

    grant_a, grant_b = grant_for(tenant_a), grant_for(tenant_b)

    async def scenario() -> str:
        session = await start_realtime_session(
            grant=grant_a, transport=ListTransport(), client_info={}
        )
        await session.close("lost")
        try:
            await start_realtime_session(
                grant=grant_b,
                transport=ListTransport(),
                client_info={},
                resume=session.id,
            )
        except AuthError as exc:
            return exc.code
        finally:
            await asyncio.sleep(1.5)  # let the first call's resume window close it
        return "resumed"

    assert asyncio.run(scenario()) == "resume_not_possible"


def test_a_call_runs_with_the_personas_facts(tenant_a: Tenant) -> None:
    # given a persona with facts
    grant = grant_for(tenant_a)
    persona = tenant_a.org.personas.get()
    persona_fact_create(persona=persona, question="When are you open?", answer="9 to 5.")
    persona_fact_create(persona=persona, answer="We are at Main Street 1.")

    # when a call starts (in the event loop, where the ORM may not be used directly)
    async def scenario() -> tuple[Fact, ...]:
        session = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}
        )
        facts = session.call.config.facts
        await session.close("hangup")
        return facts

    # then the call's engine config carries them, in order
    assert asyncio.run(scenario()) == (
        Fact(answer="9 to 5.", question="When are you open?"),
        Fact(answer="We are at Main Street 1.", question=""),
    )


# --- Bring your own LLM: a persona's endpoint answers its calls' LLM turns ------

ASK_TEXT_ONLY = [
    '{"type": "session.update", "session": {"type": "realtime", "output_modalities": ["text"]}}',
    '{"type": "conversation.item.create", "item": {"type": "message", "role": "user",'
    ' "content": [{"type": "input_text", "text": "What is the capital of France?"}]}}',
    '{"type": "response.create"}',
]


async def ask_until_done(grant: CallGrant) -> list[dict[str, Any]]:
    """A text-only turn (no ASR or TTS needed: no worker runs in these tests)."""
    transport = ListTransport()
    session = await start_realtime_session(grant=grant, transport=transport, client_info={})
    try:
        for event in ASK_TEXT_ONLY:
            await session.handle_text(event)
        for _ in range(600):
            if any(e["type"] == "response.done" for e in transport.events):
                break
            await asyncio.sleep(0.05)
    finally:
        await session.close("hangup")
    return transport.events


def test_a_personas_endpoint_answers_its_calls(tenant_a: Tenant, llm_server: LLMServer) -> None:
    # given the org's default endpoint: a real llama.cpp server that requires its key
    llm_endpoint_create(
        org=tenant_a.org,
        name="own server",
        base_url=llm_server.base_url,
        model=llm_server.model,
        api_key=llm_server.api_key,
        is_default=True,
    )
    persona = tenant_a.org.personas.get()
    persona_update(persona=persona, temperature=0.0)  # the same reply on every run
    grant = grant_for(tenant_a)
    before = llm_server.completions()
    # when the caller asks a question
    events = asyncio.run(ask_until_done(grant))
    # then the endpoint answered it (no inference worker runs here at all)
    done = next(e for e in events if e["type"] == "response.done")["response"]
    assert done["status"] == "completed", events
    text = done["output"][0]["content"][0]["text"]
    assert "paris" in text.lower()
    assert llm_server.completions() == before + 1


def test_a_failing_endpoint_fails_the_response_with_a_clear_error(
    tenant_a: Tenant, llm_server: LLMServer
) -> None:
    # given a persona whose own endpoint has a wrong key
    endpoint = llm_endpoint_create(
        org=tenant_a.org,
        name="misconfigured",
        base_url=llm_server.base_url,
        model=llm_server.model,
        api_key="sk-not-the-right-key",
    )
    grant = grant_for(tenant_a)
    persona_update(persona=tenant_a.org.personas.get(), llm_endpoint=endpoint)
    # when the caller asks a question
    events = asyncio.run(ask_until_done(grant))
    # then an error event names the cause, the response fails, and the call goes on
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["llm_endpoint_unauthorized"]
    assert "refused the API key" in errors[0]["message"]
    assert "sk-not-the-right-key" not in json.dumps(events)
    done = next(e for e in events if e["type"] == "response.done")["response"]
    assert done["status"] == "failed"


def test_a_server_error_or_a_failed_start_frees_the_calls_slots_at_once(
    tenant_a: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessions.live import live_store

    grant = grant_for(tenant_a)

    async def held() -> tuple[int, int]:
        store = live_store()  # (one per event loop)
        return await store.active(org_id=tenant_a.org.pk), await store.pool_active()

    async def scenario() -> tuple[tuple[int, int], tuple[int, int], float, tuple[int, int]]:
        # given a call in progress
        session = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}
        )
        during = await held()
        # when handling something fails unexpectedly on the server
        started = asyncio.get_running_loop().time()
        try:
            raise RuntimeError("a bug")
        except RuntimeError:
            await session.fail("handling an event")
        ended_in = asyncio.get_running_loop().time() - started
        after_error = await held()
        # and a call whose start fails part-way (its models cannot be reached)
        monkeypatch.setattr(
            "sessions.runner.get_inference", lambda: (_ for _ in ()).throw(OSError("no worker"))
        )
        with pytest.raises(OSError):
            await start_realtime_session(grant=grant, transport=ListTransport(), client_info={})
        return during, after_error, ended_in, await held()

    during, after_error, ended_in, after_failed_start = asyncio.run(scenario())

    # then the call held one organization slot and one pool slot, and both were
    # free as soon as the error ended it, within the close budget
    assert during == (1, 1)
    assert after_error == (0, 0) and ended_in < 4.5
    # and the failed start holds nothing and leaves its record ended
    assert after_failed_start == (0, 0)
    reasons = sorted(Call.objects.values_list("end_reason", flat=True))
    assert reasons == ["error", "error"]
