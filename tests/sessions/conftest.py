"""Spoken questions for the call tests (the live server is in tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest

from voiceapp.engine.audio import resample


def pcm24(samples: np.ndarray, rate: int) -> bytes:
    mono = resample(samples, rate, 24000)
    return (np.clip(mono, -1, 1) * 32767).astype("<i2").tobytes()


@pytest.fixture(scope="session")
def question_pcm() -> bytes:
    """“What is the capital of France?” spoken by Piper, as PCM16 24 kHz mono."""
    from tests.engine.conftest import piper_clip

    clip = piper_clip("What is the capital of France?")
    return pcm24(clip.samples, clip.rate)


@pytest.fixture(scope="session")
def story_pcm() -> bytes:
    from tests.engine.conftest import piper_clip

    clip = piper_clip("Please tell me a long story about a brave little dragon and a castle.")
    return pcm24(clip.samples, clip.rate)
