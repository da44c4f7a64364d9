"""The prompt a call sends its LLM: facts next to the question, for small models."""

from __future__ import annotations

from bench.bakery import FACTS, INSTRUCTIONS
from voiceapp.engine.knowledge import Fact
from voiceapp.engine.prompt import (
    DEFAULT_DECLINE,
    GROUNDING_RULE,
    PromptBuilder,
    facts_from_instructions,
    is_question,
)


def bakery(**kwargs: object) -> PromptBuilder:
    return PromptBuilder(instructions=INSTRUCTIONS, facts=FACTS, **kwargs)  # type: ignore[arg-type]


def test_a_grounded_prompt_has_the_rule_the_examples_and_the_history() -> None:
    builder = bakery()
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]

    messages = builder.messages(history)

    assert messages[0]["role"] == "system"
    assert INSTRUCTIONS in messages[0]["content"]
    assert GROUNDING_RULE in messages[0]["content"]
    # an English persona is not told its language: SmolLM2 took "Always answer in
    # English." for the topic, and answered questions with what languages it speaks
    assert "English" not in messages[0]["content"]
    # two worked examples (question with its fact, answer), then the call's history
    assert [m["role"] for m in messages[1:5]] == ["user", "assistant", "user", "assistant"]
    assert messages[5:] == history


def test_the_retrieved_fact_goes_next_to_the_question() -> None:
    turn = bakery().turn("What time do you open on Saturday?")

    assert turn.content == (
        "Facts: On Saturday we open at 8 am and close at 2 pm. We are closed on Sundays.\n"
        "Caller: What time do you open on Saturday?"
    )
    assert turn.direct == "On Saturday we open at 8 am and close at 2 pm. We are closed on Sundays."


def test_facts_tied_for_best_are_all_spoken() -> None:
    turn = bakery().turn("What are your opening hours?")

    assert turn.direct is not None
    assert "Monday to Friday" in turn.direct
    assert "On Saturday" in turn.direct


def test_no_direct_answers_when_switched_off() -> None:
    turn = bakery(direct_min_score=None).turn("What time do you open on Saturday?")

    assert turn.direct is None
    assert "8 am" in turn.content


def test_an_unanswerable_question_says_no_fact_answers_it() -> None:
    turn = bakery().turn("Do you have wifi?")

    assert turn.content == "Facts: none that answer this.\nCaller: Do you have wifi?"
    assert turn.direct == DEFAULT_DECLINE  # said as written by the small model
    assert bakery(direct_min_score=None).turn("Do you have wifi?").direct is None


def test_questions_about_the_call_itself_go_to_the_llm() -> None:
    for question in ("Can you hear me?", "How are you?", "What's your name?", "Are you a robot?"):
        assert bakery().turn(question).direct is None, question


def test_small_talk_carries_no_facts_line() -> None:
    assert bakery().turn("Thanks, that's all.").content == "Caller: Thanks, that's all."


def test_a_persona_without_knowledge_gets_the_plain_prompt() -> None:
    builder = PromptBuilder(instructions="You are a helpful assistant.")

    assert not builder.grounded
    assert builder.examples() == []
    assert builder.turn("What is the capital of France?").content == (
        "What is the capital of France?"
    )
    assert GROUNDING_RULE not in builder.system()


def test_facts_written_into_the_instructions_are_retrieved_too() -> None:
    instructions = (
        "You are the assistant of Kim's Garage. Be polite.\n"
        "- We are open Monday to Saturday from 8 am to 5 pm.\n"
        "- An oil change costs 49 dollars."
    )
    builder = PromptBuilder(instructions=instructions)

    assert builder.grounded
    assert "49 dollars" in (builder.turn("How much is an oil change?").direct or "")
    assert facts_from_instructions(instructions) == [
        Fact("We are open Monday to Saturday from 8 am to 5 pm."),
        Fact("An oil change costs 49 dollars."),
    ]


def test_another_language_is_pinned_in_the_system_prompt_and_the_turn() -> None:
    builder = PromptBuilder(instructions="Du bist ein Assistent.", facts=FACTS, language="de")

    assert builder.system().endswith("Always answer in German.")
    assert builder.turn("Do you have wifi?").content.endswith("Answer in German.")


def test_the_callers_own_words_are_read_back_out_of_a_turn_as_sent() -> None:
    builder = PromptBuilder(instructions="Du bist ein Assistent.", facts=FACTS, language="de")
    english = bakery()

    for b, text in ((builder, "Do you have wifi?"), (english, "Do you sell bread?")):
        assert b.caller_words(b.turn(text).content) == text
    assert english.caller_words("Thanks, bye.") == "Thanks, bye."  # plain words as they are


def test_questions_are_told_from_statements() -> None:
    assert is_question("do you deliver")
    assert is_question("So, what time do you close?")
    assert is_question("Okay.  Is there parking?")
    assert not is_question("Thanks, goodbye.")
    assert not is_question("I would like to order a cake")


