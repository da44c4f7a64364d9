"""`bench ws`'s summary: every question is counted, answered or not."""

from __future__ import annotations

from typing import Any

from bench.ws import summarize


def turn(status: str, v2v: float | None) -> dict[str, Any]:
    return {
        "question": "q",
        "voice": "piper",
        "transcript": "",
        "status": status,
        "client_v2v_ms": v2v,
        "client_audible_v2v_ms": v2v,
        "server": {},
        "prompt": {},
    }


def test_turns_without_a_reply_are_counted_by_status_and_left_out_of_the_figures() -> None:
    turns = [turn("completed", 500.0), turn("completed", 700.0)]
    turns += [turn("cancelled", None), turn("timeout", None)]

    summary = summarize(turns)

    assert (summary["turns"], summary["answered"]) == (4, 2)
    assert summary["statuses"] == {"completed": 2, "cancelled": 1, "timeout": 1}
    assert summary["client_v2v_ms"]["p50"] == 600.0
