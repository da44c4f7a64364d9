"""How the tool-choice eval (bench/tool_choice.py) counts: its sets, its argument
rule and its precision and recall, on outcomes like those of its first run; and
the router's choices on the development set (a CI slice of `--router-only`)."""

from __future__ import annotations

import json

import pytest

from bench.tool_cases import CASES, TOOLS
from bench.tool_choice import Outcome, arguments_match, route_only, summary
from bench.tool_dev_cases import BUSINESSES
from voiceapp.engine.tools import schema_problem


def test_the_set_covers_four_tools_and_requests_that_need_none() -> None:
    needs = [c for c in CASES if c.tool is not None]
    assert len(TOOLS) == 4 and {c.tool for c in needs} == {t.name for t in TOOLS}
    assert len(needs) >= 30 and len(CASES) - len(needs) >= 15
    assert len({c.text for c in CASES}) == len(CASES)
    # every argument a case checks is one its tool declares, and every schema is valid
    for tool in TOOLS:
        assert schema_problem(json.loads(tool.parameters)) is None
    declared = {t.name: set(json.loads(t.parameters)["properties"]) for t in TOOLS}
    assert all(set(c.arguments) <= declared[c.tool] for c in needs if c.tool)


def test_arguments_match_by_pattern_and_need_every_one() -> None:
    [case] = [c for c in CASES if c.text.startswith("I'd like to book my bike in")]
    assert arguments_match(case, {"day": "Friday", "name": "Anna Berg"})
    assert not arguments_match(case, {"day": "Friday"})
    assert not arguments_match(case, {"day": "2018-03-25", "name": "Anna"})


def test_precision_recall_and_false_calls() -> None:
    outcomes = [
        Outcome("a", "lookup_order", "lookup_order", arguments_ok=True, latency_ms=300.0),
        Outcome("b", "lookup_order", "check_stock", latency_ms=500.0),
        Outcome("c", "check_stock", None, reply="Sorry.", latency_ms=150.0),
        Outcome("d", None, "cancel_booking", latency_ms=400.0),
        Outcome("e", None, None, reply="Hello!", latency_ms=140.0),
    ]
    s = summary(outcomes)
    assert (s["need_a_tool"], s["calls_made"]) == (3, 3)
    assert s["precision"] == round(1 / 3, 3) and s["recall"] == round(1 / 3, 3)
    assert s["arguments_correct"] == round(1 / 3, 3)
    assert (s["false_calls_on_none"], s["answered_in_words_on_none"]) == (1, 1)
    assert (s["to_call_p50_ms"], s["to_first_audio_p50_ms"]) == (400.0, 145.0)


def test_no_calls_at_all_is_no_precision_and_zero_recall() -> None:
    s = summary([Outcome("a", "lookup_order", None, reply="I don't know.")])
    assert s["precision"] is None and s["recall"] == 0.0 and s["arguments_correct"] == 0.0


@pytest.mark.parametrize("business", BUSINESSES, ids=lambda b: b.name)
def test_each_development_business_is_well_formed(business: object) -> None:
    from bench.tool_dev_cases import Business

    assert isinstance(business, Business)
    declared = {t.name: set(json.loads(t.parameters)["properties"]) for t in business.tools}
    assert all(schema_problem(json.loads(t.parameters)) is None for t in business.tools)
    needs = [c for c in business.cases if c.tool is not None]
    assert {c.tool for c in needs} == set(declared)
    assert all(set(c.arguments) <= declared[c.tool] for c in needs if c.tool)
    assert not {c.text for c in business.cases} & {c.text for c in CASES}  # held out


def test_the_router_on_the_development_set_calls_nothing_unneeded() -> None:
    # what the thresholds were set on (docs/TOOLS.md has the held-out figures)
    s = summary(route_only(BUSINESSES))
    assert s["false_calls_on_none"] == 0 and s["precision"] == 1.0
    assert s["recall"] >= 0.9 and s["arguments_correct"] >= 0.9
