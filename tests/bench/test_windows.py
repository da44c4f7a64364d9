"""`./dev bench windows` at CI size: one round, no busy core. It checks that the
figures are measured and well formed, not how fast this machine is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.windows import CLAUSES, parser, run


@pytest.mark.slow
def test_clauses_are_timed_both_ways_and_their_windows_are_the_whole(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run(parser().parse_args(["--rounds", "1", "--busy", "0"]))

    # the windows joined are the whole, within a 16-bit step
    assert 0 <= report["max_diff_lsb"] < 1
    (row,) = report["arms"]
    assert row["busy_cores"] == 0
    for how in ("whole", "windowed"):
        r = row[how]
        assert 0 < r["first_audio_ms_p50"] <= r["first_audio_ms_p95"]
        assert r["first_audio_ms_p50"] <= r["last_audio_ms_p50"]
        assert r["cpu_s"] > 0
        # every clause was said, each about 0.4-6 s of speech
        assert 0.4 * len(CLAUSES) < r["audio_s"] < 6 * len(CLAUSES)
    # the same clauses both ways: the same speech within Piper's own variation
    assert (
        abs(row["windowed"]["audio_s"] - row["whole"]["audio_s"]) < 0.15 * row["whole"]["audio_s"]
    )
    assert set(row["ratio"]) == {"first_audio_p50", "first_audio_p95", "cpu"}
    # and the table and the results file say the same
    out = capsys.readouterr().out
    assert "windowed" in out and "whole" in out
    written = Path(out.strip().splitlines()[-1].removeprefix("wrote "))
    assert json.loads(written.read_text()) == report
