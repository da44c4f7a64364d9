"""Personas whose facts are written in their instructions, as businesses write
them: paragraphs of prose, not a list of facts. Graded as in bakery.py.

- `DEV`: a bakery, the kind of persona issue #21 tried (its parking, payment,
  lead-time and availability questions went wrong). Retrieval was tuned on it.
- `HELD_OUT`: a florist and a physiotherapy clinic, written with DEV, before
  retrieval was changed, and not tuned on: `bench/quality.py --persona prose`
  reports them.

Each persona's questions ask for what its prose says, in the caller's words
(paraphrases, not the prose's), and for things it does not say.
"""

from __future__ import annotations

from dataclasses import dataclass

from .bakery import Question


@dataclass(frozen=True, slots=True)
class ProsePersona:
    name: str
    instructions: str
    answerable: tuple[Question, ...]
    unanswerable: tuple[Question, ...]


NO_CHEQUES = (
    "not cheques",
    "no cheques",
    "not take cheques",
    "n't take cheques",
    "not accept cheques",
    "n't accept cheques",
)
NO_REFERRAL = ("no referral", "not needed", "n't need", "not need", "no need")


def _q(text: str, *groups: tuple[str, ...]) -> Question:
    return Question(text, groups)


BAKERY = ProsePersona(
    "bakery",
    "You are the friendly phone assistant of Crumb & Co, a small bakery in Westfield. "
    "Keep your answers short.\n\n"
    "We open at 7 in the morning and close at 5 in the afternoon from Tuesday to "
    "Saturday; on Sundays we are open from 8 until noon, and we are closed on Mondays. "
    "Our gluten-free loaves are baked on Wednesdays and Fridays only, so those are the "
    "days to come for them. A white sandwich loaf is 4 dollars and a seeded rye is 6 "
    "dollars. Birthday cakes need to be ordered at least three days ahead, and a "
    "deposit of 10 dollars secures the order. You can pay with cash or any card, "
    "including contactless. There is no car park of our own, but the town car park on "
    "Mill Lane is a two minute walk away and free for the first hour. We are at 9 "
    "Church Street, opposite the library. We do not deliver.",
    (
        _q("When do you have gluten free bread?", ("wednesday",), ("friday",)),
        _q("Which days can I get a gluten-free loaf?", ("wednesday",), ("friday",)),
        _q("Is there parking near you?", ("mill lane", "town car park")),
        _q("Where can I leave my car?", ("mill lane", "town car park")),
        _q("How early do I need to order a birthday cake?", ("three days", "3 days")),
        _q("Do I have to pay anything when I order a cake?", ("10", "ten")),
        _q("Can I pay by card?", ("any card", "cards", "card")),
        _q("Do you take contactless?", ("contactless",)),
        _q("What time do you open on Saturday?", ("7", "seven")),
        _q("Are you open on Monday?", ("closed", "not open")),
        _q("What are your hours on Sunday?", ("8", "eight"), ("noon", "12")),
        _q("How much is the rye bread?", ("6", "six")),
        _q("What's the price of a sandwich loaf?", ("4", "four")),
        _q("What's your address?", ("church street", "9 church")),
        _q("Can you deliver a cake to my house?", ("not deliver", "don't deliver")),
    ),
    (
        Question("Do you sell coffee?"),
        Question("Is there wifi in the shop?"),
        Question("Who bakes the bread?"),
        Question("Do you make wedding cakes?"),
    ),
)

FLORIST = ProsePersona(
    "florist",
    "You take calls for Petal Lane Flowers, a florist. Be warm and brief.\n\n"
    "The shop is open Monday to Friday 9 till 6 and Saturday 9 till 4; it stays shut on "
    "Sundays. A hand-tied bouquet starts at 35 dollars and a single rose is 5 dollars. "
    "We deliver anywhere in the city for 8 dollars, and orders placed before 1 pm go "
    "out the same day. Wedding flowers must be booked at least six weeks before the "
    "day. We take all major cards and PayPal, but not cheques. Customers can park for "
    "free in the two bays right outside the shop. Our sunflowers are only in stock "
    "from June to September. We are at 112 Station Road.",
    (
        _q("Can I get flowers delivered today?", ("1 pm", "1pm", "before 1", "one")),
        _q("How much does delivery cost?", ("8", "eight")),
        _q("How much is a bouquet?", ("35", "thirty-five", "thirty five")),
        _q("What does one rose cost?", ("5", "five")),
        _q("How far ahead should I book flowers for my wedding?", ("six weeks", "6 weeks")),
        _q("Can I pay with a cheque?", NO_CHEQUES),
        _q("Do you accept PayPal?", ("paypal",)),
        _q("Is there anywhere to park?", ("outside", "bays", "free")),
        _q("When can I buy sunflowers?", ("june",), ("september",)),
        _q("Are you open on Sunday?", ("shut", "closed", "not open")),
        _q("What time do you close on Saturday?", ("4", "four")),
        _q("Where is the shop?", ("station road", "112")),
    ),
    (
        Question("Do you sell house plants?"),
        Question("Can I do a flower arranging class?"),
        Question("Do you deliver to other countries?"),
    ),
)

CLINIC = ProsePersona(
    "clinic",
    "You answer the phone for Northside Physio, a physiotherapy clinic. Keep replies "
    "short and clear.\n\n"
    "Appointments run from 8 am to 8 pm on weekdays and 9 am to 1 pm on Saturdays. A "
    "first assessment lasts 45 minutes and costs 70 dollars; follow-up sessions are 30 "
    "minutes for 50 dollars. If you need to cancel, please tell us 24 hours before, or "
    "the full fee is charged. We are on the first floor of 30 King Street, and there is "
    "a lift. Parking is in the underground garage of the building, and we stamp your "
    "ticket so it is free. We accept cards and most health insurance plans, but please "
    "bring your insurance card to the first visit. No referral from a doctor is needed.",
    (
        _q("How long is the first appointment?", ("45", "forty-five", "forty five")),
        _q("What does a first visit cost?", ("70", "seventy")),
        _q("How much is a follow-up?", ("50", "fifty")),
        _q("Can I cancel the day before?", ("24 hours", "24", "twenty-four")),
        _q("Where do I park?", ("underground", "garage")),
        _q("Do I have to pay for parking?", ("free", "stamp")),
        _q("Is there a lift?", ("lift",)),
        _q(
            "Do I need a referral from my GP?",
            NO_REFERRAL,
        ),
        _q("What should I bring to my first appointment?", ("insurance card",)),
        _q("Are you open on Saturdays?", ("9", "nine"), ("1 pm", "1pm", "one")),
        _q("How late can I come on a weekday?", ("8 pm", "8pm", "eight")),
        _q("Do you take insurance?", ("insurance plans", "health insurance")),
    ),
    (
        Question("Do you offer massage?"),
        Question("Which physio is the best for knees?"),
        Question("Can I bring my child with me?"),
    ),
)

DEV: tuple[ProsePersona, ...] = (BAKERY,)
HELD_OUT: tuple[ProsePersona, ...] = (FLORIST, CLINIC)
