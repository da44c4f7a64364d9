"""The contention bench (bench/contention.py) as a CI slice: every cell timed twice."""

from __future__ import annotations

from bench.contention import run


def test_every_cell_is_timed_with_the_real_models() -> None:
    report = run(repeat=2)

    cells = {(r["batch_threads"], r["busy_cores"]) for r in report["llm_prompt"]}
    assert cells == {(t, b) for t in (1, 2) for b in (0, 1, 2)}
    assert [r["background_nice"] for r in report["first_clause"]] == [0, 10, None]
    for row in report["llm_prompt"] + report["first_clause"]:
        assert row["n"] == 2
        assert 0 < row["median_ms"] <= row["max_ms"]
