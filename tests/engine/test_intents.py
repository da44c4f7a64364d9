"""The rules that take a persona's actions for the small embedded model."""

from __future__ import annotations

import json

import pytest

from voiceapp.engine.intents import ASK_FOR_MESSAGE, NO_PERSON, caller_name, phone_number, plan
from voiceapp.engine.prompt import DEFAULT_DECLINE, MESSAGE_DECLINE

BOTH = frozenset({"take_message", "end_call"})


def after_offer(question: str = "Do you cater weddings?") -> list[dict[str, str]]:
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": MESSAGE_DECLINE},
    ]


def arguments(text: str, history: list[dict[str, str]]) -> dict[str, str]:
    planned = plan(text, history, BOTH)
    assert planned is not None and planned.call is not None
    assert planned.call.name == "take_message" and planned.call.call_id.startswith("call_")
    return json.loads(planned.call.arguments)


def test_the_answer_to_an_offer_is_the_message_with_its_question() -> None:
    args = arguments("Yes please, this is Tom Baker, my number is 07700 900123.", after_offer())
    assert args["name"] == "Tom Baker"
    assert args["callback_number"] == "07700 900123"
    assert args["message"] == (
        "Do you cater weddings? Yes please, this is Tom Baker, my number is 07700 900123."
    )


def test_a_bare_yes_is_asked_for_the_details_and_then_taken() -> None:
    planned = plan("Yes, please.", after_offer(), BOTH)
    assert planned is not None and planned.call is None and planned.say == ASK_FOR_MESSAGE
    history = [*after_offer(), {"role": "user", "content": "Yes, please."}]
    history.append({"role": "assistant", "content": ASK_FOR_MESSAGE})
    args = arguments("It's Priya, on 0161 496 0000, I need to move my order to Friday.", history)
    assert args["name"] == "Priya" and args["callback_number"] == "0161 496 0000"
    assert args["message"] == "It's Priya, on 0161 496 0000, I need to move my order to Friday."


@pytest.mark.parametrize("text", ["No thanks.", "No, that's fine.", "Never mind, bye."])
def test_a_no_to_the_offer_is_not_a_message(text: str) -> None:
    planned = plan(text, after_offer(), BOTH)
    assert planned is None or (planned.call is not None and planned.call.name == "end_call")


@pytest.mark.parametrize(
    "text",
    [
        "Can you recommend a good book?",
        "What time do you open on Sunday?",
        "I would like to change the email address on my account.",
        "Please check the price of the blue coat.",
    ],
)
def test_words_that_do_not_take_the_offer_up_are_the_llms(text: str) -> None:
    assert plan(text, after_offer(), BOTH) is None


@pytest.mark.parametrize(
    "text",
    [
        "Could you tell the owner I'll be late?",
        "Can you ask Dave to call me back?",
        "Is it possible to have Sam ring me on 0161 496 0000?",
        "Can you note that it's Tom Baker calling?",
        "Yes, it's about the wedding cake, we need it a day earlier.",
        "It's about my order from Tuesday, it arrived broken.",
    ],
)
def test_words_that_take_the_offer_up_are_the_message(text: str) -> None:
    assert arguments(text, after_offer())["message"].endswith(text)


@pytest.mark.parametrize(
    "text",
    [
        "Can I leave a message?",
        "Could you take a message for the manager?",
        "Please have someone call me back.",
    ],
)
def test_asking_to_leave_a_message_gets_asked_for_the_details(text: str) -> None:
    planned = plan(text, [], BOTH)
    assert planned is not None and planned.say == ASK_FOR_MESSAGE


def test_a_request_with_everything_in_it_is_taken_at_once() -> None:
    text = "Please call me back on 555 0134, my name is Ann Lee, it's about my cake order."
    args = arguments(text, [])
    assert (args["name"], args["callback_number"]) == ("Ann Lee", "555 0134")
    assert args["message"] == text


@pytest.mark.parametrize(
    "text", ["Thanks, that's all. Goodbye!", "Okay, bye.", "Great, have a nice day."]
)
def test_a_goodbye_ends_the_call(text: str) -> None:
    planned = plan(text, [], BOTH)
    assert planned is not None and planned.call is not None
    assert (planned.call.name, planned.call.arguments) == ("end_call", "{}")


@pytest.mark.parametrize(
    "text",
    [
        "What time do you open on Saturday?",
        "Is that all you sell?",  # a question, not a goodbye
        "I want to buy a cake.",
        "My order number is 12345678.",  # a number without a message request
    ],
)
def test_other_turns_are_the_llms(text: str) -> None:
    assert plan(text, [], BOTH) is None


