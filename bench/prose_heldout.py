"""A held-out set of prose personas: a yoga studio and a driving school.

Written on 2026-12-07 from a brief, before any change, to stay held out: nobody
tunes on these. Same format and grading as `bench.prose` (answers are word
groups matched as in bakery.py); the questions are in the caller's words.
"""

from __future__ import annotations

from .bakery import Question
from .prose import ProsePersona, _q

NO_CASH = (
    "no cash",
    "not cash",
    "not take cash",
    "n't take cash",
    "not accept cash",
    "n't accept cash",
    "cashless",
)

YOGA = ProsePersona(
    "yoga",
    "You are the phone assistant of Still Water Yoga, a small yoga studio. Be calm and "
    "keep your answers short.\n\n"
    "Classes run from 6.30 am to 8.30 pm on weekdays and from 8 am to 1 pm on Saturdays; the "
    "studio is closed on Sundays. A drop-in class is 18 dollars, and a ten-class pass is 150 "
    "dollars and is valid for three months. Please book your spot in the app at least two hours "
    "before class, and cancel by 9 pm the night before, or the class comes off your pass. We take "
    "cards and Apple Pay but not cash. Mats are free to borrow; bring a towel and water. Nobody "
    "under 16 can join the regular classes. We are on the second floor of 18 Orchard Road, above "
    "the bike shop, and bikes can be locked in the courtyard; drivers can use the Orchard Road "
    "multi-storey.",
    (
        _q("What's the earliest class I can catch before work?", ("6.30", "6:30", "six thirty")),
        _q("Are you open Sundays?", ("closed", "not open", "shut")),
        _q("How much is it to just turn up for one class?", ("18", "eighteen")),
        _q("What does a ten-class pass cost?", ("150", "hundred and fifty", "hundred fifty")),
        _q("How long is the class pass good for?", ("three months", "3 months")),
        _q("How close to the class can I still grab a spot?", ("two hours", "2 hours")),
        _q(
            "If I can't make it, when do I have to cancel by?",
            ("9 pm", "9pm", "9 p.m", "9:00", "nine", "21"),
        ),
        _q("Can I pay in cash?", NO_CASH),
        _q("Do I need to bring my own mat?", ("borrow", "free", "provide")),
        _q("My daughter's fourteen, can she come along with me?", ("16", "sixteen")),
        _q("Where do I leave the car?", ("multi-storey", "multi storey", "multistorey")),
        _q("Whereabouts is the studio?", ("orchard road", "18 orchard")),
    ),
    (
        Question("Do you do private one-to-one sessions?"),
        Question("Is there a shower I can use after class?"),
        Question("Do you run pregnancy yoga?"),
    ),
)

DRIVING = ProsePersona(
    "driving",
    "You answer the phone for Clearway Driving School. Be friendly and patient, and keep "
    "replies brief.\n\n"
    "The office takes calls from 9 am to 5 pm Monday to Friday, and lessons run from 7 am to 7 pm "
    "Monday to Saturday, with no lessons on Sundays. A lesson lasts 90 minutes and costs 65 "
    "dollars, or 300 dollars for a block of five. Book at least a week ahead, and if you cancel "
    "with less than 48 hours' notice you pay half the lesson fee. We take card or bank transfer, "
    "but no cash in the car. Learners must be 16 or older and bring their learner's permit to "
    "every lesson. Our cars are all manual. We pick you up from home anywhere in Lakeside. On "
    "test day we meet at the Dunmore Road test centre, where parking is free. Our office is at 7 "
    "Quay Street.",
    (
        _q(
            "Can I have a lesson on a Sunday?",
            (
                "no lessons",
                "not on sunday",
                "don't run",
                "do not run",
                "don't offer",
                "do not offer",
                "don't do",
                "monday to saturday",
                "closed",
                "not open",
                "not available",
            ),
        ),
        _q("What do you charge for a lesson?", ("65", "sixty-five", "sixty five")),
        _q("Is it cheaper if I buy a few lessons together?", ("300", "three hundred")),
        _q(
            "How far in advance do I need to book?",
            ("a week", "one week", "1 week", "seven days", "7 days"),
        ),
        _q(
            "What happens if I call off a lesson the day before?",
            ("half", "50%", "50 percent", "fifty percent"),
        ),
        _q("Can I just pay the instructor cash?", NO_CASH),
        _q("How old do you have to be to start lessons?", ("16", "sixteen")),
        _q("Is there anything I have to bring with me?", ("permit", "licence", "license")),
        _q("Do you teach in automatics?", ("manual",)),
        _q(
            "Do I have to come to you or can someone collect me?",
            ("pick", "collect", "home"),
        ),
        _q("Is there parking at the test centre?", ("free",)),
        _q("Until what time can I ring the office?", ("5 pm", "5pm", "five", "17")),
    ),
    (
        Question("Do you have any female instructors?"),
        Question("What's your first-time pass rate?"),
        Question("Can I do an intensive course and pass in a week?"),
    ),
)

HELD_OUT: tuple[ProsePersona, ...] = (YOGA, DRIVING)
