"""How the listener cuts the pauses inside a turn before the ASR reads it."""

from __future__ import annotations

import numpy as np

from voiceapp.engine.listener import shorten_pauses


def pieces(pattern: str) -> tuple[list[np.ndarray], list[bool]]:
    """One piece per letter: "s" speech, "q" quiet; each piece holds its own index."""
    return [np.full(2, i, np.float32) for i in range(len(pattern))], [c == "q" for c in pattern]


def kept(pattern: str, keep: int) -> list[int]:
    audio, quiet = pieces(pattern)
    return [int(p[0]) for p in shorten_pauses(audio, quiet, keep)]


def test_a_long_pause_between_words_keeps_its_first_and_last_pieces() -> None:
    # speech, 7 quiet pieces, speech: 4 of the pause stay, 2 after the words and 2 before
    assert kept("ssqqqqqqqss", 4) == [0, 1, 2, 3, 7, 8, 9, 10]
    # an odd number to keep: the larger half before the words that follow
    assert kept("sqqqqqqs", 3) == [0, 1, 5, 6, 7]


def test_short_pauses_and_the_pause_at_the_end_are_kept_whole() -> None:
    # pauses no longer than `keep`, and the quiet the turn may end on, are not cut
    assert kept("sqqqqsqqsqqqqqqqq", 4) == list(range(17))
