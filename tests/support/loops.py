"""Closing an event loop a test made itself, as `asyncio.run` closes its own.

A loop closed with tasks still on it (a call's read-ahead, cancelled as its call
closed, waiting one more turn of the loop to end) leaves them to the garbage
collector, which logs "Task was destroyed but it is pending!" in whatever test
it happens to run during: a later test that checks the asyncio log then fails
for this one's leftovers.
"""

from __future__ import annotations

import asyncio
import contextlib

DRAIN_S = 10.0  # a task still running this long after its cancel is left to the loop's close


def drain(loop: asyncio.AbstractEventLoop, wait_s: float = DRAIN_S) -> None:
    """Cancel the tasks left on `loop` and run it until they have ended."""
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.wait(tasks, timeout=wait_s))


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Drain `loop`, end its async generators, then close it."""
    try:
        drain(loop)
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
