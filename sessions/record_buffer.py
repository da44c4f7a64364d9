"""Call-record writes behind the call: a database outage does not end a call.

Each call has one `RecordBuffer`. The call loop submits its writes (items, turns,
usage, the heartbeat's touch, the end) and goes on at once; the buffer's writer
performs them one at a time, in the order submitted. While the database is
unreachable (Django's `OperationalError` / `InterfaceError`) the write at the head
is retried with backoff and later writes wait behind it, so they land in order
when it comes back. The call's end is always written last: a write submitted after
the end (the recording) goes before it while it is still pending.

The buffer is bounded (`MAX_PENDING` writes a call): past it, new writes are
dropped with an error in the log (the end never is). A write that fails for any
other reason is logged and skipped, as before. The buffers live in this process:
a process that exits with writes pending logs what is lost, call by call.

A retried write whose first attempt did commit but lost its reply is written twice;
all are idempotent except `call_usage_add` (an increment), which can then count
one turn's usage twice.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.db import InterfaceError, OperationalError

log = logging.getLogger(__name__)

MAX_PENDING = 2000
RETRY_FIRST_S = 0.2
RETRY_MAX_S = 2.0
UNREACHABLE = (OperationalError, InterfaceError)

# In a thread pool, not the request's thread-sensitive executor: a call can outlive
# the HTTP request that started it (WebRTC).
_db = functools.partial(database_sync_to_async, thread_sensitive=False)


@dataclass
class Write:
    name: str
    run: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)


class RecordBuffer:
    """One call's record writes, performed in order by one writer task."""

    def __init__(self, call_id: str, *, limit: int = MAX_PENDING) -> None:
        self.call_id = call_id
        self.limit = limit
        self._pending: deque[Write] = deque()
        self._end: Write | None = None
        self._ended = False  # the end was submitted (written or pending)
        self._writer: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.written = 0
        self.dropped = 0
        self.outages = 0
        self.buffered = 0  # writes that waited for the database to come back

    def submit(self, name: str, run: Callable[..., Any], **kwargs: Any) -> None:
        """Queue a write; the caller does not wait for it."""
        if len(self._pending) >= self.limit:
            self.dropped += 1
            log.error(
                "call %s: %d record writes waiting; %s dropped", self.call_id, self.limit, name
            )
            return
        if name == "touch" and self._pending and self._pending[-1].name == "touch":
            self._pending[-1] = Write(name, run, kwargs)  # only the latest touch matters
        else:
            self._pending.append(Write(name, run, kwargs))
        self._kick()

    def submit_end(self, run: Callable[..., Any], **kwargs: Any) -> None:
        """Queue the call's end: written after every other write of the call."""
        if self._ended:
            return
        self._ended = True
        self._end = Write("end", run, kwargs)
        self._kick()

    @property
    def pending(self) -> int:
        return len(self._pending) + (self._end is not None)

    async def drain(self, timeout_s: float) -> bool:
        """Wait until every write so far is done; false if `timeout_s` passed first."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    def _kick(self) -> None:
        self._idle.clear()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_all())

    def _next(self) -> Write | None:
        if self._pending:
            return self._pending[0]
        return self._end

    def _done(self, write: Write) -> None:
        if self._pending and self._pending[0] is write:
            self._pending.popleft()
        elif self._end is write:
            self._end = None

    async def _write_all(self) -> None:
        delay = RETRY_FIRST_S
        down_since: float | None = None
        try:
            while (write := self._next()) is not None:
                try:
                    await _db(write.run)(**write.kwargs)
                except UNREACHABLE as exc:
                    if down_since is None:
                        down_since = time.monotonic()
                        self.outages += 1
                        log.warning(
                            "call %s: database unreachable (%s); %d record writes wait",
                            self.call_id,
                            str(exc).strip().splitlines()[0] if str(exc).strip() else exc,
                            self.pending,
                        )
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                except Exception:
                    log.exception("call %s: recording %s failed; skipped", self.call_id, write.name)
                else:
                    self.written += 1
                if down_since is not None:
                    waited = self.pending
                    self.buffered += waited
                    log.warning(
                        "call %s: database back after %.1f s; writing the %d record writes "
                        "that waited",
                        self.call_id,
                        time.monotonic() - down_since,
                        waited,
                    )
                    down_since = None
                    delay = RETRY_FIRST_S
                self._done(write)
        finally:
            if self._next() is None:
                self._idle.set()
                if self._ended:
                    _buffers.pop(self.call_id, None)
                    if self.buffered:
                        log.warning(
                            "call %s: record complete; %d writes were buffered through %d "
                            "database outage(s), %d written in all, %d dropped",
                            self.call_id,
                            self.buffered,
                            self.outages,
                            self.written,
                            self.dropped,
                        )


_buffers: dict[str, RecordBuffer] = {}


def record_buffer(call_id: str) -> RecordBuffer:
    """The call's buffer in this process: a call resumed here keeps one order."""
    buffer = _buffers.get(call_id)
    if buffer is None or buffer._ended:
        buffer = _buffers[call_id] = RecordBuffer(call_id)
    return buffer


def unwritten() -> dict[str, int]:
    """Writes still waiting, per call."""
    return {call_id: b.pending for call_id, b in _buffers.items() if b.pending}


@atexit.register
def _report_lost() -> None:
    for call_id, count in unwritten().items():
        buffer = _buffers[call_id]
        names = [w.name for w in buffer._pending] + (["end"] if buffer._end else [])
        log.error(
            "process exiting: call %s loses %d unwritten record writes (%s)",
            call_id,
            count,
            ", ".join(names),
        )
