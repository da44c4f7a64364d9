"""Spoken audio for the call tests (the live server and `question_pcm` are in
tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.clips import pcm24, piper_clip


@pytest.fixture(scope="session")
def story_pcm() -> bytes:
    clip = piper_clip("Please tell me a long story about a brave little dragon and a castle.")
    return pcm24(clip.samples, clip.rate)
