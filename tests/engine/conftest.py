"""Fixtures for the engine tests: calls on the real models, the owner of the tasks a
test starts, and a thread pool (helpers are in tests/support/)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.engine_calls import fast_config
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.tasks import TaskOwner
from voiceapp.engine.vad import SileroModel


@pytest.fixture
async def new_call(
    models: LocalInference, vad_model: SileroModel
) -> AsyncIterator[Callable[..., VoiceCall]]:
    calls: list[VoiceCall] = []

    def make(config: CallConfig | None = None, **overrides: object) -> VoiceCall:
        call = VoiceCall(config or fast_config(**overrides), models, vad_model)
        calls.append(call)
        return call

    yield make
    for call in calls:
        await call.close()


@pytest.fixture
async def task_owner() -> AsyncIterator[TaskOwner]:
    """The owner of the engine tasks a test starts, as a call's; cancelled after the test."""
    owner = TaskOwner("test")
    yield owner
    await owner.cancel_all(5.0)


@pytest.fixture(scope="session")
def executor() -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(max_workers=4)
    yield pool
    pool.shutdown(wait=False, cancel_futures=True)
