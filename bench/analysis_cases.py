"""Made-up phone calls to made-up businesses, with the post-call analysis a careful reader writes.

Each call is written as the call records hold it: the caller's words as the speech recogniser
writes them (digits, fillers, self-corrections) and the agent's replies. With each call go the
structured fields, the success verdict against the persona's own criterion, and a few words a
right summary must mention. DEV is for tuning; HELD_OUT was written before any tuning and is kept
held out.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Persona:
    key: str
    instructions: str  # 1-2 sentences, who the agent is
    schema: dict[str, Any]  # a JSON schema: {"type": "object", "properties": {...}}
    success_criterion: str  # one sentence the verdict is judged against


@dataclass(frozen=True, slots=True)
class CallCase:
    persona: str  # Persona.key
    turns: tuple[tuple[str, str], ...]  # ("user" | "assistant", text), in order
    # Per schema property: accepted forms (lowercase substrings, ANY of which must appear in the
    # extracted value, lowercased; phone numbers as digits only, compared on digits), or None
    # when the call does not hold that field (the analysis must leave it null).
    fields: dict[str, tuple[str, ...] | None]
    success: bool  # the verdict against the persona's criterion
    summary_words: tuple[str, ...]  # 2-4 lowercase words a right summary must mention


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


_NAME = _text("The caller's name, as they give it.")
_NUMBER = _text("The phone number the caller gives to be called back on.")
_REASON = _text("Why the caller called, in a few words.")

PERSONAS: tuple[Persona, ...] = (
    Persona(
        key="dental",
        instructions=(
            "You answer the phone for Brightwell Dental, a family dental practice on Carrow "
            "Street. You book appointments, answer simple questions and take messages."
        ),
        schema={
            "type": "object",
            "properties": {
                "caller_name": _NAME,
                "callback_number": _NUMBER,
                "reason": _REASON,
                "preferred_time": _text(
                    "The date/time of the appointment the caller booked or asked for, "
                    "as they say it."
                ),
                "urgency": {
                    "type": "string",
                    "enum": ["routine", "urgent"],
                    "description": (
                        "urgent for pain, swelling, bleeding or a broken tooth; routine for any "
                        "other treatment; null when no treatment is asked about."
                    ),
                },
            },
        },
        success_criterion="The caller booked an appointment or left a callback number.",
    ),
    Persona(
        key="garage",
        instructions=(
            "You answer the phone for Ashgrove Motors, an independent garage doing services, "
            "MOTs, repairs and tyres. You book cars in and answer simple questions."
        ),
        schema={
            "type": "object",
            "properties": {
                "caller_name": _NAME,
                "callback_number": _NUMBER,
                "reason": _REASON,
                "booked_date": _text("The date the car is booked in for, as the caller says it."),
                "service_type": {
                    "type": "string",
                    "enum": ["service", "mot", "repair", "tyres"],
                    "description": "The kind of work the caller wants done on the car.",
                },
            },
        },
        success_criterion="The caller booked their car in for a specific day.",
    ),
    Persona(
        key="restaurant",
        instructions=(
            "You take phone bookings for Lantern House, a small Italian restaurant on Quay "
            "Street. You book tables, answer questions and take messages for the manager."
        ),
        schema={
            "type": "object",
            "properties": {
                "caller_name": _NAME,
                "callback_number": _NUMBER,
                "reason": _REASON,
                "booking_time": _text(
                    "The date and time of the table the caller booked or asked to book, "
                    "as they say it."
                ),
                "party_size": {
                    "type": "integer",
                    "description": "How many people the table is for.",
                },
            },
        },
        success_criterion=("The caller booked a table, with a day, a time and a number of people."),
    ),
)


DEV: tuple[CallCase, ...] = (
    # dental: emergency booked, name and number given.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Good morning, Brightwell Dental, how can I help?"),
            (
                "user",
                "Hi, um, yeah, I've got a really bad toothache. It's been keeping me up all night.",
            ),
            (
                "assistant",
                "I'm sorry to hear that. We keep emergency slots each morning. "
                "Could I take your name?",
            ),
            ("user", "It's Megan Okafor."),
            (
                "assistant",
                "Thanks, Megan. I can see you today at 11:40 or tomorrow at 9. Which suits you?",
            ),
            ("user", "Today at 11:40, please. The sooner the better."),
            (
                "assistant",
                "Booked for today at 11:40. Could I have a number in case we need to reach you?",
            ),
            ("user", "Yeah, it's 07700 900 418."),
            ("assistant", "Thanks, that's 07700 900418. See you at 11:40, Megan."),
            ("user", "Thanks, bye."),
        ),
        fields={
            "caller_name": ("megan okafor", "okafor"),
            "callback_number": ("07700900418",),
            "reason": ("toothache",),
            "preferred_time": ("today at 11:40", "today", "11:40"),
            "urgency": ("urgent",),
        },
        success=True,
        summary_words=("toothache", "today"),
    ),
    # dental: price question only, no name, no booking.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Brightwell Dental, good afternoon."),
            ("user", "Hi, er, how much do you charge for teeth whitening?"),
            (
                "assistant",
                "Whitening starts at £250 for the home kit, after a check-up with one of our "
                "dentists.",
            ),
            ("user", "Okay. And do I need to be a patient with you already?"),
            (
                "assistant",
                "No, we can register you at the check-up. Would you like to book one?",
            ),
            ("user", "No, that's fine, I'll have a think about it. Thanks."),
            ("assistant", "No problem. Have a good day."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("whitening",),
            "preferred_time": None,
            "urgency": ("routine",),
        },
        success=False,
        summary_words=("whitening", "250"),
    ),
    # dental: message for the dentist, number in words with a self-correction.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Hello, Brightwell Dental, how can I help?"),
            (
                "user",
                "Hi, it's Graham Whitlock. I need Dr Hale to call me back about the quote for "
                "my implant.",
            ),
            (
                "assistant",
                "Dr Hale is with a patient right now, but I can take a message. "
                "What's the best number?",
            ),
            (
                "user",
                "It's oh seven seven... sorry, oh seven seven zero zero, nine zero zero, "
                "two six one.",
            ),
            ("assistant", "Thanks. That's 07700 900261?"),
            ("user", "Yes, that's it."),
            ("assistant", "I'll ask Dr Hale to call you about the implant quote."),
            ("user", "Brilliant, cheers."),
        ),
        fields={
            "caller_name": ("graham whitlock", "whitlock"),
            "callback_number": ("07700900261",),
            "reason": ("implant", "quote"),
            "preferred_time": None,
            "urgency": ("routine",),
        },
        success=True,
        summary_words=("implant", "hale"),
    ),
    # dental: wrong number.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Good morning, Brightwell Dental."),
            ("user", "Oh, hi, is that Star Cabs? I need a taxi to the station for half ten."),
            (
                "assistant",
                "I'm sorry, this is Brightwell Dental, a dental practice. "
                "You may have the wrong number.",
            ),
            ("user", "Oh God, sorry, wrong number. Bye."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("wrong number", "taxi"),
            "preferred_time": None,
            "urgency": None,
        },
        success=False,
        summary_words=("wrong", "taxi"),
    ),
    # garage: MOT booked under a surname.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, good morning."),
            ("user", "Morning. I need to get my car MOT'd, it runs out at the end of the month."),
            (
                "assistant",
                "We can do that. We have spaces on Monday the 3rd or Wednesday the 5th. "
                "Drop-off is from 8.",
            ),
            ("user", "Er, Wednesday the 5th, please."),
            ("assistant", "Wednesday the 5th it is. What name shall I put it under?"),
            ("user", "Under Kowalski. K-O-W-A-L-S-K-I."),
            ("assistant", "Thanks. And a contact number?"),
            ("user", "07700 900 142."),
            ("assistant", "Great. Wednesday the 5th, drop-off from 8. See you then."),
            ("user", "Cheers."),
        ),
        fields={
            "caller_name": ("kowalski",),
            "callback_number": ("07700900142",),
            "reason": ("mot",),
            "booked_date": ("wednesday the 5th", "wednesday", "5th"),
            "service_type": ("mot",),
        },
        success=True,
        summary_words=("mot", "wednesday"),
    ),
    # garage: message for the mechanic, number corrected mid-way; no booking.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, how can I help?"),
            (
                "user",
                "Hi, it's Dean Marsh. Tony was looking at my clutch yesterday and said he'd ring "
                "with a price, but I've not heard anything.",
            ),
            (
                "assistant",
                "Sorry about that, Dean. Tony's under a car right now. I'll get him to call you. "
                "Which number's best?",
            ),
            ("user", "Um, my mobile, 07700 900 906. No wait, 909. 07700 900 909."),
            ("assistant", "So 07700 900909. I'll pass that on to Tony."),
            ("user", "Thanks, mate."),
        ),
        fields={
            "caller_name": ("dean marsh", "marsh"),
            "callback_number": ("07700900909",),
            "reason": ("clutch", "price"),
            "booked_date": None,
            "service_type": ("repair",),
        },
        success=False,
        summary_words=("clutch", "tony"),
    ),
    # garage: short, rude price question; no name.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Good afternoon, Ashgrove Motors."),
            ("user", "How much for two front tyres on a Fiesta? 195 55 R16."),
            (
                "assistant",
                "A mid-range tyre in that size is £78 each, fitted, so £156 for the two.",
            ),
            ("user", "£156? That's daylight robbery. Forget it."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("tyres", "tyre"),
            "booked_date": None,
            "service_type": ("tyres",),
        },
        success=False,
        summary_words=("tyres", "156"),
    ),
    # garage: service booked, caller changes the day after giving the number.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, how can I help?"),
            ("user", "Hi, I'd like to book my car in for a service, please. It's a 2017 Golf."),
            (
                "assistant",
                "Of course. The earliest is this Friday, or next Tuesday. Drop-off by 8:30.",
            ),
            ("user", "Friday's good."),
            ("assistant", "Friday then. Can I take your name?"),
            ("user", "Priya Raman."),
            ("assistant", "Thanks, Priya. And a number to call when it's ready?"),
            (
                "user",
                "Zero seven seven zero zero, nine zero zero, three eight eight. Oh, actually, "
                "sorry, can we make it next Tuesday? I forgot I'm away Friday.",
            ),
            (
                "assistant",
                "No problem, I've changed it to next Tuesday, drop-off by 8:30. "
                "We'll call 07700 900388 when it's ready.",
            ),
            ("user", "Perfect, thank you."),
        ),
        fields={
            "caller_name": ("priya raman", "raman"),
            "callback_number": ("07700900388",),
            "reason": ("service",),
            "booked_date": ("next tuesday", "tuesday"),
            "service_type": ("service",),
        },
        success=True,
        summary_words=("service", "tuesday"),
    ),
    # restaurant: table booked, caller corrects the party size.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Good evening, Lantern House. How can I help?"),
            ("user", "Hi, can I book a table for Friday at 7?"),
            ("assistant", "Of course. How many people?"),
            ("user", "Four of us. Well, four adults and... no, just four."),
            ("assistant", "A table for four on Friday at 7. What name is it under?"),
            ("user", "Under Donnelly."),
            ("assistant", "Thanks. And a contact number, please?"),
            ("user", "07700 900 623."),
            ("assistant", "You're booked: Friday at 7, four people, under Donnelly."),
            ("user", "Great, thanks."),
        ),
        fields={
            "caller_name": ("donnelly",),
            "callback_number": ("07700900623",),
            "reason": ("book a table", "table"),
            "booking_time": ("friday at 7", "friday"),
            "party_size": ("4",),
        },
        success=True,
        summary_words=("friday", "donnelly"),
    ),
    # restaurant: menu question only, no name, no booking.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Lantern House, good afternoon."),
            ("user", "Hi, er, do you do gluten-free pasta? My daughter's a coeliac."),
            (
                "assistant",
                "Yes, we have gluten-free pasta and pizza bases, and we cook them separately.",
            ),
            ("user", "Oh, brilliant. And do you have a car park?"),
            (
                "assistant",
                "We don't, but the Quay Street car park is two minutes' walk. "
                "Would you like to book a table?",
            ),
            ("user", "Maybe, I'll check with everyone and call back. Thank you."),
            ("assistant", "You're welcome. Bye."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("gluten-free", "gluten"),
            "booking_time": None,
            "party_size": None,
        },
        success=False,
        summary_words=("gluten", "pasta"),
    ),
    # restaurant: first choice full, books the other slot.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Lantern House, how can I help?"),
            (
                "user",
                "Hiya, I'd like to book for Saturday night, about 8, for six people. "
                "It's for my mum's birthday.",
            ),
            (
                "assistant",
                "Let me check. I'm sorry, Saturday is fully booked after 6. "
                "I can do Saturday at 6, or Sunday at 8.",
            ),
            ("user", "Oh. Um. Sunday at 8, then."),
            ("assistant", "Sunday at 8 for six. What name, please?"),
            ("user", "Chloe Adeyemi."),
            ("assistant", "Thanks, Chloe. And a phone number?"),
            ("user", "It's 07700 900 377."),
            ("assistant", "All booked: Sunday at 8, six people. I'll note it's a birthday."),
            ("user", "Aw, thank you."),
        ),
        fields={
            "caller_name": ("chloe adeyemi", "adeyemi"),
            "callback_number": ("07700900377",),
            "reason": ("birthday", "book"),
            "booking_time": ("sunday at 8", "sunday"),
            "party_size": ("6",),
        },
        success=True,
        summary_words=("sunday", "birthday"),
    ),
    # restaurant: lost property message with a number; no booking.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Good evening, Lantern House."),
            (
                "user",
                "Hi, I was in last night and I think I left my jacket on the back of the chair. "
                "It's a green rain jacket.",
            ),
            (
                "assistant",
                "I'm sorry, I can't check lost property myself, but I'll ask the manager to look "
                "and call you. What's your name?",
            ),
            ("user", "Tom Ashby."),
            ("assistant", "And your number, Tom?"),
            ("user", "Oh seven seven zero zero, nine zero zero, eight one two."),
            ("assistant", "Thanks, Tom. The manager will call you on 07700 900812."),
            ("user", "Cheers, appreciate it."),
        ),
        fields={
            "caller_name": ("tom ashby", "ashby"),
            "callback_number": ("07700900812",),
            "reason": ("jacket",),
            "booking_time": None,
            "party_size": None,
        },
        success=False,
        summary_words=("jacket", "manager"),
    ),
)


HELD_OUT: tuple[CallCase, ...] = (
    # dental: check-up booked, caller moves it from Wednesday to Thursday.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Brightwell Dental, how can I help?"),
            ("user", "Hi, yeah, I'm due a check-up and a clean, if I can book one in."),
            (
                "assistant",
                "Of course. We have Wednesday the 12th at 3:15 or Thursday the 13th at 10. "
                "Which would you like?",
            ),
            ("user", "Wednesday at 3:15 is fine."),
            ("assistant", "Lovely. What name is it under?"),
            ("user", "Patel. Ravi Patel."),
            ("assistant", "Thanks, Ravi. Wednesday the 12th at 3:15 then."),
            (
                "user",
                "Oh, hang on, actually I've got a meeting Wednesday. Can we do the Thursday at "
                "10 instead?",
            ),
            (
                "assistant",
                "No problem, I've moved you to Thursday the 13th at 10. "
                "Is there a number we can reach you on?",
            ),
            ("user", "Yeah, 07700 900 735."),
            ("assistant", "Thanks, Ravi. See you Thursday at 10."),
        ),
        fields={
            "caller_name": ("ravi patel", "patel"),
            "callback_number": ("07700900735",),
            "reason": ("check-up", "clean"),
            "preferred_time": ("thursday at 10", "thursday"),
            "urgency": ("routine",),
        },
        success=True,
        summary_words=("thursday", "patel"),
    ),
    # dental: rude and short, opening hours only.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Good afternoon, Brightwell Dental, how can I help?"),
            ("user", "Are you open Saturday or not?"),
            ("assistant", "We're open Saturday mornings, 9 until 1. Would you like to book?"),
            ("user", "No. Just wanted to know. Bye."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("open saturday", "saturday", "open"),
            "preferred_time": None,
            "urgency": None,
        },
        success=False,
        summary_words=("saturday", "open"),
    ),
    # dental: out of hours, urgent message with a number, caller gives no name.
    CallCase(
        persona="dental",
        turns=(
            (
                "assistant",
                "Brightwell Dental, good evening. The practice is closed, but I can take a "
                "message for the on-call dentist.",
            ),
            (
                "user",
                "Yeah, hi, um, my jaw's swollen up on one side and it's really throbbing. "
                "I don't know what to do.",
            ),
            (
                "assistant",
                "I'm sorry. If you have trouble breathing or swallowing, call 999. Otherwise the "
                "on-call dentist can ring you back tonight. What number should they use?",
            ),
            ("user", "01632 960 582."),
            ("assistant", "Thanks, 01632 960582. And your name, please?"),
            ("user", "Does it matter? Just get them to call, please."),
            ("assistant", "Of course. I'll pass the message on now, and they'll call you tonight."),
            ("user", "Okay. Thank you."),
        ),
        fields={
            "caller_name": None,
            "callback_number": ("01632960582",),
            "reason": ("swollen", "jaw", "throbbing"),
            "preferred_time": None,
            "urgency": ("urgent",),
        },
        success=True,
        summary_words=("jaw", "dentist"),
    ),
    # dental: treatment question, name given, no booking and no number.
    CallCase(
        persona="dental",
        turns=(
            ("assistant", "Hi, you're through to Brightwell Dental. How can I help?"),
            (
                "user",
                "Hello, it's Joan Fairbairn. I was wondering, do you do the, um, clear braces? "
                "For adults?",
            ),
            (
                "assistant",
                "Yes, we offer clear aligners for adults. It starts with a free consultation.",
            ),
            ("user", "And can you pay monthly for that?"),
            (
                "assistant",
                "Yes, there's a monthly payment plan over 12 or 24 months. "
                "Shall I book your consultation?",
            ),
            ("user", "Not yet, I need to talk to my husband first. I'll ring back."),
            ("assistant", "Of course, Joan. Call us whenever you're ready."),
        ),
        fields={
            "caller_name": ("joan fairbairn", "fairbairn"),
            "callback_number": None,
            "reason": ("clear braces", "braces"),
            "preferred_time": None,
            "urgency": ("routine",),
        },
        success=False,
        summary_words=("braces", "monthly"),
    ),
    # garage: wrong number (wanted the vets).
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, good morning."),
            ("user", "Oh, hello, I'm ringing to book the cat in for her jabs."),
            (
                "assistant",
                "I think you want Ashgrove Vets. This is Ashgrove Motors, a car garage.",
            ),
            ("user", "Oh, sorry, love. Wrong number. Bye bye."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("wrong number", "cat", "jabs"),
            "booked_date": None,
            "service_type": None,
        },
        success=False,
        summary_words=("wrong", "cat"),
    ),
    # garage: brake repair booked, caller will not give a name.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, how can I help?"),
            (
                "user",
                "Yeah, my brakes are making a horrible grinding noise. Can someone look at them?",
            ),
            (
                "assistant",
                "That needs checking soon. We can fit you in tomorrow morning or Thursday "
                "afternoon.",
            ),
            ("user", "Tomorrow morning. What time?"),
            (
                "assistant",
                "Drop it off at 8 and we'll look at it first thing. "
                "What's the best number for you?",
            ),
            ("user", "07700 900 557."),
            ("assistant", "And what name should I put?"),
            ("user", "Just put the silver Corsa, they know me. I've got to go."),
            (
                "assistant",
                "No problem. Silver Corsa, tomorrow at 8. We'll call 07700 900557 with a price.",
            ),
            ("user", "Yep. Bye."),
        ),
        fields={
            "caller_name": None,
            "callback_number": ("07700900557",),
            "reason": ("brakes", "grinding"),
            "booked_date": ("tomorrow morning", "tomorrow"),
            "service_type": ("repair",),
        },
        success=True,
        summary_words=("brakes", "tomorrow"),
    ),
    # garage: rude and short, chasing a car; leaves nothing.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, good afternoon. How can I help?"),
            ("user", "Is my car done yet or what? I dropped it off this morning."),
            (
                "assistant",
                "I'm sorry, I can't see the workshop board from here. Can I take your name, and "
                "I'll get someone to call you?",
            ),
            ("user", "Forget it. I'll come down myself."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("is my car done", "car done"),
            "booked_date": None,
            "service_type": None,
        },
        success=False,
        summary_words=("car", "morning"),
    ),
    # garage: tyre booked for a Saturday, name spelled out, landline number.
    CallCase(
        persona="garage",
        turns=(
            ("assistant", "Ashgrove Motors, good morning."),
            (
                "user",
                "Hi, good morning. I've got a slow puncture on the back left, and I think the "
                "tyre needs replacing, to be honest.",
            ),
            (
                "assistant",
                "We can replace it. Are you after a weekday, or Saturday? "
                "We're open till 1 on Saturdays.",
            ),
            ("user", "Could I do Saturday? The 14th?"),
            ("assistant", "Yes, Saturday the 14th at 9:30 is free. Can I take a name?"),
            ("user", "It's Fiona, Fiona McLeish. M-C-L-E-I-S-H."),
            ("assistant", "Thanks, Fiona. And your phone number?"),
            ("user", "It's 01632 960 214."),
            ("assistant", "Lovely. Saturday the 14th at 9:30, one rear tyre. See you then."),
            ("user", "Thanks very much."),
        ),
        fields={
            "caller_name": ("fiona mcleish", "mcleish"),
            "callback_number": ("01632960214",),
            "reason": ("puncture", "tyre"),
            "booked_date": ("saturday", "14th"),
            "service_type": ("tyres",),
        },
        success=True,
        summary_words=("tyre", "saturday"),
    ),
    # restaurant: anniversary table booked.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Hello, Lantern House, how can I help?"),
            ("user", "Hi there. Could I get a table for two next Thursday, around half seven?"),
            (
                "assistant",
                "Next Thursday at 7:30 for two, yes, that's free. Inside or on the terrace?",
            ),
            (
                "user",
                "Inside, please. It's, um, it's an anniversary thing, so somewhere quiet if you "
                "can.",
            ),
            ("assistant", "I'll give you a quiet corner table. What name shall I put?"),
            ("user", "Marcus Lindqvist."),
            ("assistant", "Thanks, Marcus. And a contact number?"),
            ("user", "Yeah, it's 07700 900 194."),
            ("assistant", "Booked: next Thursday at 7:30, table for two, under Lindqvist."),
            ("user", "Great, thanks a lot."),
        ),
        fields={
            "caller_name": ("marcus lindqvist", "lindqvist"),
            "callback_number": ("07700900194",),
            "reason": ("anniversary", "table for two"),
            "booking_time": ("next thursday", "thursday"),
            "party_size": ("2",),
        },
        success=True,
        summary_words=("thursday", "anniversary"),
    ),
    # restaurant: questions only, no name, no booking.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Lantern House, good evening."),
            ("user", "Hi, quick question, can we bring our own wine? And what's the corkage?"),
            ("assistant", "You can, yes. Corkage is £8 a bottle."),
            ("user", "Okay, and how late's the kitchen open on a Friday?"),
            (
                "assistant",
                "The kitchen takes last orders at 10 on Fridays. Would you like to book a table?",
            ),
            ("user", "No, we're just deciding where to go. Thanks."),
            ("assistant", "No problem. Enjoy your evening."),
        ),
        fields={
            "caller_name": None,
            "callback_number": None,
            "reason": ("wine", "corkage"),
            "booking_time": None,
            "party_size": None,
        },
        success=False,
        summary_words=("corkage", "wine"),
    ),
    # restaurant: large group left as a message, number corrected; nothing booked.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Lantern House, how can I help?"),
            (
                "user",
                "Hi, yeah, I'm looking at doing a leaving do for work. Twenty people, Friday the "
                "23rd. Can you do that?",
            ),
            (
                "assistant",
                "For groups over 12 our events manager sorts the details. She's not in today, "
                "but I can take a message.",
            ),
            ("user", "Okay. It's Hannah Brooks."),
            ("assistant", "Thanks, Hannah. What number should she call?"),
            ("user", "07700 900 54... sorry, 07700 900 504."),
            (
                "assistant",
                "That's 07700 900504. She'll call you tomorrow about 20 people on Friday the 23rd.",
            ),
            ("user", "Lovely, thanks."),
        ),
        fields={
            "caller_name": ("hannah brooks", "brooks"),
            "callback_number": ("07700900504",),
            "reason": ("leaving do",),
            "booking_time": ("friday the 23rd", "23rd"),
            "party_size": ("20",),
        },
        success=False,
        summary_words=("leaving", "23rd"),
    ),
    # restaurant: booked for tonight, no number given, time changed at the end.
    CallCase(
        persona="restaurant",
        turns=(
            ("assistant", "Good afternoon, Lantern House."),
            ("user", "Hi, can I book a table for tonight, for three, at 6?"),
            ("assistant", "Tonight at 6 for three, yes. What name is it?"),
            ("user", "Okonkwo. O-K-O-N-K-W-O."),
            ("assistant", "Thank you. Could I have a phone number as well?"),
            ("user", "Do you need it? I'd rather not."),
            (
                "assistant",
                "That's fine, it's not essential. Tonight at 6, three people, under Okonkwo.",
            ),
            (
                "user",
                "Actually, hang on, could we make it half six instead? So 6:30. "
                "My sister finishes late.",
            ),
            ("assistant", "Of course. I've moved it to 6:30 tonight."),
            ("user", "Thanks."),
        ),
        fields={
            "caller_name": ("okonkwo",),
            "callback_number": None,
            "reason": ("book a table", "table"),
            "booking_time": ("6:30", "half six"),
            "party_size": ("3",),
        },
        success=True,
        summary_words=("okonkwo", "6:30"),
    ),
)


_DIGIT_WORDS = {
    "oh": "0",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
}
_NUMBER_WORDS = {
    **{word: int(digit) for word, digit in _DIGIT_WORDS.items() if word != "oh"},
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}


def _spoken_digits(text: str) -> str:
    """The digits a caller says, in order: "oh seven double one" -> "0711"."""
    out: list[str] = []
    repeat = 1
    for token in re.findall(r"[a-z]+|\d+", text.lower()):
        if token in ("double", "triple"):
            repeat = 2 if token == "double" else 3
            continue
        if token.isdigit():
            out.append(token[0] * repeat + token[1:])
        elif token in _DIGIT_WORDS:
            out.append(_DIGIT_WORDS[token] * repeat)
        repeat = 1
    return "".join(out)


def _is_phone(prop: str) -> bool:
    return prop.endswith("_number")


def _check_case(case: CallCase, personas: dict[str, Persona], where: str) -> None:
    assert case.persona in personas, f"{where}: unknown persona {case.persona!r}"
    properties = personas[case.persona].schema["properties"]
    roles = [role for role, _ in case.turns]
    assert 4 <= len(case.turns) <= 12, f"{where}: {len(case.turns)} turns"
    assert set(roles) == {"user", "assistant"}, f"{where}: roles {set(roles)}"
    assert all(a != b for a, b in itertools.pairwise(roles)), f"{where}: same role twice"
    for _, text in case.turns:
        assert text.strip() == text and text, f"{where}: empty or padded turn"
        assert all(ord(c) < 128 or c == "£" for c in text), f"{where}: non-ASCII in {text!r}"
    said = " ".join(text for role, text in case.turns if role == "user").lower()
    everything = " ".join(text for _, text in case.turns).lower()
    assert set(case.fields) == set(properties), f"{where}: fields {sorted(case.fields)}"
    for prop, forms in case.fields.items():
        if forms is None:
            continue
        assert forms and all(f and f == f.lower() for f in forms), f"{where}: {prop} {forms}"
        spec = properties[prop]
        for form in forms:
            if _is_phone(prop):
                assert form.isdigit(), f"{where}: {prop} {form!r} is not digits only"
                assert form in _spoken_digits(said), f"{where}: caller never says {form}"
            elif "enum" in spec:
                assert form in spec["enum"], f"{where}: {prop} {form!r} not in enum"
            elif spec["type"] == "integer":
                assert form.isdigit(), f"{where}: {prop} {form!r} is not an integer"
                words = re.findall(r"[a-z]+|\d+", said)
                spoken = {str(_NUMBER_WORDS[w]) for w in words if w in _NUMBER_WORDS}
                assert form in words or form in spoken, f"{where}: caller never says {form}"
            else:
                assert form in said, f"{where}: {prop} {form!r} not in the caller's words"
    assert 2 <= len(case.summary_words) <= 4, f"{where}: summary_words"
    for word in case.summary_words:
        assert word == word.lower() and word in everything, f"{where}: summary word {word!r}"


def check() -> None:
    keys = [p.key for p in PERSONAS]
    assert len(keys) == len(set(keys)), f"persona keys repeat: {keys}"
    personas = {p.key: p for p in PERSONAS}
    for persona in PERSONAS:
        assert persona.schema["type"] == "object"
        for prop, spec in persona.schema["properties"].items():
            assert spec.get("description"), f"{persona.key}.{prop} has no description"
    for name, cases in (("DEV", DEV), ("HELD_OUT", HELD_OUT)):
        for i, case in enumerate(cases):
            _check_case(case, personas, f"{name}[{i}] ({case.persona})")
    assert not {c.turns for c in DEV} & {c.turns for c in HELD_OUT}, "a call is in both sets"


def counts() -> dict[str, dict[str, int]]:
    return {
        name: {"calls": len(cases), "success": sum(c.success for c in cases)}
        | {key: sum(c.persona == key for c in cases) for key in (p.key for p in PERSONAS)}
        for name, cases in (("DEV", DEV), ("HELD_OUT", HELD_OUT))
    }


if __name__ == "__main__":
    check()
    print(counts())
