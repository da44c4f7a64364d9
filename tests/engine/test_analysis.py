"""The analysis the built-in rules write after a call: fields from the caller's
words, an extractive summary, and a success verdict by meaning."""

from __future__ import annotations

import pytest

from voiceapp.engine.analysis import Line, RulesAnalyst
from voiceapp.engine.embedder import shared_encoder

SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "description": "why they called"},
        "caller_name": {"type": "string"},
        "callback_number": {"type": "string"},
        "booked_date": {"type": "string", "description": "the date of the appointment"},
        "urgency": {"type": "string", "enum": ["routine", "urgent"]},
    },
}
BOOKED = [
    Line("assistant", "Hello, Harbour Dental, how can I help?"),
    Line("user", "Hi, I've got a really bad toothache, it's urgent, can someone see me?"),
    Line("assistant", "I can book you in on Monday at 9. What is your name?"),
    Line("user", "My name is Sarah Jenkins. Actually, could it be Tuesday instead?"),
    Line("assistant", "Of course. And a number to reach you?"),
    Line("user", "It's oh seven seven double oh, nine oh oh, one two three."),
    Line("assistant", "Thank you Sarah, your appointment is booked for Tuesday at 10 am."),
    Line("user", "Thanks, bye."),
]


@pytest.fixture(scope="module")
def analyst() -> RulesAnalyst:
    return RulesAnalyst(shared_encoder())


def test_fields_come_from_the_callers_words_the_latest_first(analyst: RulesAnalyst) -> None:
    result = analyst.analyze(BOOKED, SCHEMA, "")
    assert result.fields == {
        "reason": "Hi, I've got a really bad toothache, it's urgent, can someone see me?",
        "caller_name": "Sarah Jenkins",
        "callback_number": "07700900123",  # said in words
        "booked_date": "Tuesday at 10 am",  # changed, and confirmed by the agent
        "urgency": "urgent",
    }
    assert result.success is None and result.method == "rules"  # no criterion: no verdict


def test_the_summary_says_who_asked_what_and_what_was_agreed(analyst: RulesAnalyst) -> None:
    summary = analyst.analyze(BOOKED, SCHEMA, "").summary
    assert "toothache" in summary and "Tuesday" in summary and "07700900123" in summary
    assert summary.count(".") <= 6


def test_success_is_judged_by_what_the_agent_said(analyst: RulesAnalyst) -> None:
    booked = analyst.analyze(BOOKED, SCHEMA, "The caller booked an appointment.")
    asked_only = analyst.analyze(
        [
            Line("user", "Hi, what time do you close on Fridays?"),
            Line("assistant", "We close at 5 pm on Fridays."),
            Line("user", "Okay thanks, bye."),
        ],
        SCHEMA,
        "The caller booked an appointment.",
    )
    assert booked.success is True and "booked" in booked.success_reason
    assert asked_only.success is False
    assert asked_only.fields["callback_number"] is None and asked_only.fields["caller_name"] is None


def test_a_call_with_nothing_said_still_gets_a_record(analyst: RulesAnalyst) -> None:
    result = analyst.analyze([Line("assistant", "Hello, how can I help?")], SCHEMA, "")
    assert result.summary == "The caller said nothing the agent could answer."
    assert set(result.fields) == set(SCHEMA["properties"])
