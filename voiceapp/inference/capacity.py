"""What each inference worker can take, for admission control.

Every worker measures its own requests over a sliding window: how long each waited
in the shared queue before a slot took it, how long it took to serve, and for ASR
and TTS the real-time factor (seconds of work per second of audio). It also counts
the CPU its process used. Every `ADVERTISE_EVERY_S` it publishes an `Advert` with
those figures, its slots and `max_calls`, the calls it is sized to hold at the
latency target. The call layer (`sessions/admission.py`) reads the adverts and
admits a call only while the pool has room.

`max_calls` is `INFERENCE_MAX_CALLS` when set. Otherwise it is the worker's cores
times `INFERENCE_CALLS_PER_CORE`, the knee that `./dev bench load` measures
(docs/CAPACITY.md). A worker whose queue wait p95 passes its budget says it is
`overloaded`, whatever its count, so admission stops before the latency falls
apart. The advert also says where the worker's models run (`devices`, the plan
of engine/devices.py), for /metrics and the benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)

WINDOW_S = 30.0
ADVERTISE_EVERY_S = 2.0
ADVERT_TTL_S = 10.0  # an advert older than this is a worker that stopped
MIN_SAMPLES = 5  # fewer requests in the window than this say nothing about the queue


def cpu_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_max_calls(calls_per_core: float, cores: int | None = None) -> int:
    return max(1, math.floor((cores or cpu_cores()) * calls_per_core))


@dataclass
class _Sample:
    at: float
    wait_s: float
    service_s: float
    audio_s: float


class ServiceMeter:
    """One kind's requests over the last `window_s` seconds."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[_Sample] = deque()

    def add(self, *, wait_s: float, service_s: float, audio_s: float = 0.0) -> None:
        self._samples.append(_Sample(time.monotonic(), max(0.0, wait_s), service_s, audio_s))
        self._trim()

    def _trim(self) -> None:
        horizon = time.monotonic() - self.window_s
        while self._samples and self._samples[0].at < horizon:
            self._samples.popleft()

    def summary(self) -> dict[str, float]:
        self._trim()
        samples = list(self._samples)
        if not samples:
            return {"requests": 0}
        waits = sorted(s.wait_s for s in samples)
        audio = sum(s.audio_s for s in samples)
        out = {
            "requests": len(samples),
            "wait_p95_ms": round(waits[min(len(waits) - 1, int(0.95 * len(waits)))] * 1000, 1),
            "service_mean_ms": round(sum(s.service_s for s in samples) / len(samples) * 1000, 1),
        }
        if audio > 0:
            out["rtf"] = round(sum(s.service_s for s in samples if s.audio_s) / audio, 4)
        return out


class CpuMeter:
    """This process's CPU use, as a share of its cores, between two readings."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self._wall = time.monotonic()
        self._cpu = time.process_time()

    def read(self) -> float:
        wall, cpu = time.monotonic(), time.process_time()
        elapsed = wall - self._wall
        share = (cpu - self._cpu) / elapsed / self.cores if elapsed > 0 else 0.0
        self._wall, self._cpu = wall, cpu
        return round(share, 3)


@dataclass
class Advert:
    """One worker's capacity, as published."""

    worker: str
    kinds: list[str]
    slots: dict[str, int]
    busy: dict[str, int]
    max_calls: int
    cores: int
    cpu: float  # share of its cores used since the previous advert
    overloaded: bool
    stats: dict[str, dict[str, float]] = field(default_factory=dict)
    # since the worker started, per kind: requests, service_s, audio_s (a profile
    # reads their change over a run)
    totals: dict[str, dict[str, float]] = field(default_factory=dict)
    at: float = 0.0  # wall clock (time.time) when published
    devices: dict[str, Any] = field(default_factory=dict)  # DevicePlan.as_dict(); {}: unknown

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> Advert:
        data = json.loads(raw)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def fresh(self, now: float | None = None) -> bool:
        return ((now or time.time()) - self.at) <= ADVERT_TTL_S


def is_overloaded(stats: dict[str, dict[str, float]], wait_budget_ms: float) -> bool:
    """A kind's requests waited longer than the budget (p95) in the window."""
    return any(
        s.get("requests", 0) >= MIN_SAMPLES and s.get("wait_p95_ms", 0.0) > wait_budget_ms
        for s in stats.values()
    )


class PoolRegistry(Protocol):
    async def publish(self, advert: Advert) -> None: ...
    async def withdraw(self, worker: str) -> None: ...
    async def adverts(self) -> list[Advert]:
        """The fresh adverts, one per live worker."""
        ...


