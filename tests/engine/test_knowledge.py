"""Retrieval of persona facts for a caller's words."""

from __future__ import annotations

import time

import pytest

from bench.bakery import ANSWERABLE, FACTS, INSTRUCTIONS, UNANSWERABLE
from voiceapp.engine.knowledge import Fact, KnowledgeBase, terms


@pytest.fixture(scope="module")
def bakery() -> KnowledgeBase:
    return KnowledgeBase(FACTS, background=INSTRUCTIONS)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What time do you open on Saturday?", "On Saturday we open at 8 am"),
        ("um, when are you open during the week?", "Monday to Friday"),
        ("How much does delivery cost?", "We deliver within 5 miles"),
        ("Can I pay with a credit card?", "We accept cash"),
        ("What's your email address?", "hello@rosiesbakery.com"),
        ("How far in advance should I order a birthday cake?", "48 hours"),
        ("What does the sourdough bread cost?", "sourdough costs 6 dollars"),
    ],
)
def test_the_fact_that_answers_comes_first(
    bakery: KnowledgeBase, question: str, expected: str
) -> None:
    matches = bakery.retrieve(question)

    assert matches, question
    assert expected in matches[0].fact.answer


def test_a_question_the_facts_do_not_cover_retrieves_nothing(bakery: KnowledgeBase) -> None:
    # "bread" is in the facts, but most of what was asked ("gluten-free") is not.
    assert bakery.retrieve("Do you sell gluten-free bread?") == []
    assert bakery.retrieve("Who is the owner of the bakery?") == []
    assert bakery.retrieve("Hello there!") == []


def test_retrieval_covers_the_evaluation_set(bakery: KnowledgeBase) -> None:
    hits = sum(bool(bakery.retrieve(q.text)) for q in ANSWERABLE)
    misses = sum(not bakery.retrieve(q.text) for q in UNANSWERABLE)

    assert hits / len(ANSWERABLE) >= 0.9
    assert misses / len(UNANSWERABLE) >= 0.9


def test_retrieval_takes_well_under_a_millisecond_per_question_on_200_facts() -> None:
    facts = [Fact(f"Product {i} costs {i} dollars and ships in {i % 7} days.") for i in range(200)]
    kb = KnowledgeBase([*facts, *FACTS])
    started = time.perf_counter()
    for q in ANSWERABLE:
        kb.retrieve(q.text)
    per_question_ms = (time.perf_counter() - started) * 1000 / len(ANSWERABLE)

    # Generous bound (shared, noisy machines): the point is "no model round trip".
    assert per_question_ms < 20


def test_terms_stem_and_drop_fillers() -> None:
    assert terms("Um, could you tell me when you're opening?") == ["when", "open"]
    assert terms("Deliveries on weekdays") == ["deliver", "week"]


def test_an_empty_knowledge_base_retrieves_nothing() -> None:
    assert KnowledgeBase([]).retrieve("What time do you open?") == []


def test_meaning_ranks_the_fact_that_answers_above_one_that_only_shares_a_topic() -> None:
    from voiceapp.engine.embedder import shared_encoder

    facts = [
        Fact("We are at 9 Church Street, opposite the library."),
        Fact("There is no car park of our own, but the public one is a short walk from the shop."),
        Fact("Gluten-free loaves are baked on Wednesdays."),
    ]
    words_only = KnowledgeBase(facts)
    hybrid = KnowledgeBase(facts, encoder=shared_encoder())
    question = "Is there parking near you?"
    # by words, a place (the address) scores as high as the parking fact, and comes first
    by_words = words_only.retrieve(question)
    assert by_words[0].fact == facts[0] and by_words[0].score == by_words[1].score
    # by meaning too, the parking fact is the answer
    assert hybrid.retrieve(question)[0].fact == facts[1]
    assert hybrid.retrieve("Where can I park?")[0].fact == facts[1]
    # and what no fact is about is still not answered
    assert hybrid.retrieve("Do you sell umbrellas?") == []
