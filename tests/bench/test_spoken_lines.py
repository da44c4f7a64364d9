"""The spoken-lines bench (bench/spoken_lines.py) as a CI slice: three passes over
the written lines, each clause replayed from its third time."""

from __future__ import annotations

import argparse

import pytest

from bench.spoken_lines import clauses, run, written_lines


def test_every_written_line_is_cut_into_clauses_as_the_writer_cuts_it() -> None:
    lines = written_lines()
    assert len(lines) >= 10
    for line in lines:
        assert " ".join(clauses(line)).split() == line.split(), line


def test_from_the_third_pass_every_clause_is_replayed() -> None:
    report = run(argparse.Namespace(rounds=3))

    first, second, third = report["rounds"]
    clauses_said = report["summary"]["clauses"]
    # a clause said twice within a pass is replayed the second time already
    assert first["replayed"] < clauses_said and second["replayed"] < clauses_said
    assert third["replayed"] == clauses_said
    # the same speech, each time
    assert third["audio_s"] == pytest.approx(second["audio_s"], rel=0.02)
    assert report["summary"]["kept_mb"] > 0