class MemoryPoolRegistry:
    """The embedded default: the worker runs in the web process."""

    def __init__(self) -> None:
        self._adverts: dict[str, Advert] = {}

    async def publish(self, advert: Advert) -> None:
        self._adverts[advert.worker] = advert

    async def withdraw(self, worker: str) -> None:
        self._adverts.pop(worker, None)

    async def adverts(self) -> list[Advert]:
        now = time.time()
        for worker in [w for w, a in self._adverts.items() if not a.fresh(now)]:
            del self._adverts[worker]
        return list(self._adverts.values())


class RedisPoolRegistry:
    """Adverts in one Redis hash per pool, worker channel -> JSON; stale ones are
    dropped on read. `pool` names the pool: the channel layer's prefix."""

    def __init__(self, url: str, pool: str = "asgi") -> None:
        import redis.asyncio as aioredis

        from .protocol import reconnecting_retry

        self._redis: Any = aioredis.from_url(url, retry=reconnecting_retry())
        self.key = f"voiceapp:pool:{pool}:workers"

    async def publish(self, advert: Advert) -> None:
        await self._redis.hset(self.key, advert.worker, advert.to_json())

    async def withdraw(self, worker: str) -> None:
        await self._redis.hdel(self.key, worker)

    async def adverts(self) -> list[Advert]:
        now = time.time()
        fresh: list[Advert] = []
        stale: list[Any] = []
        for worker, raw in (await self._redis.hgetall(self.key)).items():
            try:
                advert = Advert.from_json(raw)
            except (ValueError, TypeError):
                stale.append(worker)
                continue
            if advert.fresh(now):
                fresh.append(advert)
            else:
                stale.append(worker)
        if stale:
            await self._redis.hdel(self.key, *stale)
        return fresh

    async def aclose(self) -> None:
        await self._redis.aclose()


class CapacityAdvertiser:
    """A worker's capacity figures and their adverts: what it measured of its own
    requests (`record`), published every `ADVERTISE_EVERY_S` while `run` runs.

    `load()` returns the worker's channel, slots and busy slots per kind now;
    `devices`, where its models run."""

    def __init__(
        self,
        registry: PoolRegistry | None,
        load: Callable[[], tuple[str, dict[str, int], dict[str, int]]],
        *,
        kinds: tuple[str, ...],
        max_calls: int,
        wait_budget_ms: float,
        devices: dict[str, Any] | None = None,
    ) -> None:
        self.registry = registry
        self.devices = devices or {}
        self.max_calls = max_calls
        self.wait_budget_ms = wait_budget_ms
        self._load = load
        self._meters = {kind: ServiceMeter() for kind in kinds}
        self._totals: dict[str, dict[str, float]] = {}
        self._cpu = CpuMeter(cpu_cores())

    def record(self, kind: str, *, wait_s: float, service_s: float, audio_s: float) -> None:
        self._meters[kind].add(wait_s=wait_s, service_s=service_s, audio_s=audio_s)
        total = self._totals.setdefault(kind, {"requests": 0, "service_s": 0.0, "audio_s": 0.0})
        total["requests"] += 1
        total["service_s"] += service_s
        total["audio_s"] += audio_s

    def advert(self) -> Advert:
        worker, slots, busy = self._load()
        stats = {kind: meter.summary() for kind, meter in self._meters.items()}
        return Advert(
            worker=worker,
            kinds=list(self._meters),
            slots=slots,
            busy=busy,
            max_calls=self.max_calls,
            cores=self._cpu.cores,
            cpu=self._cpu.read(),
            overloaded=is_overloaded(stats, self.wait_budget_ms),
            stats=stats,
            totals={
                name: {k: round(v, 3) for k, v in total.items()}
                for name, total in self._totals.items()
            },
            at=time.time(),
            devices=self.devices,
        )

    async def publish(self) -> None:
        if self.registry is not None:
            await self.registry.publish(self.advert())

    async def run(self) -> None:
        """Publish until cancelled; a failed publish (Redis away a moment) is retried."""
        while True:
            await asyncio.sleep(ADVERTISE_EVERY_S)
            try:
                await self.publish()
            except Exception as exc:
                log.warning("could not advertise capacity: %s", exc)

    async def withdraw(self, worker: str, timeout_s: float) -> None:
        if self.registry is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.registry.withdraw(worker), timeout_s)
