"""`./dev bench pauses` at CI size: one sentence, one voice, one pause, two starts, both
arms. It checks that every reading is made, scored and written, not how well tiny.en
reads (tests/engine/test_call.py holds the call to that)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.pauses import parser, run


@pytest.mark.slow
def test_each_arm_reads_every_rendition_and_the_report_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--voices", "piper joe", "--sentences", "0", "--pauses", "1.0", "--offsets", "2"]
    report = run(parser().parse_args([*args, "--read", "0,256"]))

    assert set(report["readings"]) == {"whole", "read_256"}
    for arm, rows in report["readings"].items():
        assert [r["offset_ms"] for r in rows] == [0, 4], arm
        assert all(r["asr_ms"] > 0 and "capital" in r["heard"].lower() for r in rows), rows
        summary = report["summary"][arm]
        assert summary["readings"] == 2 and 0 <= summary["wer"] <= 1
        assert summary["dropped_after_pause"] == sum(r["dropped_after_pause"] for r in rows)
    # the pause is read shorter in the second arm: 1 s of it cut to 256 ms
    whole, cut = (report["readings"][a][0]["asr_audio_s"] for a in ("whole", "read_256"))
    assert 0.6 < whole - cut < 0.85, (whole, cut)
    # and the table and the results file say the same
    out = capsys.readouterr().out
    assert "read_256" in out and "pause 1.0 s" in out
    written = Path(out.strip().splitlines()[-1].removeprefix("wrote "))
    assert json.loads(written.read_text()) == report
