"""The post-call analysis bench (bench/analysis.py) as a CI slice: its calls are
sound, and the development calls are graded through the analyst a call's end runs."""

from __future__ import annotations

import argparse

from bench.analysis import analysts, field_right, grade, summary
from bench.analysis_cases import DEV, HELD_OUT, check


def test_the_written_calls_are_sound() -> None:
    check()
    assert len(DEV) >= 12 and len(HELD_OUT) >= 12


def test_fields_are_graded_by_their_accepted_forms() -> None:
    assert field_right("callback_number", "07700 900 123", ("07700900123",))
    assert not field_right("callback_number", "07700 900 906", ("07700900909",))
    assert field_right("caller_name", None, None)
    assert not field_right("caller_name", "Fiona", ("fiona mcleish", "mcleish"))
    assert field_right("booked_date", "next Tuesday at 9", ("next tuesday", "tuesday"))


def test_the_development_calls_are_graded_with_the_rules() -> None:
    rules = analysts(argparse.Namespace(endpoint="", model="", api_key=""))["rules"]
    graded = [grade(case, rules) for case in DEV]
    result = summary(graded)
    assert result["calls"] == len(DEV)
    assert 0 <= result["fields_right"] <= 1 and 0 <= result["verdict_right"] <= 1
    assert all(g.summary for g in graded)
