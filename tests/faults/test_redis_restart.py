"""Redis restarted mid-call (every key lost): the call goes on, the next question
is answered, its slots come back with the next heartbeat, and none stays taken
once the call ends."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from sessions.models import Call
from tests.support.calls import wait_calls_ended
from tests.support.faults import (
    FaultStack,
    connect,
    events_until_done,
    next_of,
    reply_text,
    say_text,
    slot_counts,
)
from tests.support.tenants import Tenant
from voiceapp.inference.capacity import RedisPoolRegistry
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(150), pytest.mark.slow]

HEARTBEAT_WAIT_S = 15.0  # the session's heartbeat is every 10 s


async def workers_advertising(stack: FaultStack) -> int:
    registry = RedisPoolRegistry(stack.redis.url, stack.prefix)
    try:
        return len(await registry.adverts())
    finally:
        await registry.aclose()


def test_redis_restart_mid_reply_the_call_goes_on(
    fault_server: FaultStack, secret_key_a: str, quiet_persona: Persona, tenant_a: Tenant
) -> None:
    org_id = tenant_a.org.pk

    async def scenario() -> dict[str, Any]:
        # given a call holding its org slot and pool slot, with a reply under way
        ws = await connect(fault_server, secret_key_a)
        await next_of(ws, "session.created")
        slots_before = await slot_counts(fault_server, org_id)
        await say_text(ws, "Tell me about the history of Paris in three sentences.")
        await next_of(ws, "response.output_audio.delta")

        # when Redis dies and comes back empty on the same port
        fault_server.redis.kill()
        killed = time.monotonic()
        interrupted = await events_until_done(ws, timeout_s=20)
        interrupted_s = time.monotonic() - killed
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - killed)))
        fault_server.redis.start()
        restarted = time.monotonic()
        while await workers_advertising(fault_server) < len(fault_server.workers):
            assert time.monotonic() - restarted < 10, "the workers did not come back"
            await asyncio.sleep(0.2)
        workers_back_s = time.monotonic() - restarted

        # then the call answers the next question
        await say_text(ws, "What is the capital of France? One short sentence.")
        answer = await events_until_done(ws, timeout_s=60)
        # and its heartbeat puts its slots back in the new Redis
        slots_after = await slot_counts(fault_server, org_id)
        while slots_after != (1, 1) and time.monotonic() - restarted < HEARTBEAT_WAIT_S:
            await asyncio.sleep(0.5)
            slots_after = await slot_counts(fault_server, org_id)
        await ws.close()
        # and a new call starts
        other = await connect(fault_server, secret_key_a)
        new_call = await next_of(other, "session.created", timeout_s=10)
        await other.close()
        return {
            "new_call": new_call,
            "slots_before": slots_before,
            "interrupted": interrupted[-1]["response"],
            "interrupted_s": interrupted_s,
            "workers_back_s": workers_back_s,
            "answer": answer,
            "slots_after": slots_after,
        }

    result = asyncio.run(scenario())
    wait_calls_ended()
    print(
        f"\nredis restart: the reply in flight ended ({result['interrupted']['status']}) "
        f"{result['interrupted_s']:.2f} s after the kill; workers serving again "
        f"{result['workers_back_s']:.2f} s after the restart"
    )

    assert result["slots_before"] == (1, 1)
    assert result["interrupted"]["status"] in ("completed", "failed")
    assert result["answer"][-1]["response"]["status"] == "completed"
    assert reply_text(result["answer"]).strip()
    assert result["slots_after"] == (1, 1)
    assert result["new_call"]["type"] == "session.created"
    assert [c.end_reason for c in Call.objects.all()] == ["hangup", "hangup"]
    assert asyncio.run(slot_counts(fault_server, org_id)) == (0, 0)