def test_sentences_addressed_to_the_agent_are_not_facts() -> None:
    instructions = (
        "You are the phone assistant of Kim's Garage. Always be polite on the phone.\n"
        "Our phone number is 555-0199."
    )

    assert facts_from_instructions(instructions) == [Fact("Our phone number is 555-0199.")]


def test_a_persona_told_only_how_to_behave_is_not_grounded() -> None:
    # "You tell long stories." tells the agent what to do: a persona with it alone
    # knows nothing of a business, and does not decline a story
    for instructions in (
        "You tell long, detailed stories of at least ten sentences.",
        "You are a storyteller. Whatever you are asked, you tell a long, detailed story.",
    ):
        builder = PromptBuilder(instructions=instructions)

        assert not builder.grounded, instructions
        assert builder.turn("Tell me a long story about a dragon.").direct is None, instructions


def test_sentences_telling_the_caller_what_they_can_do_are_facts() -> None:
    instructions = (
        "You can pay with cash or any card. You'll find us behind the station. "
        "You need an appointment for a fitting. You write short answers. "
        "Whatever you are asked, you tell a story."
    )

    assert facts_from_instructions(instructions) == [
        Fact("You can pay with cash or any card."),
        Fact("You'll find us behind the station."),
        Fact("You need an appointment for a fitting."),
    ]


def test_greetings_and_questions_about_the_call_are_small_talk() -> None:
    # "today" alone matched the opening hours; "Facts: none" made the model decline
    for text in ("How are you today?", "Hello, can you hear me?", "Good morning!"):
        turn = bakery().turn(text)
        assert turn.content == f"Caller: {text}", text
        assert turn.direct is None and not turn.matches, text


def test_a_greeting_with_a_question_still_gets_its_fact() -> None:
    turn = bakery().turn("Good morning, are you open today?")

    assert turn.content.startswith("Facts: ") and "open" in turn.content
    assert turn.direct is not None


def test_asking_how_to_call_is_not_small_talk() -> None:
    assert bakery().turn("How can I call you?").matches


def test_prose_instructions_give_every_sentence_about_the_business_as_a_fact() -> None:
    from voiceapp.personas.services import DEFAULT_INSTRUCTIONS

    instructions = (
        "You answer the phone for Ada's Studio. Be warm and brief.\n\n"
        "You can pay with cash or any card. Customers park for free behind the studio. "
        "Never promise a discount."
    )
    assert facts_from_instructions(instructions) == [
        Fact("You can pay with cash or any card."),
        Fact("Customers park for free behind the studio."),
    ]
    assert facts_from_instructions(DEFAULT_INSTRUCTIONS) == []  # the default knows nothing


def test_a_sentence_telling_the_caller_what_to_do_if_is_a_fact() -> None:
    instructions = (
        "If you need to cancel, please tell us 24 hours before. If you don't know, say so. "
        "If we are closed, take a message."
    )

    assert facts_from_instructions(instructions) == [
        Fact("If you need to cancel, please tell us 24 hours before.")
    ]


def test_the_words_of_facts_in_prose_weigh_as_much_as_the_question_words() -> None:
    # given a business whose facts are all written in its instructions
    builder = PromptBuilder(
        instructions=(
            "You take calls for Bay Bikes, a bicycle shop. We are at 5 Dock Road. "
            "Customers can park in the yard behind the shop. We take PayPal and cards. "
            "Our spring sale runs from March to May."
        )
    )
    # then "park" finds the parking sentence, not the address that "where" asks for
    assert "yard" in (builder.turn("Where do I park?").direct or "")
    assert "yard" in (builder.turn("Is there anywhere to park?").direct or "")
    # and "PayPal" the payment sentence, and "when" a sentence with months
    assert "PayPal" in (builder.turn("Do you accept PayPal?").direct or "")
    assert "March" in (builder.turn("When is the sale?").direct or "")


def test_business_notes_that_open_like_instructions_are_facts() -> None:
    instructions = (
        "You are the phone assistant of Gino's Pizza. Be cheerful and keep it quick. "
        "Greet callers kindly and keep it short. "
        "If a pizza arrives wrong, ring within half an hour and we'll remake it free. "
        "Collecting? Use the Quay Street loading bay for 15 minutes. "
        "A check is 25 dollars and comes off the bill if you go ahead. iPhone screens "
        "cost 89 dollars. If we are closed, take a message. Never give out our owner's "
        "number. Only discuss our menu with callers."
    )

    assert facts_from_instructions(instructions) == [
        Fact("If a pizza arrives wrong, ring within half an hour and we'll remake it free."),
        Fact("Collecting? Use the Quay Street loading bay for 15 minutes."),
        Fact("A check is 25 dollars and comes off the bill if you go ahead."),
        Fact("iPhone screens cost 89 dollars."),
    ]
