"""Spoken questions for the call tests (the live server is in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.clips import pcm24, piper_clip


@pytest.fixture(scope="session")
def question_pcm() -> bytes:
    """“What is the capital of France?” spoken by Piper, as PCM16 24 kHz mono."""
    clip = piper_clip("What is the capital of France?")
    return pcm24(clip.samples, clip.rate)


@pytest.fixture(scope="session")
def story_pcm() -> bytes:
    clip = piper_clip("Please tell me a long story about a brave little dragon and a castle.")
    return pcm24(clip.samples, clip.rate)
