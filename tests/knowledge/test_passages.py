"""Cutting a document's sections into passages the agent can retrieve and speak."""

from __future__ import annotations

from voiceapp.knowledge.extract import Section
from voiceapp.knowledge.passages import MAX_PASSAGE_CHARS, Passage, passages_of


def test_long_sentences_are_passages_of_their_own_under_their_heading() -> None:
    first = "There is free parking for up to two hours in the yard behind the shop on Mill Lane."
    second = "Bicycles can be locked to the rails by the front door, which are covered by a camera."
    assert passages_of([Section("Parking", [f"{first} {second}"])]) == [
        Passage("Parking", first),
        Passage("Parking", second),
    ]


def test_short_sentences_of_a_paragraph_stay_together() -> None:
    text = "There is no car park of our own. The town car park on Mill Lane is free."
    assert passages_of([Section("Parking", [text])]) == [Passage("Parking", text)]


def test_a_sentence_that_leans_on_the_one_before_stays_with_it() -> None:
    sections = [Section("Cakes", ["We make birthday cakes to order in any size. It takes 3 days."])]
    assert passages_of(sections) == [
        Passage("Cakes", "We make birthday cakes to order in any size. It takes 3 days.")
    ]


def test_an_opening_question_becomes_the_passages_question() -> None:
    sections = [Section("FAQ", ["Do you deliver? Yes, within five miles, for £4 an order."])]
    assert passages_of(sections) == [
        Passage("Do you deliver?", "Yes, within five miles, for £4 an order.")
    ]


def test_list_items_are_gathered_under_their_heading() -> None:
    sections = [Section("Payment methods", ["Visa", "Mastercard", "Cash"])]
    assert passages_of(sections) == [
        Passage("Payment methods", "Payment methods: Visa, Mastercard, Cash.")
    ]
    prices = [Section("Prices", ["Check-up: £45", "Filling: £90"])]
    assert passages_of(prices) == [Passage("Prices", "Prices: Check-up: £45; Filling: £90.")]


def test_long_lists_are_cut_into_passages_that_can_be_spoken() -> None:
    items = [f"Model number {n} in stock" for n in range(60)]
    passages = passages_of([Section("Stock", items)])
    assert len(passages) > 1
    assert all(len(p.text) <= MAX_PASSAGE_CHARS + len("Stock: .") for p in passages)
    assert sum(p.text.count("Model number") for p in passages) == 60


def test_list_items_are_gathered_a_short_answer_at_a_time() -> None:
    # a passage is spoken whole: seven selling points in one would answer anything
    items = [
        "Servicing to the maker's schedule, so your warranty stays valid",
        "A written estimate before any work starts",
        "Free courtesy car for services and repairs, subject to availability",
        "Comfortable waiting room with free Wi-Fi, tea and coffee",
    ]
    passages = passages_of([Section("Why choose us", items)])
    assert len(passages) == 2
    assert all(len(p.text) <= 160 + len("Why choose us: .") for p in passages)
    assert all(sum(item in p.text for p in passages) == 1 for item in items)
    assert "courtesy car" in passages[1].text and "warranty" not in passages[1].text
