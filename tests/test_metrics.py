from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from sessions.models import Call
from tests.support.calls import make_call
from tests.support.tenants import Tenant
from voiceapp.engine.devices import CPU_PROVIDER, CUDA_PROVIDER, DevicePlan
from voiceapp.inference.capacity import Advert
from voiceapp.personas.models import Persona

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-for-tests"


def _scrape(token: str | None = TOKEN) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client().get("/metrics", headers=headers)


def _samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = _scrape()
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }


@pytest.fixture
def token(settings: Any) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def test_without_a_configured_token_there_is_no_endpoint(settings: Any) -> None:
    settings.METRICS_TOKEN = ""

    assert _scrape().status_code == 404
    assert _scrape(None).status_code == 404


@pytest.mark.parametrize(
    "header", [None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN}x"]
)
def test_a_missing_or_wrong_token_is_401(token: str, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}

    response = Client().get("/metrics", headers=headers)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"voiceapp_" not in response.content


def test_calls_active_calls_and_v2v_histogram(token: str, tenant_a: Tenant) -> None:
    # given two hung-up calls, one lost, a live call, and an open call whose
    # process stopped reporting long ago
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    now = timezone.now()
    make_call(persona, started_at=now, turns=[{"v2v_ms": 250.0}, {"v2v_ms": 650.0}])
    make_call(persona, started_at=now, turns=[{"v2v_ms": 1800.0}, {"asr_ms": 30.0}])
    make_call(persona, started_at=now, end_reason="lost", turns=[{"v2v_ms": 12000.0}])
    make_call(persona, started_at=now, duration_s=None)
    stale = make_call(persona, started_at=now, duration_s=None)
    Call.objects.filter(pk=stale.pk).update(
        last_seen_at=now - timedelta(seconds=settings.CALL_STALE_AFTER_S + 5)
    )

    samples = _samples()

    assert samples[("voiceapp_calls_total", (("end_reason", "hangup"),))] == 2
    assert samples[("voiceapp_calls_total", (("end_reason", "lost"),))] == 1
    assert samples[("voiceapp_calls_active", ())] == 1
    bucket = "voiceapp_turn_v2v_seconds_bucket"
    assert samples[(bucket, (("le", "0.2"),))] == 0
    assert samples[(bucket, (("le", "0.3"),))] == 1
    assert samples[(bucket, (("le", "0.7"),))] == 2
    assert samples[(bucket, (("le", "2.0"),))] == 3
    assert samples[(bucket, (("le", "10.0"),))] == 3
    assert samples[(bucket, (("le", "+Inf"),))] == 4
    assert samples[("voiceapp_turn_v2v_seconds_count", ())] == 4  # the turn without v2v: not
    assert samples[("voiceapp_turn_v2v_seconds_sum", ())] == pytest.approx(14.7)


def test_an_empty_deployment(token: str) -> None:
    samples = _samples()

    assert samples[("voiceapp_calls_active", ())] == 0
    assert samples[("voiceapp_turn_v2v_seconds_count", ())] == 0
    assert not [key for key in samples if key[0] == "voiceapp_calls_total"]


@pytest.mark.skipif(not settings.REDIS_URL, reason="the Redis channel layer needs REDIS_URL")
def test_inference_queue_depth_from_the_redis_layer(token: str, settings: Any) -> None:
    # given a channel layer of its own, with requests waiting for ASR and TTS,
    # and one LLM request older than the layer's expiry (dead: workers drop it)
    layers = dict(settings.CHANNEL_LAYERS)
    prefix = f"metrics-test-{uuid.uuid4().hex[:8]}:"
    layers["default"] = {
        **layers["default"],
        "CONFIG": {**layers["default"]["CONFIG"], "prefix": prefix},
    }
    settings.CHANNEL_LAYERS = layers
    layer = get_channel_layer()
    for n in range(3):
        async_to_sync(layer.send)("inference.asr", {"type": "inference.request", "n": n})
    async_to_sync(layer.send)("inference.tts", {"type": "inference.request"})
    from voiceapp.inference.queues import _redis

    redis = _redis(settings.REDIS_URL)
    expiry = layers["default"]["CONFIG"]["expiry"]
    redis.zadd(prefix + "inference.llm", {b"expired": time.time() - expiry - 5})
    try:
        samples = _samples()
    finally:
        for kind in ("asr", "llm", "tts", "eou", "caption"):
            redis.delete(prefix + f"inference.{kind}")

    depth = "voiceapp_inference_queue_depth"
    assert samples[(depth, (("kind", "asr"),))] == 3
    assert samples[(depth, (("kind", "tts"),))] == 1
    assert samples[(depth, (("kind", "llm"),))] == 0
    assert samples[(depth, (("kind", "eou"),))] == 0
    assert samples[(depth, (("kind", "caption"),))] == 0


def test_inference_queue_depth_in_embedded_mode(token: str, settings: Any) -> None:
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {}}
    }
    layer = get_channel_layer()
    async_to_sync(layer.send)("inference.llm", {"type": "inference.request"})

    samples = _samples()

    assert samples[("voiceapp_inference_queue_depth", (("kind", "llm"),))] == 1
    assert samples[("voiceapp_inference_queue_depth", (("kind", "asr"),))] == 0


def _pool_registry() -> Any:
    from voiceapp.inference.capacity import RedisPoolRegistry
    from voiceapp.inference.runtime import memory_pool_registry

    if not settings.REDIS_URL:
        return memory_pool_registry
    return RedisPoolRegistry(settings.REDIS_URL, settings.CHANNELS_PREFIX)


def _advert(worker: str, devices: dict[str, Any]) -> Advert:
    kinds = ["asr", "llm", "tts", "eou"]
    return Advert(
        worker=worker,
        kinds=kinds,
        slots=dict.fromkeys(kinds, 1),
        busy=dict.fromkeys(kinds, 0),
        max_calls=4,
        cores=2,
        cpu=0.0,
        overloaded=False,
        at=time.time(),
        devices=devices,
    )


def test_each_worker_says_where_its_models_run(token: str, settings: Any) -> None:
    # given a pool of its own with a GPU worker and a worker that advertises no devices
    settings.CHANNELS_PREFIX = f"metrics-{uuid.uuid4().hex[:8]}"
    gpu = DevicePlan("cuda", "float16", -1, -1, (CUDA_PROVIDER, CPU_PROVIDER))
    adverts = [_advert("inference.worker.gpu0", gpu.as_dict()), _advert("inference.old1", {})]

    async def publish() -> None:
        registry = _pool_registry()
        for advert in adverts:
            await registry.publish(advert)
        if hasattr(registry, "aclose"):
            await registry.aclose()

    async def withdraw() -> None:
        registry = _pool_registry()
        for advert in adverts:
            await registry.withdraw(advert.worker)
        if hasattr(registry, "aclose"):
            await registry.aclose()

    asyncio.run(publish())
    try:
        samples = _samples()
    finally:
        asyncio.run(withdraw())

    # then /metrics names the GPU worker's devices, and nothing for the other
    labels = {
        "worker": "gpu0",
        "asr": "cuda",
        "asr_compute_type": "float16",
        "llm_gpu_layers": "-1",
        "eou_gpu_layers": "-1",
        "tts": CUDA_PROVIDER,
    }
    assert samples[("voiceapp_worker_devices", tuple(sorted(labels.items())))] == 1
    assert [k for k in samples if k[0] == "voiceapp_worker_devices"] == [
        ("voiceapp_worker_devices", tuple(sorted(labels.items())))
    ]
    assert samples[("voiceapp_worker_cpu_share", (("worker", "old1"),))] == 0
