"""An inference worker killed (SIGKILL) mid-reply: the reply fails over to the
other worker or fails within 2 s, and the call goes on to answer the next question."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from typing import Any

import pytest

from sessions.models import Call
from tests.support.calls import wait_calls_ended
from tests.support.faults import (
    FaultStack,
    busiest,
    connect,
    events_until_done,
    next_of,
    reply_text,
    say_text,
    slot_counts,
)
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(150), pytest.mark.slow]

FAIL_WITHIN_S = 2.0


def test_worker_killed_mid_reply(
    fault_server: FaultStack, secret_key_a: str, quiet_persona: Persona, tenant_a: Tenant
) -> None:
    quiet_persona.instructions = "You tell long, detailed stories of at least ten sentences."
    quiet_persona.max_reply_tokens = 300
    quiet_persona.save()
    assert len(fault_server.workers) == 2

    async def scenario() -> dict[str, Any]:
        # given a call with a long reply under way
        ws = await connect(fault_server, secret_key_a)
        await next_of(ws, "session.created")
        await say_text(ws, "Tell me a long story about a brave little dragon.")
        await next_of(ws, "response.output_audio.delta")

        # when the worker serving it (the busier of the two) is killed
        victim = await asyncio.to_thread(busiest, fault_server.workers)
        os.kill(fault_server.workers[victim].pid, signal.SIGKILL)
        killed = time.monotonic()
        events: list[dict[str, Any]] = []
        arrivals: list[float] = []
        async with asyncio.timeout(60):
            while True:
                events.append(json.loads(await ws.recv()))
                arrivals.append(time.monotonic() - killed)
                if events[-1]["type"] == "response.done":
                    break
        # then the call answers the next question on the worker left
        await say_text(ws, "What is the capital of France? One short sentence.")
        answer = await events_until_done(ws, timeout_s=60)
        await ws.close()
        return {"victim": victim, "events": events, "arrivals": arrivals, "answer": answer}

    result = asyncio.run(scenario())
    fault_server.workers.pop(result["victim"]).wait(10)
    wait_calls_ended()

    events, arrivals = result["events"], result["arrivals"]
    done = events[-1]["response"]
    done_s = arrivals[-1]
    audio_after = [t for e, t in zip(events, arrivals, strict=True) if "audio.delta" in e["type"]]
    if done["status"] == "failed":
        outcome = (
            f"failed ({done['status_details']['error']['code']}) {done_s:.2f} s after the kill"
        )
        assert done_s < FAIL_WITHIN_S, outcome
    else:
        # failed over: the reply's audio went on, from the other worker
        assert done["status"] == "completed", done
        gaps = [b - a for a, b in zip([0.0, *audio_after], audio_after, strict=False)]
        outcome = f"failed over: the longest audio gap after the kill {max(gaps):.2f} s"
        assert audio_after and max(gaps) < FAIL_WITHIN_S, outcome
    print(f"\nworker killed mid-reply: {outcome}")
    answer = result["answer"][-1]["response"]
    assert answer["status"] == "completed", answer
    assert reply_text(result["answer"]).strip()
    assert Call.objects.get().end_reason == "hangup"
    assert asyncio.run(slot_counts(fault_server, tenant_a.org.pk)) == (0, 0)
