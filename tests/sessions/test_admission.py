"""Admission control: calls start only while the inference pool has room, from what
real workers advertise; past it, a clear `server_busy` on every way in."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
import websockets
from channels.layers import InMemoryChannelLayer
from channels.testing import WebsocketCommunicator
from django.test import Client

from sessions.admission import admit, pool_capacity, pool_state
from sessions.auth import AuthError, CallGrant, grant_from_secret_key_sync
from sessions.consumers import RealtimeConsumer
from sessions.live import RedisLiveStore, live_store
from sessions.models import Call
from sessions.runner import start_realtime_session
from tests.support.live_server import LiveServer
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from voiceapp.engine.inference import LocalInference
from voiceapp.inference.capacity import (
    MIN_SAMPLES,
    Advert,
    MemoryPoolRegistry,
    RedisPoolRegistry,
    is_overloaded,
)
from voiceapp.inference.client import ChannelsInference, ClientSettings
from voiceapp.inference.worker import InferenceWorker
from voiceapp.personas.models import Persona
from voiceapp.tenants.services import publishable_key_create, secret_key_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pool(settings: Any) -> str:
    """A pool (channel-layer prefix) of this test only."""
    settings.CHANNELS_PREFIX = f"adm{uuid.uuid4().hex[:8]}"
    return str(settings.CHANNELS_PREFIX)


def advert(
    name: str, max_calls: int, kinds: tuple[str, ...] = ("asr", "llm", "tts", "eou"), **kw: Any
) -> Advert:
    return Advert(
        worker=name,
        kinds=list(kinds),
        slots=dict.fromkeys(kinds, 1),
        busy=dict.fromkeys(kinds, 0),
        max_calls=max_calls,
        cores=2,
        cpu=0.0,
        overloaded=kw.get("overloaded", False),
        at=kw.get("at", time.time()),
    )


@contextlib.asynccontextmanager
async def advertising_worker(
    models: LocalInference, registry: Any, *, max_calls: int, **kwargs: Any
) -> AsyncIterator[InferenceWorker]:
    """A real worker with the real models, advertising into `registry`."""
    worker = InferenceWorker(
        InMemoryChannelLayer(), models, registry=registry, max_calls=max_calls, **kwargs
    )
    task = asyncio.create_task(worker.run())
    await worker.ready.wait()
    try:
        yield worker
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# --- The pool's arithmetic --------------------------------------------------------


def test_the_pool_holds_what_its_scarcest_kind_can() -> None:
    # given a worker for everything and one more that serves only the LLM
    adverts = [advert("a", 3), advert("b", 4, kinds=("llm",))]
    # then the pool holds 3 calls: ASR and TTS have only the first worker
    assert pool_capacity(adverts) == 3
    assert pool_capacity([advert("a", 3), advert("c", 2)]) == 5
    assert pool_capacity([]) is None


async def test_calls_past_capacity_get_server_busy_until_one_ends(pool: str, settings: Any) -> None:
    # given a pool whose one worker is sized for 2 calls (Redis, as in production)
    store = RedisLiveStore(settings.REDIS_URL, pool=pool)
    registry = RedisPoolRegistry(settings.REDIS_URL, pool)
    await registry.publish(advert("w1", 2))
    try:
        # when three calls start
        await admit(store, registry, call_id="c1")
        await admit(store, registry, call_id="c2")
        with pytest.raises(AuthError) as refused:
            await admit(store, registry, call_id="c3")
        # then the third is refused with server_busy, 503 and a Retry-After
        assert (refused.value.code, refused.value.status) == ("server_busy", 503)
        assert refused.value.headers == {"Retry-After": str(settings.ADMISSION_RETRY_AFTER_S)}
        assert "2 call slots" in refused.value.message
        # and once a call ends, the next one is admitted
        await store.release_pool(call_id="c1")
        await admit(store, registry, call_id="c3")
        assert (await pool_state(store, registry)).active == 2
    finally:
        await registry.withdraw("w1")
        await store.aclose()
        await registry.aclose()


async def test_an_overloaded_pool_admits_nothing_new(pool: str, settings: Any) -> None:
    store = RedisLiveStore(settings.REDIS_URL, pool=pool)
    registry = MemoryPoolRegistry()
    try:
        # given the only worker reporting that its requests queue past the budget
        await registry.publish(advert("w1", 8, overloaded=True))
        # then a call is refused though slots are free, and the message says why
        with pytest.raises(AuthError, match="queueing") as refused:
            await admit(store, registry, call_id="c1")
        assert refused.value.code == "server_busy"
        # and with a second worker that is not overloaded, the pool takes calls again
        await registry.publish(advert("w2", 8))
        await admit(store, registry, call_id="c1")
    finally:
        await store.aclose()


async def test_a_pool_without_adverts_counts_calls_without_judging_them(
    pool: str, settings: Any
) -> None:
    store = RedisLiveStore(settings.REDIS_URL, pool=pool)
    registry = RedisPoolRegistry(settings.REDIS_URL, pool)
    try:
        # given only a stale advert (its worker stopped a minute ago)
        await registry.publish(advert("gone", 1, at=time.time() - 60))
        # then the pool has no capacity figure and admits, but counts the calls
        for n in range(3):
            await admit(store, registry, call_id=f"c{n}")
        state = await pool_state(store, registry)
        assert (state.workers, state.capacity, state.active) == (0, None, 3)
        # so that a worker that starts now sees them: the pool is full at once
        await registry.publish(advert("w1", 3))
        with pytest.raises(AuthError, match="3 call slots"):
            await admit(store, registry, call_id="c4")
    finally:
        await registry.withdraw("w1")
        await store.aclose()
        await registry.aclose()


# --- What a real worker measures and advertises -----------------------------------


async def test_a_worker_advertises_its_slots_and_measured_speed(models: LocalInference) -> None:
    registry = MemoryPoolRegistry()
    # given a worker with the real models, advertising
    async with advertising_worker(models, registry, max_calls=3) as worker:
        # then it is in the registry from the moment it is ready
        [first] = await registry.adverts()
        assert (first.worker, first.max_calls) == (worker.channel, 3)
        assert first.slots["llm"] == models.llm_slots and first.stats["asr"] == {"requests": 0}
        # and where its models run, as its models were loaded
        assert models.devices is not None and first.devices == models.devices.as_dict()
        # when it transcribes two seconds of audio
        client = ChannelsInference(
            worker.layer, ClientSettings(accept_timeout_s=5.0, request_timeout_s=60.0)
        )
        audio = (np.random.default_rng(1).standard_normal(32000) * 0.01).astype(np.float32)
        started = time.perf_counter()
        await client.transcribe(audio, "en")
        elapsed_s = time.perf_counter() - started
        await client.close()
        # then its advert carries the request, its queue wait and its real-time factor:
        # the time it spent serving, per second of audio, which the request's own
        # round trip bounds (how fast it is, is the bench's to say, not a unit test's)
        asr = worker.advert().stats["asr"]
        assert asr["requests"] == 1
        assert 0 < asr["rtf"] <= elapsed_s / 2.0 + 1e-3, (asr, elapsed_s)
        assert 0 <= asr["wait_p95_ms"] <= elapsed_s * 1000
    # and a worker that stops withdraws its advert
    assert await registry.adverts() == []


async def test_a_worker_whose_requests_queue_reports_itself_overloaded(
    models: LocalInference,
) -> None:
    registry = MemoryPoolRegistry()
    # given a worker with one ASR slot and a 20 ms queue-wait budget
    async with advertising_worker(
        models, registry, max_calls=8, slots={"asr": 1}, wait_budget_ms=20
    ) as worker:
        # (each request may take its full turn in the queue: on a slow machine seven
        # readings of noise, each read twice, run past the default 10 s deadline)
        client = ChannelsInference(
            worker.layer, ClientSettings(accept_timeout_s=30.0, request_timeout_s=120.0)
        )
        audio = (np.random.default_rng(2).standard_normal(48000) * 0.01).astype(np.float32)
        # when more requests arrive at once than it can serve
        await asyncio.gather(*(client.transcribe(audio, "en") for _ in range(MIN_SAMPLES + 2)))
        await client.close()
        # then the ones that waited show in the p95, and the worker says it is overloaded
        stats = worker.advert().stats
        assert stats["asr"]["wait_p95_ms"] > 20, stats
        assert is_overloaded(stats, 20) and worker.advert().overloaded


# --- Every way in ------------------------------------------------------------------


def grant_for(tenant: Tenant) -> tuple[str, CallGrant]:
    _, raw = secret_key_create(org=tenant.org, name=f"k{uuid.uuid4().hex[:6]}")
    return raw, grant_from_secret_key_sync(raw, model="assistant")


def test_a_full_pool_refuses_websocket_http_and_in_process_starts(
    pool: str, tenant_a: Tenant, quiet_persona: Persona, models: LocalInference, settings: Any
) -> None:
    raw, grant = grant_for(tenant_a)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], str]:
        registry = RedisPoolRegistry(settings.REDIS_URL, pool)
        # given a real worker sized for one call, and that call in progress
        async with advertising_worker(models, registry, max_calls=1):
            first = await start_realtime_session(
                grant=grant, transport=ListTransport(), client_info={}
            )
            try:
                # when a WebSocket caller connects
                communicator = WebsocketCommunicator(
                    RealtimeConsumer.as_asgi(),
                    "/v1/realtime?model=assistant",
                    headers=[(b"authorization", f"Bearer {raw}".encode())],
                )
                connected, _ = await communicator.connect(timeout=30)
                assert connected
                error = json.loads(await communicator.receive_from(timeout=30))
                close = await communicator.receive_output(timeout=10)
                await communicator.disconnect(code=1000, timeout=10)
            finally:
                await first.close("hangup")
            # and once that call has ended, a new one starts
            second = await start_realtime_session(
                grant=grant, transport=ListTransport(), client_info={}
            )
            second_id = second.id
            await second.close("hangup")
        await registry.aclose()
        return error, close, second_id

    error, close, second_id = asyncio.run(scenario())

    # then it got server_busy, then a close 4503 (daphne allows 1000 and 3000-4999 only)
    assert error["type"] == "error" and error["error"]["code"] == "server_busy", error
    assert close["type"] == "websocket.close" and close["code"] == 4503
    # and the refused caller left no call record; the two admitted calls did
    assert Call.objects.count() == 2 and second_id


def test_daphne_closes_a_refused_websocket_with_4503(
    voice_server: LiveServer, tenant_a: Tenant, quiet_persona: Persona, settings: Any
) -> None:
    raw, _ = grant_for(tenant_a)

    async def scenario() -> tuple[dict[str, Any], int | None]:
        # given the live server's pool (its worker advertises room for 50 calls) full
        store = RedisLiveStore(settings.REDIS_URL, pool=voice_server.pool)
        registry = RedisPoolRegistry(settings.REDIS_URL, voice_server.pool)
        held = [f"held-{n}" for n in range(50)]
        try:
            async with asyncio.timeout(10):  # its next advert (each test starts on a flushed Redis)
                while not await registry.adverts():  # noqa: ASYNC110 (a Redis hash to poll)
                    await asyncio.sleep(0.2)
            for call_id in held:
                assert await store.acquire_pool(call_id=call_id, cap=1000)
            # when a caller connects through daphne
            ws = await websockets.connect(
                f"{voice_server.ws_url}/v1/realtime?model=assistant",
                additional_headers={"Authorization": f"Bearer {raw}"},
            )
            error = json.loads(await ws.recv())
            with contextlib.suppress(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
            return error, ws.close_code
        finally:
            for call_id in held:
                await store.release_pool(call_id=call_id)
            await store.aclose()
            await registry.aclose()

    error, code = asyncio.run(scenario())

    # then it reads server_busy and the server closes with 4503 (daphne accepts it:
    # an application may close with 1000 or 3000-4999 only)
    assert error["error"]["code"] == "server_busy", error
    assert code == 4503


def test_client_secrets_and_widget_sessions_are_503_with_retry_after_when_full(
    pool: str, tenant_a: Tenant, quiet_persona: Persona, settings: Any
) -> None:
    raw, _ = grant_for(tenant_a)

    async def fill() -> None:
        registry = RedisPoolRegistry(settings.REDIS_URL, pool)
        await registry.publish(advert("w1", 1))
        await registry.aclose()
        assert await live_store().acquire_pool(call_id="in-progress", cap=1)

    asyncio.run(fill())
    # when a client secret is asked for while the pool is full
    response = Client().post(
        "/v1/realtime/client_secrets",
        {"session": {"type": "realtime", "model": "assistant"}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    # then it is a 503 with Retry-After and the same code, and no secret was made
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == str(settings.ADMISSION_RETRY_AFTER_S)
    assert response.json()["error"]["code"] == "server_busy"
    # and a widget on an allowed site gets the same, with its CORS headers
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.test"]
    )
    widget = Client().post(
        "/v1/widget/sessions",
        data={"key": pk.key, "persona": "assistant"},
        content_type="application/json",
        headers={"Origin": "https://shop.test"},
    )
    assert widget.status_code == 503 and widget.json()["error"]["code"] == "server_busy"
    assert widget["Retry-After"] == str(settings.ADMISSION_RETRY_AFTER_S)
    assert widget["Access-Control-Allow-Origin"] == "https://shop.test"
    # and no client secret was made for either
    assert not tenant_a.org.client_secrets.exists()
