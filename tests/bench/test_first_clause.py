"""`./dev bench first-clause` at CI size: the set's first turns, one round. It checks
that both chunkers are timed on one stream and cut the same clause, not how fast
this machine is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.first_clause import parser, run


@pytest.mark.slow
def test_the_first_clause_cut_at_its_mark_is_the_same_clause_and_no_later(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run(parser().parse_args(["--turns", "8"]))

    assert report["replies"] >= 6
    for row in report["rows"]:
        mark, later = row["at_mark"], row["next_token"]
        # the same clause, never after the one that waited for the next word
        assert mark["clause"] == later["clause"]
        assert mark["ms"] <= later["ms"]
        # at most the one token that would have confirmed the mark
        assert later["tokens"] - mark["tokens"] in (0, 1)
    # a full stop or a comma ended the first clause of some of these replies
    assert report["earlier_in"] >= 1
    # and the printed line and the results file say the same
    out = capsys.readouterr().out
    assert f"{report['replies']} replies" in out
    written = Path(out.strip().splitlines()[-1].removeprefix("wrote "))
    assert json.loads(written.read_text()) == report
