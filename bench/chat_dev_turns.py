"""The development set of caller turns for the default persona: what its turn
handling (voiceapp/engine/acts.py) and prompt were tuned on.

`chat_turns.py` is the set of record and is held out: nothing is tuned on it.
These were written after it, before the turn handling existed, with other
wordings and other kinds of business in mind (a salon, a plumber, a hotel, a
vet, a garage, a dentist), in the same categories and with the same rubric
rules (`ChatTurn`).
"""

from __future__ import annotations

from .chat_turns import ChatTurn

DEV_TURNS: tuple[ChatTurn, ...] = (
    # about the business: only an honest answer is right
    ChatTurn("When do you close tonight?", "business"),
    ChatTurn("How much is a haircut?", "business"),
    ChatTurn("What's your address?", "business"),
    ChatTurn("Do you take cash?", "business"),
    ChatTurn("Have you got a table for two at eight?", "business"),
    ChatTurn("Is the vet in on Sundays?", "business"),
    ChatTurn("Can you send a plumber out today?", "business"),
    ChatTurn("How far are you from the train station?", "business"),
    ChatTurn("Do you sell gift cards?", "business"),
    ChatTurn("What's the price for a night in a double room?", "business"),
    ChatTurn("Who's the dentist working on Monday?", "business"),
    ChatTurn("Do you do MOT tests on vans?", "business"),
    ChatTurn("What's your email address?", "business"),
    ChatTurn("How soon can someone come and look at my boiler?", "business"),
    # small talk and questions about the agent
    ChatTurn("Hey there!", "small_talk", r"\b(hello|hi|hey|help)\b", False),
    ChatTurn(
        "How's your day going?",
        "small_talk",
        r"\b(good|well|fine|great|thanks|thank you|doing|going)\b",
        False,
    ),
    ChatTurn("Who am I talking to?", "small_talk", r"\b(assistant|i'm|i am|name)\b", False),
    ChatTurn(
        "Is this an automated system?",
        "small_talk",
        r"\b(assistant|ai|virtual|automated|yes|computer|program)\b",
        False,
    ),
    ChatTurn(
        "Great, cheers for that.",
        "small_talk",
        r"\b(welcome|glad|happy|pleasure|anything else|no problem)\b",
        False,
    ),
    ChatTurn(
        "Okay, bye then.",
        "small_talk",
        r"\b(bye|goodbye|welcome|take care|have a (great|good|nice|lovely))\b",
        False,
    ),
    # asked to say it again, or differently
    ChatTurn("Say that again?", "repeat", r"\b(help|sure|of course)\b", False),
    ChatTurn("Sorry, you cut out there.", "repeat", r"\b(help|said|sure|of course)\b", False),
    ChatTurn("Pardon?", "repeat", r"\b(help|said|sure|of course)\b", False),
    ChatTurn(
        "I can barely hear you.",
        "repeat",
        r"\b(sorry|sure|of course|louder|better|help)\b",
        False,
    ),
    ChatTurn(
        "You're talking too fast.",
        "repeat",
        r"\b(sorry|sure|of course|slow\w*|help)\b",
        False,
    ),
    # off topic: right if it can be known, else honest
    ChatTurn("What's the biggest planet in the solar system?", "off_topic", r"\bjupiter\b"),
    ChatTurn("How many legs does a spider have?", "off_topic", r"\b(eight|8)\b", True, True),
    ChatTurn("What's ten minus three?", "off_topic", r"\b(seven|7)\b", knows_numbers=True),
    ChatTurn(
        "Any tips for staying calm before an interview?",
        "off_topic",
        r"\b(breath\w*|prepar\w*|practi[sc]e|relax\w*|calm|sleep|confident)\b",
    ),
    ChatTurn("Will it rain this afternoon?", "off_topic", r"\b(weather|forecast)\b"),
    ChatTurn(
        "Tell me something interesting.",
        "off_topic",
        r"\b(did you know|fact|interesting)\b",
        False,
    ),
    # rude
    ChatTurn(
        "You're not listening to me.",
        "rude",
        r"\b(sorry|apologi[sz]e|help|listen\w*|understand)\b",
        False,
    ),
    ChatTurn("Ugh, forget it.", "rude", r"\b(sorry|okay|ok|help|understand|sure)\b", False),
    ChatTurn(
        "What a waste of time.",
        "rude",
        r"\b(sorry|apologi[sz]e|help|frustrat\w*|understand)\b",
        False,
    ),
    # long, rambling turns
    ChatTurn(
        "Right, so, I had a booking with you, or my wife did, I think it was for Tuesday, "
        "and something came up with the kids, and we were wondering if it's still on.",
        "rambling",
    ),
    ChatTurn(
        "I'm trying to plan a surprise for my mum, she's turning seventy, and she likes "
        "gardening and cooking, and I've no idea what to get her, any thoughts?",
        "rambling",
        r"\b(garden\w*|cook\w*|plant\w*|class|book|gift|present|tools?|experience)\b",
    ),
    ChatTurn(
        "Hello, hi, sorry, I'm not very good with these phone things, my son usually does "
        "it, but he's away, so, um, yeah.",
        "rambling",
        r"\b(help|no problem|worries|happy|glad|okay|sure)\b",
        False,
    ),
    # about the call
    ChatTurn(
        "Could I talk to someone from the team instead?",
        "call",
        r"\b(person|human|someone|staff|transfer|connect|team|message)\b",
    ),
    ChatTurn("Can you understand me okay?", "call", r"\b(yes|understand|hear)\b", False),
)
