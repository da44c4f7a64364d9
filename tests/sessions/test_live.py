"""The live store's rules, the same in Redis and in process memory: a socket is
a slot, and a dropped call's marker is taken at most once, by its principal."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import pytest
from django.conf import settings

from sessions.live import LiveStore, MemoryLiveStore, RedisLiveStore


def stores() -> list[tuple[str, Callable[[], LiveStore]]]:
    made: list[tuple[str, Callable[[], LiveStore]]] = [("memory", MemoryLiveStore)]
    if settings.REDIS_URL:
        prefix = f"test-live:{uuid.uuid4().hex[:8]}"
        made.append(("redis", lambda: RedisLiveStore(settings.REDIS_URL, prefix=prefix)))
    return made


def run(
    make: Callable[[], LiveStore], scenario: Callable[[LiveStore], Awaitable[object]]
) -> object:
    async def main() -> object:
        store = make()
        try:
            return await scenario(store)
        finally:
            close = getattr(store, "aclose", None)
            if close is not None:
                await close()

    return asyncio.run(main())


@pytest.mark.parametrize(("kind", "make"), stores())
def test_a_call_holds_one_slot_only(kind: str, make: Callable[[], LiveStore]) -> None:
    async def scenario(store: LiveStore) -> list[bool]:
        org = 10_000 + uuid.uuid4().int % 1_000_000
        first = await store.acquire(org_id=org, call_id="a", cap=2)
        again = await store.acquire(org_id=org, call_id="a", cap=2)  # a second socket
        other = await store.acquire(org_id=org, call_id="b", cap=2)
        over = await store.acquire(org_id=org, call_id="c", cap=2)
        await store.release(org_id=org, call_id="a")
        after = await store.acquire(org_id=org, call_id="a", cap=2)
        for call in ("a", "b"):
            await store.release(org_id=org, call_id=call)
        return [first, again, other, over, after]

    assert run(make, scenario) == [True, False, True, False, True]


@pytest.mark.parametrize(("kind", "make"), stores())
def test_a_lost_marker_is_taken_once_by_its_principal(
    kind: str, make: Callable[[], LiveStore]
) -> None:
    async def scenario(store: LiveStore) -> list[bool]:
        call = str(uuid.uuid4())
        await store.mark_lost(call, principal="sk:1", ttl_s=5)
        results = [
            await store.claim_lost(call, principal="sk:2"),
            await store.claim_lost(call, principal=""),
            await store.claim_lost(call, principal="sk:1"),
            await store.claim_lost(call, principal="sk:1"),
        ]
        await store.mark_lost(call, principal="", ttl_s=5)  # no principal: never resumable
        results.append(await store.claim_lost(call, principal=""))
        await store.mark_lost(call, principal="sk:1", ttl_s=1)
        await asyncio.sleep(1.2)
        results.append(await store.claim_lost(call, principal="sk:1"))  # expired
        await store.delete(call)
        return results

    assert run(make, scenario) == [False, False, True, False, False, False]
