"""The caller's network drops mid-call: the call resumes within 15 s, with its history."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from sessions.models import Call, CallItem
from tests.support.calls import wait_calls_ended
from tests.support.faults import (
    FaultStack,
    connect,
    events_until_done,
    next_of,
    say_text,
    slot_counts,
)
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120), pytest.mark.slow]

RESUME_LIMIT_S = 15.0


def test_dropped_network_resumes_within_15_s(
    fault_server: FaultStack, secret_key_a: str, quiet_persona: Persona, tenant_a: Tenant
) -> None:
    async def scenario() -> dict[str, Any]:
        # given a call with one exchange in its history
        ws = await connect(fault_server, secret_key_a)
        created = await next_of(ws, "session.created")
        session_id = created["session"]["id"]
        await say_text(ws, "My name is Zelda. Say hello to me.")
        first = await events_until_done(ws)

        # when the network drops (no close frame: the TCP connection is torn down)
        ws.transport.abort()
        dropped = time.monotonic()
        # and the client reconnects with resume at once, retrying until the
        # server has seen the drop
        resumed: dict[str, Any] | None = None
        tries = 0
        while resumed is None and time.monotonic() - dropped < RESUME_LIMIT_S:
            tries += 1
            again = await connect(
                fault_server, secret_key_a, f"model=assistant&resume={session_id}"
            )
            event = json.loads(await asyncio.wait_for(again.recv(), 10))
            if event["type"] == "session.created":
                resumed = event
                break
            await again.close()
            await asyncio.sleep(0.2)
        resume_s = time.monotonic() - dropped
        assert resumed is not None, f"not resumed within {RESUME_LIMIT_S} s"

        # then the next question is answered with the conversation so far in the prompt
        await say_text(again, "What is my name? Answer with one word.")
        second = await events_until_done(again)
        await again.close()
        return {
            "session_id": session_id,
            "resumed": resumed,
            "resume_s": resume_s,
            "tries": tries,
            "first": first[-1]["response"],
            "second": second[-1]["response"],
        }

    result = asyncio.run(scenario())
    wait_calls_ended()
    print(
        f"\nnetwork drop -> resumed session.created: {result['resume_s']:.2f} s "
        f"({result['tries']} connection attempts)"
    )

    assert result["resumed"]["session"]["id"] == result["session_id"]
    assert result["resume_s"] < RESUME_LIMIT_S
    assert result["second"]["status"] == "completed"
    first_prompt = result["first"]["usage"]["input_tokens"]
    second_prompt = result["second"]["usage"]["input_tokens"]
    # the first question, its answer and the new question are all in the prompt
    assert second_prompt > first_prompt + result["first"]["usage"]["output_tokens"]
    call = Call.objects.get()
    assert call.end_reason == "hangup"
    assert [i.text for i in CallItem.objects.filter(call=call, role="user")] == [
        "My name is Zelda. Say hello to me.",
        "What is my name? Answer with one word.",
    ]
    assert CallItem.objects.filter(call=call, role="assistant").count() == 2
    assert asyncio.run(slot_counts(fault_server, tenant_a.org.pk)) == (0, 0)
