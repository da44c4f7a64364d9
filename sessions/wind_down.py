"""How a call whose audio we send ourselves (a WebRTC peer, a phone call's RTP
stream) winds down. Both do it in the same steps, with their own hang-up in
between:

1. `close_session`: the realtime session closes (it frees the call's slots
   first), then, when the other side is still listening, the agent's last words
   play out (3 s at most);
2. the transport's own hang-up (a phone call's BYE; a WebRTC peer closes);
3. `settle`: the session's `run()` is given a moment to return;
4. `cancel_others`: every other task of the call is cancelled and awaited."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

log = logging.getLogger(__name__)

LAST_WORDS_S = 3.0
TASKS_S = 2.0


class Closing(Protocol):
    async def close(self, reason: str) -> None: ...


class Draining(Protocol):
    async def drained(self) -> None: ...


async def close_session(
    session: Closing | None,
    reason: str,
    *,
    label: str,
    timeout_s: float,
    output: Draining,
    listening: bool,
) -> None:
    if session is not None:
        try:
            await asyncio.wait_for(session.close(reason), timeout_s)
        except Exception:
            log.exception("%s: closing the session failed", label)
    if listening:  # the server ends the call: let the last words play
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LAST_WORDS_S):
                await output.drained()


async def settle(run: asyncio.Future[Any] | None, *, label: str, timeout_s: float) -> None:
    if run is None:
        return
    try:
        await asyncio.wait_for(run, timeout_s)
    except BaseException:  # the run's own end (cancelled, failed, late) is not ours
        log.debug("%s: the session's run ended with an error", label, exc_info=True)


async def cancel_others(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel the call's tasks but the one running this, and wait for them."""
    current = asyncio.current_task()
    others = [t for t in tasks if t is not current]
    for task in others:
        task.cancel()
    if others:
        await asyncio.wait(others, timeout=TASKS_S)
