"""Driving a `VoiceCall` in tests: a fast, deterministic config, audio pushed in
transport-sized chunks, frames read until a condition, and polling for one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import Frame
from voiceapp.engine.models import default_voice
from voiceapp.engine.turns import TurnSettings


def fast_config(**overrides: object) -> CallConfig:
    """A call config for tests: no playback pacing unless asked, deterministic replies."""
    base = CallConfig(
        voice=default_voice(),
        instructions="You are a helpful assistant.",
        playback_lead_ms=100_000,
        turns=TurnSettings(end_of_turn_ms=500),
    )
    base = replace(base, llm=replace(base.llm, temperature=0.0, max_tokens=40))
    return replace(base, **overrides)  # type: ignore[arg-type]


async def feed(
    call: VoiceCall, samples: np.ndarray, rate: int, *, realtime: bool, chunk_ms: int = 20
) -> None:
    """Push audio in transport-sized chunks, paced like a live microphone when `realtime`."""
    step = rate * chunk_ms // 1000
    started = time.monotonic()
    for i in range(0, len(samples), step):
        call.push_samples(samples[i : i + step], rate)
        if realtime:
            await asyncio.sleep(max(0.0, started + (i + step) / rate - time.monotonic()))
        else:
            await asyncio.sleep(0)


async def collect_until(
    call: VoiceCall, stop: Callable[[Frame], bool], timeout_s: float = 30.0
) -> list[Frame]:
    frames: list[Frame] = []
    async with asyncio.timeout(timeout_s):
        async for frame in call.frames():
            frames.append(frame)
            if stop(frame):
                break
    return frames


async def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `predicate` every 10 ms; True as soon as it holds, False after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True
