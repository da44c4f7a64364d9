"""The development set for tool choice: three other businesses, their tools and
caller requests, for tuning the embedded tool router (voiceapp/engine/router.py)
and its argument grammar.

The bike shop of `tool_cases.py` is the held-out set: nothing is tuned on it,
and it is run once a change is settled. These were written before the router
existed, in the same way (Whisper-style text, paraphrase and filler), with
tools whose schemas differ from the bike shop's: an integer argument, an
enum, an optional argument and tools whose descriptions overlap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from voiceapp.engine.tools import ToolSpec

from .tool_cases import ToolCase


@dataclass(frozen=True, slots=True)
class Business:
    """One persona's instructions, tools and the requests made of it."""

    name: str
    instructions: str
    tools: tuple[ToolSpec, ...]
    cases: tuple[ToolCase, ...]


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(name, description, json.dumps(schema))


def _s(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


DENTIST = Business(
    "dentist",
    "You answer the phone for Brightside Dental, a family dental practice on Elm Road. "
    "We are open Monday to Friday from 8 am to 5 pm. Be brief and kind.",
    (
        _tool(
            "book_appointment",
            "Book a dental appointment for a patient on a date.",
            {"patient_name": _s("The patient's full name"), "date": _s("The date they want")},
            ["patient_name", "date"],
        ),
        _tool(
            "move_appointment",
            "Move an existing appointment to a different date.",
            {"patient_name": _s("Whose appointment it is"), "new_date": _s("The new date")},
            ["patient_name", "new_date"],
        ),
        _tool(
            "check_insurance",
            "Check whether the practice accepts a dental insurance plan.",
            {"insurer": _s("The insurance company or plan")},
            ["insurer"],
        ),
    ),
    (
        ToolCase(
            "Hi, I'd like to make an appointment for a check-up on Monday, my name is Rosa Diaz.",
            "book_appointment",
            {"patient_name": r"rosa", "date": r"monday"},
        ),
        ToolCase(
            "Can I get my son in for a cleaning next Thursday? His name is Leo Grant.",
            "book_appointment",
            {"patient_name": r"leo", "date": r"thursday"},
        ),
        ToolCase(
            "I have a toothache, could I see the dentist tomorrow? It's Omar Haddad.",
            "book_appointment",
            {"patient_name": r"omar", "date": r"tomorrow"},
        ),
        ToolCase(
            "This is Grace Kim, I need to book a filling for the 3rd of June.",
            "book_appointment",
            {"patient_name": r"grace", "date": r"3|june"},
        ),
        ToolCase(
            "I'd like to schedule a visit on Friday please. Name's Henry Ward.",
            "book_appointment",
            {"patient_name": r"henry", "date": r"friday"},
        ),
        ToolCase(
            "I need to change my appointment to Wednesday, it's under Paul Novak.",
            "move_appointment",
            {"patient_name": r"paul", "new_date": r"wednesday"},
        ),
        ToolCase(
            "Could you move my check-up to next Tuesday? My name is Ines Duarte.",
            "move_appointment",
            {"patient_name": r"ines", "new_date": r"tuesday"},
        ),
        ToolCase(
            "Hi, it's Kofi Mensah, can I push my cleaning back to the 20th?",
            "move_appointment",
            {"patient_name": r"kofi", "new_date": r"20"},
        ),
        ToolCase(
            "I can't come on Monday, can we reschedule to Friday? The name is Julia Stone.",
            "move_appointment",
            {"patient_name": r"julia", "new_date": r"friday"},
        ),
        ToolCase("Do you take Delta Dental insurance?", "check_insurance", {"insurer": r"delta"}),
        ToolCase(
            "I'm covered by Cigna, is that accepted at your practice?",
            "check_insurance",
            {"insurer": r"cigna"},
        ),
        ToolCase("Does my MetLife plan work with you?", "check_insurance", {"insurer": r"metlife"}),
        ToolCase("Are you in network for Aetna dental?", "check_insurance", {"insurer": r"aetna"}),
        ToolCase("Hello? Is this the dentist?", None),
        ToolCase("When are you open?", None),
        ToolCase("Where exactly are you located?", None),
        ToolCase("How often should I get my teeth cleaned?", None),
        ToolCase("Does teeth whitening hurt?", None),
        ToolCase("Thanks so much, bye now.", None),
        ToolCase("Sorry, could you repeat that?", None),
        ToolCase("What's the best toothpaste for sensitive teeth?", None),
        ToolCase("I'm a bit nervous about dentists, to be honest.", None),
    ),
)

RESTAURANT = Business(
    "restaurant",
    "You are the host of Luca's Trattoria, an Italian restaurant. We serve dinner from "
    "5 pm to 11 pm every day except Monday. Keep it short.",
    (
        _tool(
            "reserve_table",
            "Reserve a table for a number of guests at a date and time.",
            {
                "guests": {"type": "integer", "description": "How many people"},
                "when": _s("The day and time"),
                "name": _s("The name for the reservation"),
            },
            ["guests", "when", "name"],
        ),
        _tool(
            "order_status",
            "Tell a customer where their takeaway or delivery order is.",
            {"order_id": _s("The order number")},
            ["order_id"],
        ),
        _tool(
            "dish_info",
            "Look up whether a dish on the menu contains an allergen.",
            {
                "dish": _s("The dish"),
                "allergen": {
                    "type": "string",
                    "enum": ["gluten", "nuts", "dairy", "shellfish", "eggs"],
                },
            },
            ["dish", "allergen"],
        ),
    ),
    (
        ToolCase(
            "Can I book a table for four on Saturday at 8? The name is Baker.",
            "reserve_table",
            {"guests": r"^4$", "when": r"saturday|8", "name": r"baker"},
        ),
        ToolCase(
            "I'd like a reservation for 2 people tonight at 7 pm, under Silva.",
            "reserve_table",
            {"guests": r"^2$", "when": r"tonight|7", "name": r"silva"},
        ),
        ToolCase(
            "Table for six tomorrow evening around 7:30 please, name of Patel.",
            "reserve_table",
            {"guests": r"^6$", "when": r"tomorrow|7", "name": r"patel"},
        ),
        ToolCase(
            "We're a group of 10, could we come on Friday at 9? It's for Nguyen.",
            "reserve_table",
            {"guests": r"^10$", "when": r"friday|9", "name": r"nguyen"},
        ),
        ToolCase(
            "Hi, it's Emma Walsh, do you have space for 3 on Sunday at 6?",
            "reserve_table",
            {"guests": r"^3$", "when": r"sunday|6", "name": r"emma|walsh"},
        ),
        ToolCase("Where's my delivery? Order number 4471.", "order_status", {"order_id": r"4471"}),
        ToolCase(
            "I ordered a pizza an hour ago, it's order 88310, is it on its way?",
            "order_status",
            {"order_id": r"88310"},
        ),
        ToolCase(
            "Could you check on takeaway order 1209 for me?",
            "order_status",
            {"order_id": r"1209"},
        ),
        ToolCase(
            "My food still hasn't arrived, the order is 56024.",
            "order_status",
            {"order_id": r"56024"},
        ),
        ToolCase(
            "Does the lasagna have gluten in it?",
            "dish_info",
            {"dish": r"lasagna", "allergen": r"gluten"},
        ),
        ToolCase(
            "Is there any nuts in the pesto pasta? I'm allergic.",
            "dish_info",
            {"dish": r"pesto", "allergen": r"nuts"},
        ),
        ToolCase(
            "My daughter can't have dairy, is the risotto okay for her?",
            "dish_info",
            {"dish": r"risotto", "allergen": r"dairy"},
        ),
        ToolCase(
            "Does the seafood linguine contain shellfish?",
            "dish_info",
            {"dish": r"linguine", "allergen": r"shellfish"},
        ),
        ToolCase("Are you open on Mondays?", None),
        ToolCase("What kind of food do you serve?", None),
        ToolCase("Good evening!", None),
        ToolCase("How do you make fresh pasta at home?", None),
        ToolCase("Is the restaurant good for kids?", None),
        ToolCase("Okay perfect, thank you.", None),
        ToolCase("Can you speak a bit louder?", None),
        ToolCase("What wine goes well with fish?", None),
        ToolCase("Who won the football last night?", None),
    ),
)

INTERNET = Business(
    "internet",
    "You are the support line of Northwind Fibre, a home internet provider. "
    "Support is available 24 hours a day. Answer in one or two sentences.",
    (
        _tool(
            "report_outage",
            "Report that a customer's internet is down at their address.",
            {"address": _s("The street address")},
            ["address"],
        ),
        _tool(
            "account_balance",
            "Tell the customer the balance due on their account.",
            {"account_number": _s("The account number")},
            ["account_number"],
        ),
        _tool(
            "change_plan",
            "Move a customer to another internet plan.",
            {
                "account_number": _s("The account number"),
                "plan": {"type": "string", "enum": ["basic", "fast", "ultra"]},
            },
            ["account_number", "plan"],
        ),
    ),
    (
        ToolCase(
            "My internet has been down since this morning, I live at 14 Oak Street.",
            "report_outage",
            {"address": r"14 oak"},
        ),
        ToolCase(
            "There's no connection at 220 Hill Road, can you report it?",
            "report_outage",
            {"address": r"220 hill"},
        ),
        ToolCase(
            "The wifi is completely dead at my place, 7 Mill Lane.",
            "report_outage",
            {"address": r"7 mill"},
        ),
        ToolCase(
            "Nothing is loading and the router light is red. Address is 31 Bay View.",
            "report_outage",
            {"address": r"31 bay"},
        ),
        ToolCase(
            "How much do I owe? My account number is 602991.",
            "account_balance",
            {"account_number": r"602991"},
        ),
        ToolCase(
            "Can you tell me my current bill for account 448120?",
            "account_balance",
            {"account_number": r"448120"},
        ),
        ToolCase(
            "What's the balance on account 310557 please?",
            "account_balance",
            {"account_number": r"310557"},
        ),
        ToolCase(
            "I want to upgrade to the ultra plan, account 775302.",
            "change_plan",
            {"account_number": r"775302", "plan": r"ultra"},
        ),
        ToolCase(
            "Please switch me to basic, it's cheaper. Account number 129844.",
            "change_plan",
            {"account_number": r"129844", "plan": r"basic"},
        ),
        ToolCase(
            "Can I change my plan to fast? My account is 563017.",
            "change_plan",
            {"account_number": r"563017", "plan": r"fast"},
        ),
        ToolCase("Hi there, I have a quick question.", None),
        ToolCase("Are you available at the weekend?", None),
        ToolCase("What does the red light on the router mean in general?", None),
        ToolCase("How do I change my wifi password?", None),
        ToolCase("Is fibre faster than cable?", None),
        ToolCase("You're not very helpful, are you?", None),
        ToolCase("Okay, got it, cheers.", None),
        ToolCase("Am I talking to a robot?", None),
    ),
)

BOOKSHOP = Business(
    "bookshop",
    "You answer calls for Page and Quill, an independent bookshop on the High Street. "
    "We are open every day from 10 am to 7 pm.",
    (
        _tool(
            "find_book",
            "Check whether a book is on the shop's shelves.",
            {"title": _s("The book's title or author")},
            ["title"],
        ),
        _tool(
            "hold_book",
            "Put a book aside for a customer to collect later.",
            {"title": _s("The book"), "name": _s("The customer's name")},
            ["title", "name"],
        ),
    ),
    (
        ToolCase("Do you have The Night Circus?", "find_book", {"title": r"night circus"}),
        ToolCase("Is there a copy of Dune in the shop?", "find_book", {"title": r"dune"}),
        ToolCase(
            "I'm after the new Sally Rooney novel, is it in?",
            "find_book",
            {"title": r"rooney"},
        ),
        ToolCase(
            "Have you got any books by Terry Pratchett?", "find_book", {"title": r"pratchett"}
        ),
        ToolCase(
            "Do you carry the Ottolenghi cookbook, Simple?",
            "find_book",
            {"title": r"ottolenghi|simple"},
        ),
        ToolCase(
            "Could you put aside a copy of Circe for me? I'm Dana Webb.",
            "hold_book",
            {"title": r"circe", "name": r"dana"},
        ),
        ToolCase(
            "Please hold Project Hail Mary under the name Kim.",
            "hold_book",
            {"title": r"hail mary", "name": r"kim"},
        ),
        ToolCase(
            "Can you keep the Atlas of Birds for me to pick up? Name's Ray Ortiz.",
            "hold_book",
            {"title": r"atlas", "name": r"ray"},
        ),
        ToolCase("Can you recommend a good thriller?", None),
        ToolCase("Who wrote Pride and Prejudice?", None),
        ToolCase("What's a good book for a ten year old?", None),
        ToolCase("How should I store old books so they don't get damp?", None),
        ToolCase("Do you like reading yourself?", None),
        ToolCase("What's the most popular book this year?", None),
        ToolCase("Is reading on a screen bad for your eyes?", None),
        ToolCase("Thanks, have a lovely day.", None),
    ),
)

BUSINESSES: tuple[Business, ...] = (DENTIST, RESTAURANT, INTERNET, BOOKSHOP)
