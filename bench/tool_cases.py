"""Caller requests for the tool-choice eval (`bench/tool_choice.py`), each with
the call it needs, or none.

Written before any model was measured on them, and not tuned against. The four
tools are a bike shop's, the kind a business wires to its own systems; their
schemas are `TOOLS`. A request that needs a tool names the tool and, for each
argument, a pattern its value must match (case-insensitive, on the value as
text). The caller's words are written as Whisper writes speech: digits for
numbers, ordinary punctuation, some paraphrase and some filler.

A request that needs no tool is small talk, a question about the call, or a
question the persona answers in words (it is in the instructions), or one no
tool serves. Calling any tool there is a false call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from voiceapp.engine.tools import ToolSpec

INSTRUCTIONS = (
    "You are the phone assistant of Harbor Bikes, a bicycle shop and repair workshop. "
    "We are open Monday to Saturday, 9 am to 6 pm. Keep answers short and friendly."
)


def _tool(tool: str, description: str, **properties: str) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {
            key: {"type": "string", "description": text} for key, text in properties.items()
        },
        "required": list(properties),
    }
    return ToolSpec(tool, description, json.dumps(schema))


TOOLS: tuple[ToolSpec, ...] = (
    _tool(
        "lookup_order",
        "Look up the status of a customer's order by its order number.",
        order_number="The order number the caller gives",
    ),
    _tool(
        "book_repair",
        "Book a bike into the workshop for a repair or service on a day.",
        day="The day the caller wants, as they say it",
        name="The caller's name",
    ),
    _tool(
        "check_stock",
        "Check whether a product is in stock in the shop.",
        product="The product the caller asks about",
    ),
    _tool(
        "cancel_booking",
        "Cancel a workshop booking the caller already made.",
        name="The name the booking is under",
    ),
)


@dataclass(frozen=True, slots=True)
class ToolCase:
    text: str
    tool: str | None  # the tool the request needs; None: answered in words
    arguments: dict[str, str] = field(default_factory=dict)  # argument -> pattern


CASES: tuple[ToolCase, ...] = (
    # lookup_order: 8
    ToolCase("Where is my order? The number is 48213.", "lookup_order", {"order_number": r"48213"}),
    ToolCase("Can you check order 5521 for me?", "lookup_order", {"order_number": r"5521"}),
    ToolCase(
        "Hi, I ordered a helmet last week, order number 77104, has it shipped yet?",
        "lookup_order",
        {"order_number": r"77104"},
    ),
    ToolCase("What's the status of order number 3090?", "lookup_order", {"order_number": r"3090"}),
    ToolCase(
        "I'm calling about my order, it's 61842, when will it arrive?",
        "lookup_order",
        {"order_number": r"61842"},
    ),
    ToolCase("Has order 2207 been sent out?", "lookup_order", {"order_number": r"2207"}),
    ToolCase(
        "My order hasn't come. The order number is 90415.",
        "lookup_order",
        {"order_number": r"90415"},
    ),
    ToolCase("Could you track order 1188 please?", "lookup_order", {"order_number": r"1188"}),
    # book_repair: 8
    ToolCase(
        "I'd like to book my bike in for a service on Friday. My name is Anna Berg.",
        "book_repair",
        {"day": r"friday", "name": r"anna"},
    ),
    ToolCase(
        "Can I bring my bike in for a repair on Tuesday? It's Tom Reyes.",
        "book_repair",
        {"day": r"tuesday", "name": r"tom"},
    ),
    ToolCase(
        "This is Priya. I need a puncture fixed, could I book it for Monday?",
        "book_repair",
        {"day": r"monday", "name": r"priya"},
    ),
    ToolCase(
        "Book a service for Saturday please, the name is Jonas.",
        "book_repair",
        {"day": r"saturday", "name": r"jonas"},
    ),
    ToolCase(
        "My brakes squeak. Can you fit me in on Wednesday? I'm Mia Chen.",
        "book_repair",
        {"day": r"wednesday", "name": r"mia"},
    ),
    ToolCase(
        "Hello, Sam Okafor here, I want to book a repair for Thursday.",
        "book_repair",
        {"day": r"thursday", "name": r"sam"},
    ),
    ToolCase(
        "I'd like a workshop slot tomorrow for my gears, name's Lena.",
        "book_repair",
        {"day": r"tomorrow", "name": r"lena"},
    ),
    ToolCase(
        "Could you book my e-bike in on the 12th of May? My name is David Park.",
        "book_repair",
        {"day": r"12|may", "name": r"david"},
    ),
    # check_stock: 8
    ToolCase("Do you have any 29 inch inner tubes in stock?", "check_stock", {"product": r"tube"}),
    ToolCase("Is the Shimano chain in stock?", "check_stock", {"product": r"chain"}),
    ToolCase(
        "I'm looking for a child's helmet, do you have one?", "check_stock", {"product": r"helmet"}
    ),
    ToolCase("Have you got any bike lights at the moment?", "check_stock", {"product": r"light"}),
    ToolCase("Are there any kids' bikes available?", "check_stock", {"product": r"bike"}),
    ToolCase("Do you stock disc brake pads for a Trek?", "check_stock", {"product": r"brake|pad"}),
    ToolCase("Can you check if you have a bike lock?", "check_stock", {"product": r"lock"}),
    ToolCase(
        "I need a new saddle, is there one in the shop?", "check_stock", {"product": r"saddle"}
    ),
    # cancel_booking: 7
    ToolCase(
        "I need to cancel my repair booking, it's under Maria Lopez.",
        "cancel_booking",
        {"name": r"maria"},
    ),
    ToolCase(
        "Please cancel my workshop appointment. The name is Ben Hall.",
        "cancel_booking",
        {"name": r"ben"},
    ),
    ToolCase(
        "I can't make it on Friday, can you cancel the booking for Chris?",
        "cancel_booking",
        {"name": r"chris"},
    ),
    ToolCase(
        "This is Olga, I booked a service but I want to cancel it.",
        "cancel_booking",
        {"name": r"olga"},
    ),
    ToolCase(
        "Cancel my booking please, it was made for Ahmed.",
        "cancel_booking",
        {"name": r"ahmed"},
    ),
    ToolCase(
        "Hi, it's Karen Smith, I won't need the repair slot any more, please cancel it.",
        "cancel_booking",
        {"name": r"karen"},
    ),
    ToolCase(
        "I'd like to call off my service appointment, name of Luis.",
        "cancel_booking",
        {"name": r"luis"},
    ),
    # no tool: 16
    ToolCase("Hello, can you hear me?", None),
    ToolCase("How are you today?", None),
    ToolCase("What time do you open on Saturday?", None),
    ToolCase("Are you open on Sundays?", None),
    ToolCase("Thanks, that's all I needed.", None),
    ToolCase("What's your name?", None),
    ToolCase("Are you a real person?", None),
    ToolCase("Can you say that again more slowly?", None),
    ToolCase("What's the weather like today?", None),
    ToolCase("Tell me a joke.", None),
    ToolCase("How do I pump up a tyre?", None),
    ToolCase("What's the best way to clean a bike chain?", None),
    ToolCase("Sorry, I think I have the wrong number.", None),
    ToolCase("Okay, great, thank you very much.", None),
    ToolCase("Is it hard to learn to ride a bike as an adult?", None),
    ToolCase("Goodbye.", None),
)