def test_only_the_actions_that_are_on_are_taken() -> None:
    assert plan("Okay, bye.", [], frozenset({"take_message"})) is None
    assert plan("Can I leave a message?", [], frozenset({"end_call"})) is None
    # a plain decline (take_message off) offers nothing, so "yes" is the LLM's
    plain = [
        {"role": "user", "content": "Do you cater?"},
        {"role": "assistant", "content": DEFAULT_DECLINE},
    ]
    assert plan("Yes, Tom, 555 1234.", plain, BOTH) is None


def test_names_and_numbers_as_callers_give_them() -> None:
    assert caller_name("Tell them Maria called about the oven.") == "Maria"
    assert caller_name("I'm calling about my order.") == ""
    assert caller_name("Hi, I'm Sam.") == "Sam"
    assert phone_number("Call 212-555-0187 after five.") == "212-555-0187"
    assert phone_number("+44 20 7946 0958") == "+44 20 7946 0958"
    assert phone_number("I have 2 cakes for 3 people.") == ""


ALL = frozenset({"take_message", "end_call", "transfer_call"})


@pytest.mark.parametrize(
    "text",
    [
        "Can I talk to a real person?",
        "Put me through to the manager, please.",
        "I'd like to speak with someone about my order.",
        "Is there a human I can talk to?",
        "Could I speak to the owner?",
        "Can you connect me with a receptionist?",
    ],
)
def test_asking_for_a_person_is_handed_over_with_the_reason(text: str) -> None:
    planned = plan(text, [], ALL)
    assert planned is not None and planned.call is not None
    assert planned.call.name == "transfer_call"
    assert json.loads(planned.call.arguments) == {"reason": text}


def test_asking_for_a_person_after_an_offer_is_not_the_message() -> None:
    planned = plan("No, I want to talk to a real person.", after_offer(), ALL)
    assert planned is not None and planned.call is not None
    assert planned.call.name == "transfer_call"


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to talk to a person, just tell me the hours.",
        "Who is the person in charge of deliveries?",
        "What time do you open?",
    ],
)
def test_other_mentions_of_people_are_not_a_handoff(text: str) -> None:
    planned = plan(text, [], ALL)
    assert planned is None or planned.call is None or planned.call.name != "transfer_call"


def test_a_handoff_is_only_made_when_transfer_call_is_on() -> None:
    assert plan("Can I talk to a real person?", [], frozenset({"end_call"})) is None
    # with take_message on instead, the caller is offered a message, and what they
    # say next is it
    offered = plan("Can I talk to a real person?", [], BOTH)
    assert offered is not None and offered.call is None and offered.say == NO_PERSON
    history = [
        {"role": "user", "content": "Can I talk to a real person?"},
        {"role": "assistant", "content": NO_PERSON},
    ]
    args = arguments("It's Ann Lee on 07700 900456, please call me about my order.", history)
    assert args["name"] == "Ann Lee" and args["callback_number"] == "07700 900456"


GOAL = (
    "You are calling Acme Heating for a customer whose boiler is broken, to book a repair. "
    "Be brief and polite."
)
KEYPAD = frozenset({"press_keys", "end_call"})


def pressed(text: str, goal: str = GOAL) -> str | None:
    planned = plan(text, [], KEYPAD, goal)
    if planned is None or planned.call is None or planned.call.name != "press_keys":
        return None
    return str(json.loads(planned.call.arguments)["digits"])


@pytest.mark.parametrize(
    ("menu", "key"),
    [
        (
            "Thank you for calling Acme Heating. For sales, press 1. For repairs or to report "
            "a fault, press 2. For billing, press 3. To speak to an operator, press 0.",
            "2",
        ),
        ("Press one for new orders, press two for repairs, press three for accounts.", "2"),
        ("For a new boiler press 4. For servicing press 5.", "4"),
        # a pause before "press" that Whisper wrote as a full stop
        ("Thank you for calling. For sales, press 1. For repairs. Press 2. For billing.", "2"),
        # nothing in common with the goal: the option for a person
        ("For opening hours press 1, to speak to someone press the star key.", "*"),
        ("If you know the extension, dial it now. For all other enquiries, press 9.", "9"),
    ],
)
def test_an_automated_menu_gets_the_key_for_what_the_call_is_for(menu: str, key: str) -> None:
    assert pressed(menu) == key


@pytest.mark.parametrize(
    "text",
    [
        "Hello, Acme Heating, how can I help?",
        "Please hold while we connect you.",
        "For opening hours press 1. For our address press 2.",  # no option fits, no person
        "I'll press the button for you.",
    ],
)
def test_what_is_not_a_menu_or_has_no_fitting_option_presses_nothing(text: str) -> None:
    assert pressed(text) is None


def test_a_menu_is_only_answered_with_keys_where_press_keys_is_on() -> None:
    menu = "For repairs, press 2."
    assert plan(menu, [], frozenset({"take_message", "end_call"}), GOAL) is None
    assert pressed(menu) == "2"
