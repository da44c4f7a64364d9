import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from voiceapp.engine.inference import InferenceError, ThreadStream, collect


def counting(n: int, delay: float = 0.0) -> Callable[[threading.Event], Iterator[int]]:
    def start(cancel: threading.Event) -> Iterator[int]:
        for i in range(n):
            if cancel.is_set():
                return
            time.sleep(delay)
            yield i

    return start


async def test_thread_stream_yields_items_in_order(executor: ThreadPoolExecutor) -> None:
    assert await collect(ThreadStream(counting(5), executor)) == [0, 1, 2, 3, 4]


async def test_errors_reach_the_consumer_as_inference_errors(executor: ThreadPoolExecutor) -> None:
    def broken(cancel: threading.Event) -> Iterator[int]:
        yield 1
        raise RuntimeError("model exploded")

    with pytest.raises(InferenceError, match="model exploded"):
        await collect(ThreadStream(broken, executor))


async def test_aclose_stops_the_thread_within_one_item(executor: ThreadPoolExecutor) -> None:
    # given a slow stream holding a one-slot semaphore
    slot = threading.Semaphore(1)
    stream = ThreadStream(counting(100, delay=0.02), executor, slot)
    assert await stream.__anext__() == 0
    # when closed
    await stream.aclose()
    # then the slot is free again within about one item
    assert await asyncio.to_thread(slot.acquire, True, 0.2)


async def test_queue_time_is_the_wait_for_a_busy_slot(executor: ThreadPoolExecutor) -> None:
    # given a slot held by a first stream for ~150 ms
    slot = threading.Semaphore(1)
    first = ThreadStream(counting(3, delay=0.05), executor, slot)
    second = ThreadStream(counting(1), executor, slot)
    consume_first = asyncio.create_task(collect(first))
    await asyncio.sleep(0.02)
    # when a second stream needs the same slot
    assert await collect(second) == [0]
    await consume_first
    # then its queue time shows the wait
    assert second.queue_ms is not None and second.queue_ms > 50
    assert first.queue_ms is not None and first.queue_ms < 50
