"""The slots a call holds, taken once at its start and freed once at its end.

A call holds two slots from admission to its end: one in its organization's cap
(the plan's `max_concurrent_calls`) and one in the inference pool (admission.py).
`CallSlots` takes both or neither, and frees both the moment the call is over:
the session's `close()` frees them before it does anything else, so a slot is
free again within a second of the hang-up however the call ended, and the
records and the recording are written after that, on the session's own time.

Freeing twice is harmless, and a free that fails (Redis away) is logged: the
slots then expire by themselves (live.py, HEARTBEAT_TTL_S)."""

from __future__ import annotations

import logging

from sessions import admission, drain
from sessions.auth import AuthError
from sessions.live import LiveStore
from voiceapp.inference.capacity import PoolRegistry

log = logging.getLogger(__name__)


class CallSlots:
    def __init__(self, store: LiveStore, *, org_id: int, call_id: str) -> None:
        self.store = store
        self.org_id = org_id
        self.call_id = call_id
        self.held = False

    async def take(self, *, cap: int, registry: PoolRegistry) -> None:
        """Take the organization's slot and a pool slot, or neither: raises
        `concurrency_limit` (429), `server_busy` or `server_draining` (503) as an
        AuthError."""
        if await drain.draining(self.store):
            raise drain.draining_error()
        if not await self.store.acquire(org_id=self.org_id, call_id=self.call_id, cap=cap):
            raise AuthError(
                "concurrency_limit",
                f"Your organization already has {cap} calls in progress; try again later.",
                429,
            )
        try:
            await admission.admit(self.store, registry, call_id=self.call_id)
        except BaseException:
            await self.store.release(org_id=self.org_id, call_id=self.call_id)
            raise
        self.held = True
        drain.call_started(self.call_id)

    async def heartbeat(self) -> None:
        """Still in progress: keep both slots from expiring."""
        # (checked before each write: a heartbeat that meets the release half-way
        # must not put a freed slot back)
        if self.held:
            await self.store.heartbeat(org_id=self.org_id, call_id=self.call_id)
        if self.held:
            await self.store.heartbeat_pool(call_id=self.call_id)

    async def release(self) -> None:
        """Free both slots. Idempotent; never raises."""
        if not self.held:
            return
        self.held = False
        drain.call_ended(self.call_id)
        try:
            await self.store.release(org_id=self.org_id, call_id=self.call_id)
        except Exception as exc:
            log.warning("call %s: its organization slot was not freed: %s", self.call_id, exc)
        try:
            await self.store.release_pool(call_id=self.call_id)
        except Exception as exc:
            log.warning("call %s: its pool slot was not freed: %s", self.call_id, exc)
