"""An evaluation persona with facts, and questions graded by what the reply must say.

Rosie's Bakery has 14 facts. `ANSWERABLE` are questions the facts answer, many
as paraphrases of each other; a reply counts as grounded when it holds one
accepted form of every required piece (the hour, the price, the street ...).
`UNANSWERABLE` are questions the facts cannot answer; a reply counts as
declined when it says it does not know or offers to take a message, and states
no number (an invented price, hour or phone number).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from voiceapp.engine.knowledge import Fact

INSTRUCTIONS = (
    "You are the phone assistant of Rosie's Bakery, a neighbourhood bakery. Be friendly and brief."
)

FACTS: tuple[Fact, ...] = (
    Fact("We are open Monday to Friday from 7 am to 6 pm.", "What are your opening hours?"),
    Fact(
        "On Saturday we open at 8 am and close at 2 pm. We are closed on Sundays.",
        "What are your weekend hours?",
    ),
    Fact("We are at 42 Elm Street, next to the post office.", "Where are you?"),
    Fact("Our phone number is 555-0142.", "What is your phone number?"),
    Fact("A loaf of sourdough costs 6 dollars.", "How much is the sourdough?"),
    Fact("Croissants cost 3 dollars 50 each.", "How much is a croissant?"),
    Fact("Birthday cakes start at 35 dollars for an eight-inch cake.", "How much is a cake?"),
    Fact("Please order custom and birthday cakes at least 48 hours in advance."),
    Fact("We deliver within 5 miles for a 4 dollar fee, on weekdays only.", "Do you deliver?"),
    Fact("There is free parking behind the bakery.", "Where can I park?"),
    Fact("Our sourdough and our baguettes are vegan.", "Do you have vegan bread?"),
    Fact("We accept cash and all major cards.", "How can I pay?"),
    Fact("You can email orders to hello@rosiesbakery.com.", "What is your email?"),
    Fact("We are closed on public holidays.", "Are you open on holidays?"),
)


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    # Every group must be present in the reply, in one of its forms (lower case).
    required: tuple[tuple[str, ...], ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.required)


SIX = ("6", "six")
SEVEN = ("7", "seven")
EIGHT = ("8", "eight")
TWO = ("2 pm", "2pm", "two", "2 p.m", "2:00", "14")
ELM = ("elm",)
PHONE = ("555",)
CROISSANT = ("3 dollars 50", "3.50", "3,50", "three fifty", "3 dollars and 50", "$3 50", "350")

ANSWERABLE: tuple[Question, ...] = (
    Question("What time do you open on Saturday?", (EIGHT,)),
    Question("When do you open on Saturdays?", (EIGHT,)),
    Question("What are your hours on Saturday?", (EIGHT, TWO)),
    Question("What time do you close on Saturday?", (TWO,)),
    Question("Are you open on Sunday?", (("closed", "not open", "aren't open", "are not open"),)),
    Question("What time do you open during the week?", (SEVEN,)),
    Question("When do you close on weekdays?", (SIX,)),
    Question("What are your opening hours?", (SEVEN, SIX)),
    Question("Where are you located?", (ELM,)),
    Question("What is your address?", (ELM,)),
    Question("How do I find the bakery?", (ELM,)),
    Question("What is your phone number?", (PHONE,)),
    Question("How can I call you?", (PHONE,)),
    Question("How much is a loaf of sourdough?", (SIX,)),
    Question("What does the sourdough bread cost?", (SIX,)),
    Question("How much are your croissants?", (CROISSANT,)),
    Question("What does a croissant cost?", (CROISSANT,)),
    Question("How much is a birthday cake?", (("35", "thirty-five", "thirty five"),)),
    Question("What do your birthday cakes cost?", (("35", "thirty-five", "thirty five"),)),
    Question(
        "How far in advance do I need to order a birthday cake?",
        (("48", "forty-eight", "two days"),),
    ),
    Question("How early should I order a custom cake?", (("48", "forty-eight", "two days"),)),
    Question("Do you deliver?", (("5 miles", "five miles", "4 dollar", "weekday"),)),
    Question("How much does delivery cost?", (("4", "four"),)),
    Question("Do you deliver on weekends?", (("weekday", "only on week", "not on week", "no"),)),
    Question("Is there parking near the bakery?", (("behind", "free parking"),)),
    Question("Where can I park my car?", (("behind",),)),
    Question("Do you have vegan bread?", (("sourdough", "baguette"),)),
    Question("Are your baguettes vegan?", (("yes", "are vegan"),)),
    Question("Can I pay with a credit card?", (("yes", "accept", "all major"),)),
    Question("Do you take cash?", (("yes", "accept"),)),
    Question("What is your email address?", (("hello@", "rosiesbakery", "rosie's bakery.com"),)),
    Question("Can I send you an order by email?", (("hello@", "rosiesbakery"),)),
    Question("Are you open on public holidays?", (("closed", "not open"),)),
    Question("Is the bakery open at 7 in the morning on Saturday?", (EIGHT,)),
)

UNANSWERABLE: tuple[Question, ...] = (
    Question("Do you sell gluten-free bread?"),
    Question("Do you have wifi?"),
    Question("Can I bring my dog inside?"),
    Question("Are you hiring at the moment?"),
    Question("Who is the owner of the bakery?"),
    Question("Do you sell coffee?"),
    Question("Is there seating inside?"),
    Question("Do you cater for weddings?"),
    Question("Do you offer a student discount?"),
    Question("What is the wifi password?"),
    Question("Do you have a loyalty program?"),
    Question("Can I order a wedding cake with five tiers?"),
)

_DECLINE = re.compile(
    r"\b(don'?t know|do not know|not sure|no information|don'?t have (that|this|any|the)"
    r"|do not have (that|this|any|the)|can'?t (help|answer|say|tell)|cannot (help|answer|say|tell)"
    r"|take a message|leave a message|unable to|not able to|i'?m afraid)\b",
    re.I,
)


def _normalize(reply: str) -> str:
    return " ".join(reply.lower().replace("\u2019", "'").split())


def grounded(question: Question, reply: str) -> bool:
    text = _normalize(reply)
    return all(any(form in text for form in group) for group in question.required)


def declined(reply: str) -> bool:
    return bool(_DECLINE.search(reply)) and not re.search(r"\d", reply)
