"""Draining a web process (a Kubernetes preStop hook): it refuses new calls, its
readiness probe fails, and its running call goes on to its end; `drain_web`
returns once that call is over. Through daphne and a separate inference worker,
on real Postgres and Redis."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import websockets
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from sessions.live import RedisLiveStore
from tests.sessions.test_actions import text_event
from tests.sessions.test_realtime_ws import next_of, raw_connect
from tests.support.calls import wait_calls_ended
from tests.support.live_server import LiveServer
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


def probe(server: LiveServer, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{server.url}{path}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def readiness_becomes(server: LiveServer, status: int, timeout_s: float = 5) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        got, body = probe(server, "/readyz")
        if got == status or time.monotonic() > deadline:
            assert got == status, body
            return body
        time.sleep(0.1)


def clear_drain(server: LiveServer, instance: str) -> None:
    async def clear() -> None:
        store = RedisLiveStore(_redis_url(), pool=server.pool)
        try:
            await store.clear_draining(instance)
        finally:
            await store.aclose()

    asyncio.run(clear())
    # the server trusts its last reading for up to a second: the next test's call must
    # not meet it
    readiness_becomes(server, 200)


def _redis_url() -> str:
    from django.conf import settings

    return str(settings.REDIS_URL)


@override_settings(SECURE_SSL_REDIRECT=True, ALLOWED_HOSTS=["voice.example.com"])
def test_probes_answer_a_kubelet_on_the_pods_own_address() -> None:
    # given a production host setting (HTTPS only, one allowed host name)
    client = Client()
    # when a kubelet calls the probes over plain HTTP on the pod's IP
    health = client.get("/healthz", HTTP_HOST="10.42.0.7:8000")
    ready = client.get("/readyz", HTTP_HOST="10.42.0.7:8000")
    # then both answer, without a redirect or a host refusal
    assert health.status_code == 200 and health.json() == {"ok": True}
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert ready.json()["calls"] == 0 and ready.json()["instance"]
    # and the rest of the site still refuses that host
    assert client.get("/", HTTP_HOST="10.42.0.7:8000").status_code == 400
    # and a probe takes no writes
    assert client.post("/readyz", HTTP_HOST="10.42.0.7:8000").status_code == 405


def test_a_draining_web_process_refuses_new_calls_and_finishes_its_own(
    voice_server: LiveServer, secret_key_a: str, quiet_persona: Persona
) -> None:
    status, ready = probe(voice_server, "/readyz")
    assert status == 200 and ready["ready"] is True
    instance = ready["instance"]
    out = io.StringIO()
    drained: list[BaseException | None] = []

    def drain() -> None:
        try:
            with override_settings(CHANNELS_PREFIX=voice_server.pool):
                call_command(
                    "drain_web",
                    "--wait=120",
                    f"--url={voice_server.url}/readyz",
                    f"--instance={instance}",
                    "--poll=0.2",
                    stdout=out,
                )
            drained.append(None)
        except BaseException as exc:
            drained.append(exc)

    async def scenario() -> dict[str, Any]:
        # given a call in progress
        ws = await raw_connect(voice_server, secret_key_a)
        await next_of(ws, "session.created")
        # when the process is drained (as a pod's preStop hook does)
        drainer = threading.Thread(target=drain)
        drainer.start()
        busy = await asyncio.to_thread(readiness_becomes, voice_server, 503)
        # then a new caller is refused with a clear error, and told to connect again
        refused = await raw_connect(voice_server, secret_key_a)
        error = await next_of(refused, "error")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await refused.recv()
        # and the running call still answers, to its end
        await ws.send(text_event("What is the capital of France?"))
        await ws.send(json.dumps({"type": "response.create"}))
        done = await next_of(ws, "response.done", timeout_s=90)
        still_waiting = drainer.is_alive()
        await ws.close()
        await asyncio.to_thread(drainer.join, 30)
        return {
            "busy": busy,
            "error": error["error"],
            "close_code": closed.value.rcvd.code if closed.value.rcvd else None,
            "done": done["response"],
            "still_waiting": still_waiting,
        }

    try:
        result = asyncio.run(scenario())
        wait_calls_ended()
        assert result["busy"]["reason"] == "draining" and result["busy"]["calls"] == 1
        assert result["error"]["code"] == "server_draining"
        assert "connect again" in result["error"]["message"]
        assert result["close_code"] == 4503
        assert result["done"]["status"] == "completed"
        # and the drain waited for that call, and returned once it was over
        assert result["still_waiting"] and drained == [None], out.getvalue()
        assert "Drained after" in out.getvalue() and "1 call(s) in progress" in out.getvalue()
        # and once undone, the process takes calls again
        with override_settings(CHANNELS_PREFIX=voice_server.pool):
            call_command("drain_web", "--undo", f"--instance={instance}", stdout=io.StringIO())
        assert readiness_becomes(voice_server, 200)["ready"] is True

        async def call_again() -> str:
            ws = await raw_connect(voice_server, secret_key_a)
            try:
                return str((await next_of(ws, "session.created"))["type"])
            finally:
                await ws.close()

        assert asyncio.run(call_again()) == "session.created"
        wait_calls_ended()
    finally:
        clear_drain(voice_server, instance)


def test_a_drain_that_outlasts_its_wait_says_so(
    voice_server: LiveServer, secret_key_a: str, quiet_persona: Persona
) -> None:
    instance = probe(voice_server, "/readyz")[1]["instance"]

    async def scenario() -> None:
        ws = await raw_connect(voice_server, secret_key_a)
        await next_of(ws, "session.created")
        try:
            with override_settings(CHANNELS_PREFIX=voice_server.pool):
                await asyncio.to_thread(
                    call_command,
                    "drain_web",
                    "--wait=1",
                    f"--url={voice_server.url}/readyz",
                    f"--instance={instance}",
                    "--poll=0.2",
                    stdout=io.StringIO(),
                )
        finally:
            await ws.close()

    try:
        with pytest.raises(CommandError, match=r"1 call\(s\) still in progress .* after 1 s"):
            asyncio.run(scenario())
        wait_calls_ended()
    finally:
        clear_drain(voice_server, instance)
