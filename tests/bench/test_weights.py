"""`./dev bench weights` at CI size: one re-encoding, two rounds. It checks that the
figures are measured and well formed, not how fast this machine is."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.weights import parser, run


@pytest.mark.slow
def test_a_re_encoding_is_timed_and_compared_with_the_packaged_weights(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = run(parser().parse_args(["--encodings", "Q8_0", "--rounds", "2", "--written", "3"]))

    packaged, copy = report["encodings"]["packaged"], report["encodings"]["Q8_0"]
    for row in (packaged, copy):
        assert row["new_tokens"] > 10 and row["read_ms"] > 0 and row["write_ms_per_token"] > 0
    # the 8-bit copy is larger than the packaged 4-bit file, and close to it
    assert copy["file_mb"] > 1.3 * packaged["file_mb"]
    assert 0 <= copy["mean_kl"] < 0.05 and copy["same_top_token"] > 0.8, copy
    assert copy["positions"] > 100
    # and the table and the results file say the same
    out = capsys.readouterr().out
    assert "Q8_0" in out and "packaged" in out
    written = Path(out.strip().splitlines()[-1].removeprefix("wrote "))
    assert json.loads(written.read_text()) == report
    assert all(math.isfinite(v) for v in copy.values() if isinstance(v, float))
