"""Two web processes behind haproxy on one Redis and one Postgres, as two nodes of a
cluster: a drained one gets no new calls (they go to the other), and a call whose
web process is killed (SIGKILL) resumes through the other within 2 s, with its
history."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import websockets
from django.core.management import call_command
from django.test import override_settings

from sessions.models import Call, CallItem
from tests.support.calls import wait_calls_ended
from tests.support.faults import (
    FaultStack,
    Haproxy,
    events_until_done,
    next_of,
    reply_text,
    say_text,
    slot_counts,
)
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240), pytest.mark.slow]

RESUMED_WITHIN_S = 2.0


def readiness(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return dict(json.loads(r.read()))
    except urllib.error.HTTPError as exc:
        return dict(json.loads(exc.read()))


def wait_ready(port: int, ready: bool, timeout_s: float = 5) -> None:
    deadline = time.monotonic() + timeout_s
    while readiness(port)["ready"] is not ready:
        assert time.monotonic() < deadline, readiness(port)
        time.sleep(0.1)


def drain(stack: FaultStack, instance: str, *, undo: bool = False) -> None:
    """`manage.py drain_web` for a web process of the stack, without waiting."""
    args = ["--undo"] if undo else ["--wait=0", "--url=http://127.0.0.1:9/readyz"]
    with override_settings(REDIS_URL=stack.redis.url, CHANNELS_PREFIX=stack.prefix):
        call_command("drain_web", f"--instance={instance}", *args, stdout=io.StringIO())


async def through(lb: Haproxy, key: str, query: str = "model=assistant") -> Any:
    return await websockets.connect(
        f"{lb.ws_url}/v1/realtime?{query}",
        additional_headers={"Authorization": f"Bearer {key}"},
        max_size=None,
    )


async def resume(lb: Haproxy, key: str, session_id: str, timeout_s: float) -> Any:
    """Reconnect with `resume=` until a process takes the call (refusals while the
    dead process's lease has not lapsed, or its backend not yet marked down)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            ws = await through(lb, key, f"model=assistant&resume={session_id}")
            first = json.loads(await ws.recv())
            if first["type"] == "session.created":
                return ws, first
            await ws.close()
        except (OSError, websockets.InvalidStatus, websockets.ConnectionClosed):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"not resumed within {timeout_s} s")
        await asyncio.sleep(0.1)


async def live_state(stack: FaultStack, session_id: str) -> dict[str, Any] | None:
    """The call's live state in the stack's Redis: what a resume would start from."""
    from sessions.live import RedisLiveStore
    from sessions.runner import call_id_from_session

    store = RedisLiveStore(stack.redis.url, pool=stack.prefix)
    try:
        return await store.load(str(call_id_from_session(session_id)))
    finally:
        await store.aclose()


def test_a_call_whose_web_process_is_killed_resumes_through_the_other(
    fault_server: FaultStack, secret_key_a: str, quiet_persona: Persona, tenant_a: Tenant
) -> None:
    main_instance = readiness(fault_server.port)["instance"]
    other, other_port = fault_server.start_web("web-b")
    lb = Haproxy(fault_server.logs, {"main": fault_server.port, "b": other_port})
    lb.start()
    try:
        # given the main web process drained: haproxy sends new calls to the other
        drain(fault_server, main_instance)
        wait_ready(fault_server.port, False)
        time.sleep(0.5)  # haproxy's check (every 200 ms) sees it

        async def scenario() -> dict[str, Any]:
            ws = await through(lb, secret_key_a)
            created = await next_of(ws, "session.created")
            landed = {
                "main": await asyncio.to_thread(readiness, fault_server.port),
                "b": await asyncio.to_thread(readiness, other_port),
            }
            await say_text(ws, "My name is Zelda. Please remember it.")
            first = await events_until_done(ws)
            await asyncio.to_thread(drain, fault_server, main_instance, undo=True)
            await asyncio.to_thread(wait_ready, fault_server.port, True)
            await asyncio.sleep(0.5)  # haproxy's check sees the main process again
            # when the web process carrying the call is killed
            os.kill(other.pid, signal.SIGKILL)
            killed = time.monotonic()
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
            # then the caller resumes it through the load balancer, on the other process
            again, resumed = await resume(lb, secret_key_a, created["session"]["id"], 10)
            resumed_after_s = time.monotonic() - killed
            after = await asyncio.to_thread(readiness, fault_server.port)
            await say_text(again, "What did I say my name was? One word.")
            second = await events_until_done(again)
            await asyncio.sleep(0.5)  # the history is saved once the reply is recorded
            state = await live_state(fault_server, created["session"]["id"])
            await again.close()
            return {
                "created": created,
                "resumed": resumed,
                "landed": landed,
                "after": after,
                "first": first,
                "second": second,
                "resumed_after_s": resumed_after_s,
                "history": [m["content"] for m in (state or {}).get("history", [])],
            }

        result = asyncio.run(scenario())
        wait_calls_ended()
        slots = asyncio.run(slot_counts(fault_server, tenant_a.org.pk))
    finally:
        lb.stop()
        if other.poll() is None:
            other.kill()
        other.wait(10)
        drain(fault_server, main_instance, undo=True)

    print(f"\nweb process killed -> resumed on the other: {result['resumed_after_s']:.2f} s")
    # the drained process got no new call: the other one took it
    assert result["landed"]["main"]["calls"] == 0 and result["landed"]["b"]["calls"] == 1
    # the killed call came back on the main process, as the same session, within 2 s
    assert result["resumed"]["session"]["id"] == result["created"]["session"]["id"]
    assert result["after"]["calls"] == 1
    assert result["resumed_after_s"] <= RESUMED_WITHIN_S, result["resumed_after_s"]
    # both replies were made, and one record holds the whole call, ended by the hang-up
    assert [e["response"]["status"] for e in (result["first"][-1], result["second"][-1])] == [
        "completed",
        "completed",
    ]
    assert reply_text(result["second"])
    # and the resumed process carried the history on: the first exchange, then the second
    history = result["history"]
    assert history[0] == "My name is Zelda. Please remember it.", history
    assert history[2] == "What did I say my name was? One word." and len(history) == 4, history
    call = Call.objects.get()
    assert call.end_reason == "hangup"
    assert [i.text for i in CallItem.objects.filter(call=call, role="user")] == [
        "My name is Zelda. Please remember it.",
        "What did I say my name was? One word.",
    ]
    # and the dead process's slots were handed to the resumed call, then freed
    assert slots == (0, 0)
