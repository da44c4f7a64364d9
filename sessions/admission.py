"""Admission control: a call starts only while the inference pool can hold it.

Inference workers advertise what they can take (`voiceapp/inference/capacity.py`):
slots per kind, `max_calls` (the calls each is sized for at the latency target),
and whether their queue wait is past budget. The pool can hold, for each kind a
call needs, the sum of `max_calls` over the workers serving that kind; its
capacity is the smallest of those sums. Every call holds one pool slot in the
live store from start to end, beside its organization's slot.

A call is refused with `server_busy` when every pool slot is taken, or when every
worker of some kind reports itself overloaded (its requests wait longer than
`INFERENCE_WAIT_BUDGET_MS`, p95). WebSocket callers get an `error` event and close
4503. Client secrets, widget sessions and WebRTC offers get
HTTP 503 with `Retry-After`. Per-organization caps are checked as before.

A pool that advertises nothing is not judged: before any worker has started, a
call is let through, and its requests wait for a worker as they always did
(`no_worker` after `INFERENCE_ACCEPT_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache

from sessions.auth import AuthError
from sessions.live import LiveStore, RedisLiveStore, memory_live_store
from voiceapp.inference.capacity import Advert, PoolRegistry, RedisPoolRegistry
from voiceapp.inference.runtime import memory_pool_registry

log = logging.getLogger(__name__)

T = TypeVar("T")
CALL_KINDS = ("asr", "llm", "tts")
UNJUDGED_CAP = (
    1_000_000  # the slot cap while no worker advertises  # what every call needs (eou is optional)
)


@dataclass(frozen=True)
class PoolState:
    workers: int
    capacity: int | None  # calls the pool can hold; None: no worker has advertised
    active: int  # calls holding a pool slot
    overloaded: tuple[str, ...]  # kinds whose every worker is past its wait budget

    @property
    def full(self) -> bool:
        return self.capacity is not None and self.active >= self.capacity


def pool_capacity(adverts: list[Advert]) -> int | None:
    """The calls the advertised workers can hold: the scarcest kind's sum of max_calls."""
    if not adverts:
        return None
    sums = [sum(a.max_calls for a in adverts if kind in a.kinds) for kind in CALL_KINDS]
    return min(sums)


def overloaded_kinds(adverts: list[Advert]) -> tuple[str, ...]:
    kinds = []
    for kind in CALL_KINDS:
        serving = [a for a in adverts if kind in a.kinds]
        if serving and all(a.overloaded for a in serving):
            kinds.append(kind)
    return tuple(kinds)


async def pool_state(store: LiveStore, registry: PoolRegistry) -> PoolState:
    adverts = await registry.adverts()
    return PoolState(
        workers=len(adverts),
        capacity=pool_capacity(adverts),
        active=await store.pool_active(),
        overloaded=overloaded_kinds(adverts),
    )


REFUSALS_KEY = "admission:refused"


def count_refusal() -> None:
    """One more server_busy refusal, for /metrics (the cache is shared across processes)."""
    try:
        cache.add(REFUSALS_KEY, 0, timeout=None)
        cache.incr(REFUSALS_KEY)
    except Exception as exc:  # a metric is not worth failing the refusal for
        log.warning("could not count a refusal: %s", exc)


def refusals() -> int:
    return int(cache.get(REFUSALS_KEY) or 0)


def busy_error(state: PoolState) -> AuthError:
    if state.overloaded:
        why = f"its {', '.join(state.overloaded)} requests are queueing"
    else:
        why = f"all {state.capacity} call slots are taken"
    return AuthError(
        "server_busy",
        f"The service is at capacity ({why}); try again in a few seconds.",
        503,
        retry_after=settings.ADMISSION_RETRY_AFTER_S,
    )


async def admit(store: LiveStore, registry: PoolRegistry, *, call_id: str) -> PoolState:
    """Take a pool slot for `call_id`, or raise `server_busy` (AuthError, 503)."""
    state = await pool_state(store, registry)
    if state.capacity is None:
        # not judged, but counted: once workers advertise, this call holds a slot
        await store.acquire_pool(call_id=call_id, cap=UNJUDGED_CAP)
        return state
    if state.overloaded or not await store.acquire_pool(call_id=call_id, cap=state.capacity):
        await asyncio.to_thread(count_refusal)
        log.info("call %s refused: %s", call_id, busy_error(state).message)
        raise busy_error(state if state.overloaded else await pool_state(store, registry))
    return state


async def check(store: LiveStore, registry: PoolRegistry) -> None:
    """Before minting a secret for a call: raise `server_busy` if it would be refused now.
    Takes no slot; the call takes its own when it starts."""
    state = await pool_state(store, registry)
    if state.overloaded or state.full:
        await asyncio.to_thread(count_refusal)
        raise busy_error(state)


def _with_own_clients(use: Callable[[LiveStore, PoolRegistry], Awaitable[T]]) -> T:
    """Run `use` from sync code on a loop of its own, with Redis clients of its own."""

    async def run() -> T:
        if not settings.REDIS_URL:
            return await use(memory_live_store, memory_pool_registry)
        store = RedisLiveStore(settings.REDIS_URL, pool=settings.CHANNELS_PREFIX)
        registry = RedisPoolRegistry(settings.REDIS_URL, settings.CHANNELS_PREFIX)
        try:
            return await use(store, registry)
        finally:
            await store.aclose()
            await registry.aclose()

    return asyncio.run(run())


def check_sync() -> None:
    """`check` for sync views (client secrets, widget sessions)."""
    _with_own_clients(check)


def pool_snapshot_sync() -> tuple[PoolState, list[Advert]]:
    """The pool and every worker's advert, for /metrics."""

    async def read(store: LiveStore, registry: PoolRegistry) -> tuple[PoolState, list[Advert]]:
        return await pool_state(store, registry), await registry.adverts()

    return _with_own_clients(read)
