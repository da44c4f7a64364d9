"""A second development set of prose personas, written on 2026-12-07 to find
where retrieval of facts in prose fails on unseen wording.

A pizza takeaway, a council swimming pool and a computer and phone repair shop.
Their prose is written in mixed styles ("We ...", "You can ...", "Please ...",
notes in the imperative, lists joined with semicolons, numbers as digits and as
words, times such as "half past six" and "17:30", prices in pounds and in
dollars), and their questions are asked in callers' own words. Graded as in
bakery.py.
"""

from __future__ import annotations

from .bakery import Question
from .prose import ProsePersona, _q

CLOSED = ("closed", "not open", "shut", "aren't open", "are not open", "don't open")
NO_AMEX = (
    "n't take american express",
    "not take american express",
    "n't accept american express",
    "not accept american express",
    "no american express",
    "n't take amex",
    "not take amex",
    "n't accept amex",
    "not accept amex",
    "no amex",
)
NO_CHEQUE = (
    "not accept cheques",
    "n't accept cheques",
    "not take cheques",
    "n't take cheques",
    "no cheques",
    "not cheques",
)
NO_CRYPTO = (
    "no crypto",
    "not crypto",
    "n't take crypto",
    "not take crypto",
    "n't accept crypto",
    "not accept crypto",
)

PIZZA = ProsePersona(
    "pizza",
    "You are the phone assistant of Gino's Pizza Kitchen, a takeaway that also "
    "delivers. Be cheerful and keep it quick.\n\n"
    "We open at five in the evening and take last orders at 11 pm, every day except Tuesday, when "
    "we're shut. Lunch is Friday and Saturday only, 12 till 2. A large margherita is £11, a "
    "medium £8.50. Delivery is free within three miles on orders over £15, otherwise it's "
    "£2.50. Please allow 45 minutes on Friday and Saturday nights. Party orders of ten pizzas or "
    "more need a day's notice. Orders can be cancelled until they go in the oven. If a pizza "
    "arrives wrong, ring within half an hour and we'll remake it free. You can pay by card or "
    "cash at the door, but we can't take American Express. Collecting? Use the Quay Street "
    "loading bay for 15 minutes; we're at number 27. Vegan cheese is £1 extra and our gluten-free "
    "bases are 10 inch only.",
    (
        _q("Hi, quick one - are you doing pizzas tonight? It's a Tuesday.", CLOSED),
        _q("Up to what time can I still phone an order through?", ("11", "eleven")),
        _q("Which days can I grab a pizza at lunchtime?", ("friday",), ("saturday",)),
        _q("What's a big margherita going to set me back?", ("11", "eleven")),
        _q("And the medium one?", ("8.50", "8,50", "eight fifty", "8 pounds 50", "8.5")),
        _q(
            "Do you charge to bring it round to me?",
            ("15", "fifteen", "2.50", "two fifty", "2,50", "three miles", "3 miles"),
        ),
        _q(
            "It's Saturday night, how long am I waiting for my delivery?",
            ("45", "forty-five", "forty five"),
        ),
        _q(
            "I need twelve pizzas for my son's party, how much warning do you want?",
            ("a day", "one day", "24 hours", "day before", "day's notice"),
        ),
        _q("Is Amex OK?", NO_AMEX),
        _q(
            "They sent me pepperoni instead of the veggie I ordered, what now?",
            ("remake", "re-make", "make it again", "replace", "new one", "another one"),
        ),
        _q(
            "If I'm picking up, where can I stop the car?",
            ("loading bay", "quay street"),
        ),
        _q("What size are your gluten-free pizzas?", ("10", "ten")),
    ),
    (
        Question("Is your chicken halal?"),
        Question("Do you sell beer or wine with the pizzas?"),
        Question("Have you got a loyalty card?"),
    ),
)

