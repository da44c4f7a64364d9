"""The engine's task owner: spawned tasks are tracked until they end and cancelled together."""

import asyncio

from voiceapp.engine.tasks import TaskOwner


async def test_finished_tasks_are_forgotten() -> None:
    # given an owner with a task that ends at once and one that waits
    owner = TaskOwner("test")
    release = asyncio.Event()
    quick = owner.spawn(asyncio.sleep(0), name="quick")
    slow = owner.spawn(release.wait(), name="slow")
    # when the quick one has finished
    await quick
    await asyncio.sleep(0)
    # then only the waiting task is still owned
    assert owner.pending() == [slow]
    assert len(owner) == 1 and quick.get_name() == "quick"
    release.set()
    await slow
    await asyncio.sleep(0)
    assert len(owner) == 0


async def test_cancel_all_cancels_and_waits_for_every_task() -> None:
    # given tasks that clean up when cancelled
    owner = TaskOwner("test")
    cleaned: list[int] = []

    async def worker(n: int) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits
            cleaned.append(n)

    tasks = [owner.spawn(worker(n)) for n in range(3)]
    await asyncio.sleep(0)
    # when they are all cancelled
    await owner.cancel_all(wait_s=5.0)
    # then each one ran its cleanup and ended cancelled before cancel_all returned
    assert sorted(cleaned) == [0, 1, 2]
    assert all(task.cancelled() for task in tasks)
    await asyncio.sleep(0)
    assert len(owner) == 0


async def test_cancel_spares_the_calling_task_and_adopts_outside_tasks() -> None:
    # given an owner holding its own calling task and a task started elsewhere
    owner = TaskOwner("test")
    outside = asyncio.get_running_loop().create_task(asyncio.sleep(3600))
    owner.add(outside)
    outcome: list[str] = []

    async def cancels_its_owner() -> None:
        owner.cancel()
        await asyncio.sleep(0)
        outcome.append("still running")

    me = owner.spawn(cancels_its_owner())
    # when that task cancels its owner's tasks
    await me
    # then the outside task is cancelled and the caller ran to its end
    assert outcome == ["still running"]
    await asyncio.wait([outside], timeout=5.0)
    assert outside.cancelled()


async def test_a_task_already_done_is_not_owned() -> None:
    owner = TaskOwner("test")
    task = asyncio.get_running_loop().create_task(asyncio.sleep(0))
    await task
    owner.add(task)
    assert len(owner) == 0 and owner.pending() == []
