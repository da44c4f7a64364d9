"""A held-out evaluation persona: written after the retriever was tuned on the bakery.

Nothing in `voiceapp/engine/knowledge.py` was changed for these questions; they
show how retrieval does on a business it has not seen. Graded as in bakery.py.
"""

from __future__ import annotations

from voiceapp.engine.knowledge import Fact

from .bakery import Question

INSTRUCTIONS = (
    "You answer the phone for Kim's Garage, a family-run car repair shop. Be short and friendly."
)

FACTS: tuple[Fact, ...] = (
    Fact("The garage is open Monday to Friday, 8 am to 5:30 pm, and closed at weekends."),
    Fact("We are at 17 Mill Road, behind the train station."),
    Fact("An oil change costs 49 dollars and takes about 45 minutes."),
    Fact("A yearly service starts at 189 dollars.", "How much is a service?"),
    Fact("New tyres are fitted the same day if you book before noon.", "Can you fit tyres?"),
    Fact("We repair all makes, but not electric cars.", "Do you work on electric cars?"),
    Fact("A courtesy car is free if you book it two days ahead.", "Do you have a loan car?"),
    Fact("You can reach us on 555-0177.", "What is your phone number?"),
    Fact("We take cards and bank transfers, but not cash.", "Can I pay cash?"),
    Fact("Our mechanics give a 12-month warranty on all repairs.", "Is there a warranty?"),
)

A = (
    ("What time do you open?", (("8",),)),
    ("Are you open on Saturday?", (("closed", "not open"),)),
    ("When do you close in the evening?", (("5:30", "5 30", "half past five"),)),
    ("Where is the garage?", (("mill road",),)),
    ("What's your address?", (("17", "mill"),)),
    ("How much is an oil change?", (("49",),)),
    ("How long does an oil change take?", (("45",),)),
    ("What does a yearly service cost?", (("189",),)),
    ("Can you fit new tyres today?", (("same day", "noon"),)),
    ("Do you fix electric cars?", (("not electric", "no"),)),
    ("Do you repair Toyotas?", (("all makes",),)),
    ("Can I get a courtesy car?", (("two days", "free"),)),
    ("Is a loan car free?", (("free",),)),
    ("What is your phone number?", (("555",),)),
    ("Can I pay in cash?", (("not cash", "no"),)),
    ("Do you accept credit cards?", (("cards",),)),
    ("Is there a guarantee on repairs?", (("12-month", "12 month", "twelve"),)),
    ("How long is the warranty?", (("12-month", "12 month", "twelve"),)),
)
ANSWERABLE: tuple[Question, ...] = tuple(Question(q, req) for q, req in A)

UNANSWERABLE: tuple[Question, ...] = tuple(
    Question(q)
    for q in (
        "Do you sell used cars?",
        "Can you paint my car?",
        "Do you do MOT tests?",
        "Who is the head mechanic?",
        "Is there a waiting room with coffee?",
        "Do you tow broken down cars?",
        "How much is a new windscreen?",
        "Do you offer a discount for students?",
    )
)