POOL = ProsePersona(
    "pool",
    "You answer the phone for the swimming pool at Brookvale Leisure Centre, run by "
    "Brookvale Council. Be patient and clear, and keep answers short.\n\n"
    "The main pool opens at half past six on weekday mornings and closes at 9 pm; weekends are "
    "8am to 5pm. An adult swim costs £4.80; juniors under 16 pay £2.60; under-fives swim free. "
    "Under-eights must be accompanied in the water by an adult. Lessons are sold in "
    "ten-week blocks at £65 a block, and booking opens two weeks before each term. We don't "
    "refund missed lessons, but one lesson per block can be moved if you tell reception 48 hours "
    "ahead. Pay at reception by card, Apple Pay or cash. We do not accept cheques. Parking in the "
    "car park off Mill Road is free for 3 hours - register your car at the desk. "
    "Bring a £1 coin for the lockers. Swimming caps are required for long hair. There is a pool "
    "hoist and accessible changing.",
    (
        _q(
            "Hello, how early can I get a swim in on a Tuesday?",
            ("6.30", "6:30", "half past six", "six thirty", "half six"),
        ),
        _q("When does the pool shut on a Sunday?", ("5", "five")),
        _q("What's the price for a grown-up?", ("4.80", "4,80", "four eighty")),
        _q("My daughter's twelve, how much would she pay?", ("2.60", "2,60", "two sixty")),
        _q("Can my seven-year-old go in the water by himself?", ("adult", "accompan")),
        _q("What do swimming lessons cost?", ("65", "sixty-five", "sixty five")),
        _q(
            "When can I get my kids signed up for next term's lessons?",
            ("two weeks", "2 weeks", "fortnight"),
        ),
        _q(
            "We're away on holiday for one of the lessons - can we get the money back?",
            ("refund", "move", "moved"),
        ),
        _q("My gran only has a chequebook, can she pay with that?", NO_CHEQUE),
        _q(
            "How long can I leave the car there without paying?",
            ("3 hours", "three hours"),
        ),
        _q("Do I need anything for the lockers?", ("£1", "1 coin", "pound", "one pound")),
        _q("My wife uses a wheelchair, can she get into the water?", ("hoist",)),
    ),
    (
        Question("How warm is the water in the main pool?"),
        Question("Is there a sauna or steam room?"),
        Question("Can we hire the pool for a birthday party?"),
    ),
)

PC_REPAIR = ProsePersona(
    "pc_repair",
    "You are the assistant for FixPoint, a computer and phone repair shop. Be "
    "straightforward and never promise anything the shop hasn't told you.\n\n"
    "Customers can drop devices off 9:30 to 17:30 Monday to Friday, and Saturday 10 till 2; "
    "Sundays we're closed. No appointment needed, just walk in. A diagnostic check is 25 dollars "
    "and comes off the bill if you go ahead. iPhone screens cost 89 to 149 dollars, depending on "
    "model. Screens booked in before noon are usually ready same day; laptops take three to five "
    "working days. Back up your data first; we can't be responsible for lost files. If we can't "
    "fix it, you pay only the diagnostic. Every repair has a 90-day warranty on parts and labour. "
    "Anything not collected within sixty days is recycled. We take cash, cards and bank transfer, "
    "but no cheques and no crypto. Find us at Unit 4, Kingsway Arcade; the arcade multi-storey "
    "gives two hours free when we stamp your ticket.",
    (
        _q(
            "Hey, what time do you close on a Thursday?",
            ("17:30", "17.30", "5:30", "5.30", "half past five", "five thirty", "half five"),
        ),
        _q("Could I bring my laptop in on a Sunday?", CLOSED),
        _q(
            "How much just to have someone look at it and tell me what's wrong?",
            ("25", "twenty-five", "twenty five"),
        ),
        _q(
            "If I do get it fixed, do I still pay for the check on top?",
            ("off the bill", "deducted", "taken off", "comes off", "towards"),
        ),
        _q(
            "Cracked my iPhone screen, roughly what's that going to cost?",
            ("89", "eighty-nine", "eighty nine", "149"),
        ),
        _q(
            "If I drop my phone in this morning, any chance of getting it back today?",
            ("noon", "12", "midday"),
        ),
        _q(
            "How long am I going to be without my laptop?",
            ("three", "3"),
            ("five", "5"),
        ),
        _q("Is there anything I should do before handing over my computer?", ("back up", "backup")),
        _q(
            "What happens if it goes wrong again a month after you fix it?",
            ("90", "ninety", "warranty"),
        ),
        _q(
            "I left an old tablet with you ages ago and never picked it up, is it still there?",
            ("sixty days", "60 days", "recycl"),
        ),
        _q("Can I pay in Bitcoin?", NO_CRYPTO),
        _q("Where do I park when I come to you?", ("multi-storey", "multi storey", "arcade")),
    ),
    (
        Question("Do you repair game consoles like the PlayStation?"),
        Question("Do you sell refurbished laptops?"),
        Question("Can somebody come out to my house to fix my wifi?"),
    ),
)

DEV2: tuple[ProsePersona, ...] = (PIZZA, POOL, PC_REPAIR)
