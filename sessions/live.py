"""Live call state: which calls are up (for the per-org cap) and what a call
needs to resume after a dropped connection. Redis in production, this
process's memory in the embedded default.

Every connected socket holds one slot of its org's cap, a resumed call too, and
one slot of the inference pool's (`sessions/admission.py`). A
call whose connection dropped leaves a "lost" marker naming its principal (the
key or member behind it); resuming takes the marker away atomically, so a call
is resumed at most once per drop, and never while it is still connected."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Protocol

from django.conf import settings

HEARTBEAT_TTL_S = 30

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return 0
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""

_DISOWN = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 0
"""

_CLAIM = """
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


class LiveStore(Protocol):
    async def acquire(self, *, org_id: int, call_id: str, cap: int) -> bool:
        """Take a slot for `call_id`: false at the cap, or when it already holds one."""
        ...

    async def heartbeat(self, *, org_id: int, call_id: str) -> None: ...
    async def release(self, *, org_id: int, call_id: str) -> None: ...
    async def active(self, *, org_id: int) -> int: ...
    async def acquire_pool(self, *, call_id: str, cap: int) -> bool:
        """The same for the whole inference pool's slots."""
        ...

    async def heartbeat_pool(self, *, call_id: str) -> None: ...
    async def release_pool(self, *, call_id: str) -> None: ...
    async def pool_active(self) -> int: ...
    async def save(self, call_id: str, state: dict[str, Any], ttl_s: int) -> None: ...
    async def load(self, call_id: str) -> dict[str, Any] | None: ...
    async def delete(self, call_id: str) -> None: ...
    async def mark_lost(self, call_id: str, *, principal: str, ttl_s: int) -> None:
        """The call's connection dropped: `principal` may resume it within `ttl_s`."""
        ...

    async def own(self, call_id: str, owner: str, *, ttl_s: float) -> None:
        """`owner` (a web process) is running the call, for the next `ttl_s` s."""

    async def disown(self, call_id: str, owner: str) -> None: ...
    async def take_orphan(self, call_id: str, owner: str, *, ttl_s: float) -> bool:
        """Become the call's owner if it has none left (its process died); atomic."""
        ...

    async def set_draining(self, instance: str, *, ttl_s: int) -> None:
        """Mark a web process as draining (it admits no new calls) for `ttl_s` s."""

    async def clear_draining(self, instance: str) -> None: ...
    async def draining(self, instance: str) -> bool: ...
    async def claim_lost(self, call_id: str, *, principal: str) -> bool:
        """Take the lost marker if `principal` set it: true at most once per drop."""
        ...


class RedisLiveStore:
    def __init__(self, url: str, prefix: str = "voiceapp:live", pool: str = "asgi") -> None:
        """`pool`: the inference pool's name (the channel layer's prefix)."""
        import redis.asyncio as aioredis

        from voiceapp.inference.protocol import reconnecting_retry

        # commands on a connection that a Redis restart killed are sent again
        self._redis = aioredis.from_url(url, decode_responses=True, retry=reconnecting_retry())
        self._prefix = prefix
        self._pool_name = pool

    def _org(self, org_id: int) -> str:
        return f"{self._prefix}:org:{org_id}"

    @property
    def _pool(self) -> str:
        return f"{self._prefix}:pool:{self._pool_name}"

    def _call(self, call_id: str) -> str:
        return f"{self._prefix}:call:{call_id}"

    def _lost(self, call_id: str) -> str:
        return f"{self._prefix}:lost:{call_id}"

    async def _acquire(self, key: str, call_id: str, cap: int) -> bool:
        now = time.time()
        result = await self._redis.eval(
            _ACQUIRE, 1, key, now, now + HEARTBEAT_TTL_S, call_id, cap, HEARTBEAT_TTL_S * 4
        )
        return bool(result)

    async def _active(self, key: str) -> int:
        await self._redis.zremrangebyscore(key, "-inf", time.time())
        return int(await self._redis.zcard(key))

    async def acquire(self, *, org_id: int, call_id: str, cap: int) -> bool:
        return await self._acquire(self._org(org_id), call_id, cap)

    async def heartbeat(self, *, org_id: int, call_id: str) -> None:
        await self._redis.zadd(self._org(org_id), {call_id: time.time() + HEARTBEAT_TTL_S})

    async def release(self, *, org_id: int, call_id: str) -> None:
        await self._redis.zrem(self._org(org_id), call_id)

    async def active(self, *, org_id: int) -> int:
        return await self._active(self._org(org_id))

    async def acquire_pool(self, *, call_id: str, cap: int) -> bool:
        return await self._acquire(self._pool, call_id, cap)

    async def heartbeat_pool(self, *, call_id: str) -> None:
        await self._redis.zadd(self._pool, {call_id: time.time() + HEARTBEAT_TTL_S})

    async def release_pool(self, *, call_id: str) -> None:
        await self._redis.zrem(self._pool, call_id)

    async def pool_active(self) -> int:
        return await self._active(self._pool)

    async def save(self, call_id: str, state: dict[str, Any], ttl_s: int) -> None:
        await self._redis.set(self._call(call_id), json.dumps(state), ex=ttl_s)

    async def load(self, call_id: str) -> dict[str, Any] | None:
        raw = await self._redis.get(self._call(call_id))
        return json.loads(raw) if raw else None

    async def delete(self, call_id: str) -> None:
        await self._redis.delete(self._call(call_id), self._lost(call_id))

    async def mark_lost(self, call_id: str, *, principal: str, ttl_s: int) -> None:
        await self._redis.set(self._lost(call_id), principal, ex=ttl_s)

    async def claim_lost(self, call_id: str, *, principal: str) -> bool:
        return bool(await self._redis.eval(_CLAIM, 1, self._lost(call_id), principal))

    def _owner(self, call_id: str) -> str:
        return f"{self._prefix}:owner:{call_id}"

    async def own(self, call_id: str, owner: str, *, ttl_s: float) -> None:
        await self._redis.set(self._owner(call_id), owner, px=int(ttl_s * 1000))

    async def disown(self, call_id: str, owner: str) -> None:
        await self._redis.eval(_DISOWN, 1, self._owner(call_id), owner)

    async def take_orphan(self, call_id: str, owner: str, *, ttl_s: float) -> bool:
        key = self._owner(call_id)
        return bool(await self._redis.set(key, owner, px=int(ttl_s * 1000), nx=True))

    def _drain(self, instance: str) -> str:
        return f"{self._prefix}:drain:{self._pool_name}:{instance}"

    async def set_draining(self, instance: str, *, ttl_s: int) -> None:
        await self._redis.set(self._drain(instance), "1", ex=ttl_s)

    async def clear_draining(self, instance: str) -> None:
        await self._redis.delete(self._drain(instance))

    async def draining(self, instance: str) -> bool:
        return bool(await self._redis.exists(self._drain(instance)))

    async def aclose(self) -> None:
        await self._redis.aclose()


