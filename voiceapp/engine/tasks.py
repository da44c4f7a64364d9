"""Task ownership: every asyncio task the engine starts has one owner.

A `TaskOwner` keeps the tasks spawned (or adopted) through it until they end,
so nothing is left running once its owner is done with it: a response cancels
its own tasks when it is cancelled or fails, and the call cancels (and waits
for) all of its tasks when it closes. Finished tasks are forgotten at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class TaskOwner:
    """The live tasks of one owner (a call, a response, a group of transcriptions)."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        """Start `coro` as a task on the running loop and own it until it ends."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.add(task)
        return task

    def add(self, task: asyncio.Task[Any]) -> None:
        """Own a task started elsewhere (it is cancelled with this owner's tasks)."""
        if task.done():
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def pending(self) -> list[asyncio.Task[Any]]:
        """The tasks still running."""
        return [task for task in self._tasks if not task.done()]

    def cancel(self) -> None:
        """Ask every task to stop, without waiting; the calling task itself is spared."""
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()

    async def cancel_all(self, wait_s: float) -> None:
        """Cancel every task (but the calling one) and wait up to `wait_s` s for them to end."""
        current = asyncio.current_task()
        tasks = [task for task in self._tasks if task is not current]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait_s)

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self._tasks))

    def __repr__(self) -> str:
        return f"TaskOwner({self.name!r}, {len(self._tasks)} live)"
