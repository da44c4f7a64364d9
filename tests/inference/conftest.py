"""Inference workers over a real Redis channel layer, with the real models."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer

from voiceapp.engine.inference import LocalInference
from voiceapp.inference.client import ChannelsInference, ClientSettings
from voiceapp.inference.protocol import redis_hosts
from voiceapp.inference.worker import InferenceWorker

REPO = Path(__file__).resolve().parents[2]


def redis_url() -> str:
    return os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="session")
def redis_available() -> str:
    import redis

    url = redis_url()
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.exceptions.ConnectionError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail(f"Redis is required under CI and is not reachable at {url}: {exc}")
        pytest.skip(f"Redis not reachable at {url}")
    return url


@pytest.fixture
def prefix() -> str:
    """A channel-layer prefix of this test only, so tests never see each other's messages."""
    return f"test-{uuid.uuid4().hex[:10]}-"


@pytest.fixture
def make_layer(redis_available: str, prefix: str) -> Callable[[], RedisChannelLayer]:
    def make() -> RedisChannelLayer:
        return RedisChannelLayer(hosts=redis_hosts(redis_available), prefix=prefix, expiry=10)

    return make


@pytest.fixture
async def start_worker(
    make_layer: Callable[[], RedisChannelLayer], models: LocalInference
) -> AsyncIterator[Callable[..., InferenceWorker]]:
    """Start in-process workers (each with its own layer connection) on this test's prefix."""
    tasks: list[asyncio.Task[None]] = []
    layers: list[RedisChannelLayer] = []

    async def start(**kwargs: object) -> InferenceWorker:
        layers.append(make_layer())
        worker = InferenceWorker(layers[-1], models, **kwargs)  # type: ignore[arg-type]
        tasks.append(asyncio.create_task(worker.run()))
        await worker.ready.wait()
        await asyncio.sleep(0.3)  # let its receive loops reach Redis
        return worker

    yield start  # type: ignore[misc]
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks, timeout=3)
    # A receive whose cancellation redis-py swallowed in a blocking pop would hang the
    # loop's shutdown (CI once timed out there): closing its connections ends it.
    for layer in layers:
        with contextlib.suppress(Exception):
            await layer.close_pools()


@pytest.fixture
async def client(
    make_layer: Callable[[], RedisChannelLayer],
) -> AsyncIterator[ChannelsInference]:
    """The call loop's client; its stream readers are ended before the test's loop closes."""
    client = ChannelsInference(
        make_layer(),
        ClientSettings(accept_timeout_s=1.0, liveness_timeout_s=0.6, request_timeout_s=10.0),
    )
    yield client
    await client.close()


@pytest.fixture
def worker_process(
    redis_available: str, prefix: str, tmp_path: Path
) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Start `python -m voiceapp.inference.worker` processes; wait until they serve."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        log = tmp_path / f"worker-{len(procs)}.log"
        args = ["--redis-url", redis_available, "--prefix", prefix]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "voiceapp.inference.worker", *args],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "WORKER READY" in log.read_text(errors="replace"):
                return proc
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"worker did not start:\n{log.read_text(errors='replace')}")

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
