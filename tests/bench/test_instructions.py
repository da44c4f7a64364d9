"""The prose personas of the instructions eval (bench/prose.py, bench/instructions.py):
each question's answer is in its persona's prose, and the rules grade as they say."""

from __future__ import annotations

import pytest

from bench.bakery import Question, declined, grounded
from bench.instructions import Graded, summary
from bench.prose import DEV, ProsePersona
from bench.prose_dev2 import DEV2
from bench.prose_heldout import HELD_OUT


@pytest.mark.parametrize("persona", [*DEV, *DEV2, *HELD_OUT], ids=lambda p: p.name)
def test_every_answer_is_in_the_prose_and_no_unanswerable_one_is(persona: ProsePersona) -> None:
    prose = persona.instructions
    for question in persona.answerable:
        # the prose itself, as a reply, holds every required piece
        assert grounded(question, prose), question.text
    assert persona.unanswerable and all(not q.answerable for q in persona.unanswerable)
    assert len({q.text for q in (*persona.answerable, *persona.unanswerable)}) == len(
        persona.answerable
    ) + len(persona.unanswerable)


def test_the_held_out_set_shares_no_persona_or_question_with_the_development_set() -> None:
    dev = {q.text for p in (*DEV, *DEV2) for q in (*p.answerable, *p.unanswerable)}
    held = {q.text for p in HELD_OUT for q in (*p.answerable, *p.unanswerable)}
    assert not dev & held and not {p.name for p in (*DEV, *DEV2)} & {p.name for p in HELD_OUT}
    assert sum(len(p.answerable) for p in HELD_OUT) >= 20


def test_a_decline_never_counts_as_an_answer() -> None:
    question = Question("Are you open on Monday?", (("closed", "not open"),))
    assert not grounded(question, "I'm sorry, I don't know that.")
    assert declined("I'm sorry, I don't know that.") and not declined("We open at 9.")


def test_the_summary_counts_answers_retrieval_and_declines() -> None:
    graded = [
        Graded("p", "a", True, "yes", True, True),
        Graded("p", "b", True, "no", False, True),
        Graded("p", "c", False, "I don't know", True, None),
    ]
    s = summary(graded)
    assert (s["answered_right"], s["retrieved_first"], s["declined_right"]) == (0.5, 1.0, 1.0)
    assert s["right"] == round(2 / 3, 3)
