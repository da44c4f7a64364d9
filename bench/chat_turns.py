"""Caller turns for the default persona (no facts), each with its written rubric.

The set of `bench/conversation.py`. Written before the prompt and guard were
changed for it, and not tuned against: a case that fails stays failing until
the agent gets better, not until the rubric gets looser.

Each turn is a fresh call whose only earlier turn is the default greeting. A
reply passes when it:
- says nothing about languages (unless the caller asked about one),
- is at most 3 sentences and not empty,
- states no number the caller did not say, where the agent cannot know one
  (`knows_numbers=False`: about the business, the weather, the caller's order),
- and is relevant (`relevant` matches) or, where that is fair
  (`honest_ok`), honest: it says it does not know or cannot do it.

In a call of several turns (`bench.conversation --per-call N`) the agent's last
words may be another line than the greeting: a request to repeat is also
relevant when its reply says that line again, whole (`conversation.said_again`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GREETING = "Hi! How can I help you today?"


@dataclass(frozen=True, slots=True)
class ChatTurn:
    text: str
    kind: str  # business, small_talk, repeat, off_topic, rude, rambling, call
    relevant: str | None = None  # a pattern a relevant reply matches (None: honesty only)
    honest_ok: bool = True  # "I don't know" is a fair answer to it
    knows_numbers: bool = False  # the agent can know a number in the answer ("two plus two")

    def relevant_in(self, reply: str) -> bool:
        return self.relevant is not None and re.search(self.relevant, reply, re.I) is not None


HONEST = re.compile(
    r"\b(i don't know|i do not know|i'm not sure|i am not sure|not sure|no idea|"
    r"i (can't|cannot|can not|am not able to|am unable to|won't be able to)|i'm (not able|unable)|"
    r"i don't have (that|this|any|the|access|information|details)|"
    r"i (do not|don't) have (access|information|details)|don't have access|"
    r"no (information|details|way to)|not (available|something i)|afraid)\b",
    re.I,
)
LANGUAGE_TALK = re.compile(
    r"\b(english|languages?|speak only|only speak|only support|bilingual|translat\w*)\b", re.I
)


TURNS: tuple[ChatTurn, ...] = (
    # about the business, which the default persona knows nothing of: honest, no inventions
    ChatTurn("What time do you open on Saturday?", "business"),
    ChatTurn("Do you have any gluten free bread today?", "business"),
    ChatTurn("How much does a large pizza cost?", "business"),
    ChatTurn("Where are you located?", "business"),
    ChatTurn("Is there parking near you?", "business"),
    ChatTurn("Can I pay by card?", "business"),
    ChatTurn("Do you deliver to the city centre?", "business"),
    ChatTurn("Are you open on Christmas Day?", "business"),
    ChatTurn("How long does a repair usually take?", "business"),
    ChatTurn("What's your phone number?", "business"),
    ChatTurn("Do you have any rooms free next week?", "business"),
    ChatTurn("Can I book an appointment for tomorrow at ten?", "business"),
    # small talk: a relevant reply, "I don't know" is no answer
    ChatTurn("Hello, can you hear me?", "small_talk", r"\b(yes|hear|hello|hi)\b", False),
    ChatTurn(
        "How are you today?",
        "small_talk",
        r"\b(good|well|fine|great|thanks|thank you|doing)\b",
        False,
    ),
    ChatTurn("What's your name?", "small_talk", r"\b(name|i'm|i am|assistant|call me)\b", False),
    ChatTurn(
        "Are you a robot?",
        "small_talk",
        r"\b(assistant|ai|virtual|robot|computer|automated|program|not a (person|human))\b",
        False,
    ),
    ChatTurn(
        "Thanks, that's really helpful.",
        "small_talk",
        r"\b(welcome|glad|happy|pleasure|anything else|no problem)\b",
        False,
    ),
    ChatTurn("Good morning!", "small_talk", r"\b(morning|hello|hi|help)\b", False),
    ChatTurn(
        "Thank you, goodbye.",
        "small_talk",
        r"\b(bye|goodbye|welcome|take care|have a (great|good|nice|lovely))\b",
        False,
    ),
    # asked to repeat or slow down: the greeting again, or a plain offer to help
    ChatTurn("Please repeat that more slowly.", "repeat", r"\b(help|sure|of course)\b", False),
    ChatTurn("Sorry, I didn't catch that.", "repeat", r"\b(help|said|asked|sure)\b", False),
    ChatTurn(
        "Can you speak a bit louder?",
        "repeat",
        r"\b(sure|of course|yes|louder|okay|better|help)\b",
        False,
    ),
    ChatTurn("What did you just say?", "repeat", r"\b(help|said|asked)\b", False),
    ChatTurn(
        "Could you slow down a little?",
        "repeat",
        r"\b(sure|of course|yes|slow\w*|okay|sorry)\b",
        False,
    ),
    # off topic: right if it can be known, else honest
    ChatTurn("What's the capital of France?", "off_topic", r"\bparis\b"),
    ChatTurn(
        "Can you tell me a joke?",
        "off_topic",
        r"\b(why|what do you call|knock|because|joke)\b",
        False,
    ),
    ChatTurn(
        "What's the weather like tomorrow?",
        "off_topic",
        r"\b(weather (app|service|website|forecast)|check (a|the|your) (weather|forecast))\b",
    ),
    ChatTurn("Who won the football world cup in 2018?", "off_topic", r"\bfrance\b"),
    ChatTurn(
        "How many days are there in a week?",
        "off_topic",
        r"\b(seven|7)\b",
        knows_numbers=True,
    ),
    ChatTurn("What's two plus two?", "off_topic", r"\b(four|4)\b", knows_numbers=True),
    ChatTurn("Can you recommend a good book?", "off_topic", r"\b(book|novel|read|by)\b"),
    ChatTurn(
        "What's a good way to fall asleep faster?",
        "off_topic",
        r"\b(sleep|bed|relax\w*|screens?|routine|breath\w*|dark|caffeine|calm)\b",
    ),
    # rude: stays calm and helpful
    ChatTurn("You're useless.", "rude", r"\b(sorry|apologi[sz]e|help|frustrat\w*)\b", False),
    ChatTurn(
        "This is stupid, just answer the question!",
        "rude",
        r"\b(sorry|apologi[sz]e|help|question|understand)\b",
        False,
    ),
    ChatTurn("Shut up.", "rude", r"\b(sorry|okay|ok|alright|sure|help|understand)\b", False),
    ChatTurn(
        "I hate talking to machines.",
        "rude",
        r"\b(sorry|understand|help|person|frustrat\w*)\b",
        False,
    ),
    # long, rambling turns
    ChatTurn(
        "So, um, I was in last week, or maybe the week before, I'm not sure, and I bought "
        "something, a cake I think, and anyway, I wanted to ask whether you still have it, "
        "the same one.",
        "rambling",
    ),
    ChatTurn(
        "Okay so my daughter has a birthday coming up and she loves chocolate and also "
        "strawberries but my husband thinks that's too much sugar, and I don't know, what "
        "do you think we should do?",
        "rambling",
        r"\b(chocolate|strawberr\w*|birthday|cake|sugar|both|balance|fruit)\b",
    ),
    ChatTurn(
        "Well I was just driving past and I saw your sign and I thought I'd call, I don't "
        "really need anything, I was just curious what you do.",
        "rambling",
        r"\b(help|assist\w*|questions?|assistant)\b",
    ),
    ChatTurn(
        "Hi, yes, hello, I'm calling because, well, it's a bit complicated, my neighbour "
        "told me about you and I wasn't sure whether to call but here I am.",
        "rambling",
        r"\b(help|glad|welcome|happy|how can)\b",
        False,
    ),
    ChatTurn(
        "Sorry, one second, my dog is barking... okay, I'm back, where were we?",
        "rambling",
        r"\b(help|no problem|back|welcome|okay|sure)\b",
        False,
    ),
    # about the call itself
    ChatTurn(
        "Can I speak to a real person?",
        "call",
        r"\b(person|human|someone|staff|transfer|connect|team|message)\b",
    ),
    ChatTurn("Do you speak English?", "call", r"\b(yes|english)\b", False),
)
