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


class CountingEncoder:
    """The real sentence encoder, counting the texts it is given."""

    def __init__(self) -> None:
        from voiceapp.engine.embedder import shared_encoder

        encoder = shared_encoder()
        assert encoder is not None
        self.encoder = encoder
        self.texts: list[str] = []

    def encode(self, texts: list[str]) -> object:
        self.texts.extend(texts)
        return self.encoder.encode(texts)


def test_facts_that_carry_their_embedding_are_not_encoded_again() -> None:
    # given a document's passage embedded ahead, and a fact the business wrote
    encoder = CountingEncoder()
    passage_text = "There is no car park of our own. The town car park on Mill Lane is free."
    vector = encoder.encoder.encode([passage_text])[0]
    facts = [
        Fact(answer=passage_text, question="Parking", vector=vector, passage=True),
        Fact(answer="We open at 7 every weekday.", question="When are you open?"),
    ]
    base = KnowledgeBase(facts, encoder=encoder)
    # when a question is asked
    matches = base.retrieve("Is there somewhere I can leave my car?")
    # then only the fact without an embedding and the question were encoded
    assert encoder.texts == [
        "When are you open? We open at 7 every weekday.",
        "Is there somewhere I can leave my car?",
    ]
    # and the passage, which shares few words with the question, answers it by meaning
    assert matches and matches[0].fact.answer == passage_text


def test_a_passage_answers_by_meaning_and_words_together_and_declines_the_rest() -> None:
    from voiceapp.engine.embedder import shared_encoder

    encoder = shared_encoder()
    texts = [
        ("Payment", "We take card and contactless payments as well as cash."),
        ("Grooming", "A full groom includes a bath, a blow-dry, a haircut and a nail clip."),
        ("Cancellations", "Please give us 48 hours' notice if you need to cancel."),
    ]
    assert encoder is not None
    vectors = encoder.encode([f"{h} {t}" for h, t in texts])
    facts = [
        Fact(answer=t, question=h, vector=v, passage=True)
        for (h, t), v in zip(texts, vectors, strict=True)
    ]
    base = KnowledgeBase(facts, encoder=encoder)
    assert base.retrieve("Can I pay with my bank card?")[0].fact.question == "Payment"
    assert base.retrieve("How much notice do you need to cancel?")[0].fact.question == (
        "Cancellations"
    )
    assert base.retrieve("Do you sell dog food and leads?") == []


def test_a_passage_that_stands_out_from_the_others_answers_below_the_bar() -> None:
    from voiceapp.engine.embedder import shared_encoder
    from voiceapp.engine.knowledge import RetrievalSettings

    encoder = shared_encoder()
    assert encoder is not None
    texts = [
        ("Payment", "We take card and contactless payments as well as cash."),
        ("Grooming", "A full groom includes a bath, a blow-dry, a haircut and a nail clip."),
        ("Cancellations", "Please give us 48 hours' notice if you need to cancel."),
        ("Puppies", "Puppies can come for their first groom from 12 weeks, after their jabs."),
    ]
    vectors = encoder.encode([f"{h} {t}" for h, t in texts])
    facts = [
        Fact(answer=t, question=h, vector=v, passage=True)
        for (h, t), v in zip(texts, vectors, strict=True)
    ]
    base = KnowledgeBase(facts, encoder=encoder)
    without = KnowledgeBase(facts, RetrievalSettings(passage_margin_min=1.0), encoder=encoder)
    # given questions no passage answers by itself, but one is far nearer than the rest
    for question, heading in (
        ("Is my puppy old enough to come in?", "Puppies"),
        ("My dog hates baths, what do you do?", "Grooming"),
    ):
        assert without.retrieve(question) == []
        # then that passage answers, at the bar
        [match] = base.retrieve(question)
        assert match.fact.question == heading and match.score == base.settings.min_score
    # and questions that are about equally far from all of them are still declined
    for question in ("Do you sell dog food and leads?", "Can I bring my cat?"):
        assert base.retrieve(question) == []


def test_a_sentence_of_prose_answers_by_words_and_meaning_together() -> None:
    from voiceapp.engine.embedder import shared_encoder

    encoder = shared_encoder()
    assert encoder is not None
    prose = [
        "The main pool opens at half past six on weekday mornings and closes at 9 pm.",
        "An adult swim costs £4.80; juniors under 16 pay £2.60; under-fives swim free.",
        "Parking in the car park off Mill Road is free for 3 hours.",
    ]
    # "a grown-up" is an "adult" by meaning only, and not by enough alone: the price
    # the question asks for, and its meaning, answer it together
    question = "What's the price for a grown-up?"
    words_alone = KnowledgeBase([Fact(p) for p in prose])
    assert words_alone.retrieve(question) == []
    base = KnowledgeBase([Fact(p) for p in prose], encoder=encoder)
    assert base.retrieve(question)[0].fact.answer == prose[1]
    assert base.retrieve("Is there a sauna or a steam room?") == []
    # a fact the business wrote with its own question is not scored so
    written = KnowledgeBase([Fact(prose[1], "How much is an adult swim?")], encoder=encoder)
    assert written.retrieve(question) == []