class MemoryLiveStore:
    """The embedded default: one process holds every call."""

    POOL = "pool"

    def __init__(self) -> None:
        self._orgs: dict[int | str, dict[str, float]] = {}
        self._state: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lost: dict[str, tuple[float, str]] = {}
        self._draining: dict[str, float] = {}
        self._owners: dict[str, tuple[float, str]] = {}
        self._lock = asyncio.Lock()

    def _live(self, org_id: int | str) -> dict[str, float]:
        calls = self._orgs.setdefault(org_id, {})
        now = time.time()
        for call_id in [c for c, exp in calls.items() if exp <= now]:
            del calls[call_id]
        return calls

    async def acquire(self, *, org_id: int | str, call_id: str, cap: int) -> bool:
        async with self._lock:
            calls = self._live(org_id)
            if call_id in calls or len(calls) >= cap:
                return False
            calls[call_id] = time.time() + HEARTBEAT_TTL_S
            return True

    async def acquire_pool(self, *, call_id: str, cap: int) -> bool:
        return await self.acquire(org_id=self.POOL, call_id=call_id, cap=cap)

    async def heartbeat_pool(self, *, call_id: str) -> None:
        self._orgs.setdefault(self.POOL, {})[call_id] = time.time() + HEARTBEAT_TTL_S

    async def release_pool(self, *, call_id: str) -> None:
        self._orgs.get(self.POOL, {}).pop(call_id, None)

    async def pool_active(self) -> int:
        return len(self._live(self.POOL))

    async def heartbeat(self, *, org_id: int, call_id: str) -> None:
        self._orgs.setdefault(org_id, {})[call_id] = time.time() + HEARTBEAT_TTL_S

    async def release(self, *, org_id: int, call_id: str) -> None:
        self._orgs.get(org_id, {}).pop(call_id, None)

    async def active(self, *, org_id: int) -> int:
        return len(self._live(org_id))

    async def save(self, call_id: str, state: dict[str, Any], ttl_s: int) -> None:
        self._state[call_id] = (time.time() + ttl_s, state)

    async def load(self, call_id: str) -> dict[str, Any] | None:
        entry = self._state.get(call_id)
        if entry is None or entry[0] <= time.time():
            return None
        return entry[1]

    async def delete(self, call_id: str) -> None:
        self._state.pop(call_id, None)
        self._lost.pop(call_id, None)

    async def mark_lost(self, call_id: str, *, principal: str, ttl_s: int) -> None:
        self._lost[call_id] = (time.time() + ttl_s, principal)

    async def own(self, call_id: str, owner: str, *, ttl_s: float) -> None:
        self._owners[call_id] = (time.time() + ttl_s, owner)

    async def disown(self, call_id: str, owner: str) -> None:
        if self._owners.get(call_id, (0.0, ""))[1] == owner:
            del self._owners[call_id]

    async def take_orphan(self, call_id: str, owner: str, *, ttl_s: float) -> bool:
        if self._owners.get(call_id, (0.0, ""))[0] > time.time():
            return False
        self._owners[call_id] = (time.time() + ttl_s, owner)
        return True

    async def set_draining(self, instance: str, *, ttl_s: int) -> None:
        self._draining[instance] = time.time() + ttl_s

    async def clear_draining(self, instance: str) -> None:
        self._draining.pop(instance, None)

    async def draining(self, instance: str) -> bool:
        return self._draining.get(instance, 0.0) > time.time()

    async def claim_lost(self, call_id: str, *, principal: str) -> bool:
        # No await between the check and the pop: atomic on the event loop.
        entry = self._lost.get(call_id)
        if not principal or entry is None or entry[0] <= time.time() or entry[1] != principal:
            return False
        del self._lost[call_id]
        return True


_stores: dict[tuple[int, str], LiveStore] = {}
_memory = MemoryLiveStore()
memory_live_store = _memory  # the embedded default's, for sync readers


def live_store() -> LiveStore:
    """The store for this event loop (Redis clients are bound to their loop)."""
    if not settings.REDIS_URL:
        return _memory
    key = (id(asyncio.get_running_loop()), settings.CHANNELS_PREFIX)
    store = _stores.get(key)
    if store is None:
        store = _stores[key] = RedisLiveStore(settings.REDIS_URL, pool=settings.CHANNELS_PREFIX)
    return store
