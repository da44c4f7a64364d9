"""Live call state: which calls are up (for the per-org cap) and what a call
needs to resume after a dropped connection. Redis in production, this
process's memory in the embedded default."""

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
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  return 1
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


class LiveStore(Protocol):
    async def acquire(self, *, org_id: int, call_id: str, cap: int) -> bool: ...
    async def heartbeat(self, *, org_id: int, call_id: str) -> None: ...
    async def release(self, *, org_id: int, call_id: str) -> None: ...
    async def active(self, *, org_id: int) -> int: ...
    async def save(self, call_id: str, state: dict[str, Any], ttl_s: int) -> None: ...
    async def load(self, call_id: str) -> dict[str, Any] | None: ...
    async def delete(self, call_id: str) -> None: ...


class RedisLiveStore:
    def __init__(self, url: str, prefix: str = "voiceapp:live") -> None:
        import redis.asyncio as aioredis

        self._redis = aioredis.from_url(url, decode_responses=True)
        self._prefix = prefix

    def _org(self, org_id: int) -> str:
        return f"{self._prefix}:org:{org_id}"

    def _call(self, call_id: str) -> str:
        return f"{self._prefix}:call:{call_id}"

    async def acquire(self, *, org_id: int, call_id: str, cap: int) -> bool:
        now = time.time()
        result = await self._redis.eval(
            _ACQUIRE,
            1,
            self._org(org_id),
            now,
            now + HEARTBEAT_TTL_S,
            call_id,
            cap,
            HEARTBEAT_TTL_S * 4,
        )
        return bool(result)

    async def heartbeat(self, *, org_id: int, call_id: str) -> None:
        await self._redis.zadd(self._org(org_id), {call_id: time.time() + HEARTBEAT_TTL_S})

    async def release(self, *, org_id: int, call_id: str) -> None:
        await self._redis.zrem(self._org(org_id), call_id)

    async def active(self, *, org_id: int) -> int:
        key = self._org(org_id)
        await self._redis.zremrangebyscore(key, "-inf", time.time())
        return int(await self._redis.zcard(key))

    async def save(self, call_id: str, state: dict[str, Any], ttl_s: int) -> None:
        await self._redis.set(self._call(call_id), json.dumps(state), ex=ttl_s)

    async def load(self, call_id: str) -> dict[str, Any] | None:
        raw = await self._redis.get(self._call(call_id))
        return json.loads(raw) if raw else None

    async def delete(self, call_id: str) -> None:
        await self._redis.delete(self._call(call_id))

    async def aclose(self) -> None:
        await self._redis.aclose()


class MemoryLiveStore:
    """The embedded default: one process holds every call."""

    def __init__(self) -> None:
        self._orgs: dict[int, dict[str, float]] = {}
        self._state: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = asyncio.Lock()

    def _live(self, org_id: int) -> dict[str, float]:
        calls = self._orgs.setdefault(org_id, {})
        now = time.time()
        for call_id in [c for c, exp in calls.items() if exp <= now]:
            del calls[call_id]
        return calls

    async def acquire(self, *, org_id: int, call_id: str, cap: int) -> bool:
        async with self._lock:
            calls = self._live(org_id)
            if call_id not in calls and len(calls) >= cap:
                return False
            calls[call_id] = time.time() + HEARTBEAT_TTL_S
            return True

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


_stores: dict[int, LiveStore] = {}
_memory = MemoryLiveStore()


def live_store() -> LiveStore:
    """The store for this event loop (Redis clients are bound to their loop)."""
    if not settings.REDIS_URL:
        return _memory
    loop_id = id(asyncio.get_running_loop())
    store = _stores.get(loop_id)
    if store is None:
        store = _stores[loop_id] = RedisLiveStore(settings.REDIS_URL)
    return store
