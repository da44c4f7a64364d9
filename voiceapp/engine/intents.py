"""The persona's actions for a small model: rules over the caller's words.

The embedded SmolLM2-135M neither chooses a tool by itself nor fills in its
arguments (docs/TOOLS.md: forced to call take_message it wrote its own text as
the callback number). So, with the embedded model, the two built-in actions
are taken by rules, as facts are answered as written:

- take_message: after the agent offered to take a message (its decline) or the
  caller asked to leave one, the caller's next words are the message. Their
  name and number are read from those words, and the message is what they
  said, with the question that led to the offer. A bare "yes" is asked for the
  details first; a "no" goes on as a normal turn, and so do words that do not
  take the offer up: no yes, name, number or words to pass on ("Can you
  recommend a good book?" is the caller moving on, not their message).
- end_call: a caller who says goodbye is answered with a goodbye and the call ends.
- transfer_call: a caller who asks for a person ("Can I talk to a real person?",
  "Put me through to the manager") is handed over; this comes before the rules
  above, so asking for a person after an offer of a message is not the message.
  With transfer_call off and take_message on, such a caller is offered a message.
- press_keys (phone calls only): the other side is an automated menu ("For
  sales, press 1. For repairs, press 2."): the option whose words share the most
  terms with the persona's instructions (what the call is for) is pressed; with
  none in common, the one for an operator or a person, if the menu has one.

With a persona's own (larger) LLM endpoint the model chooses, and these rules
stay out of its way. The rules are `plan()`: a caller's turn, the agent's words
before it, and the actions on -> a call to make, a line to say, or nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .knowledge import terms
from .llm import Message
from .prompt import MESSAGE_DECLINE
from .tools import ToolCall, new_call_id

TAKE_MESSAGE = "take_message"
END_CALL = "end_call"
TRANSFER_CALL = "transfer_call"
PRESS_KEYS = "press_keys"
# the actions these rules take
RULED = frozenset({TAKE_MESSAGE, END_CALL, TRANSFER_CALL, PRESS_KEYS})
ASK_FOR_MESSAGE = (
    "Of course. Please tell me your name, a number to call you back on, and your message."
)
# Asked for a person with no one to hand over to (transfer_call off), a message.
NO_PERSON = (
    "I can't put you through to a person right now, but I can take a message "
    "and someone will call you back."
)
# What the agent says that offers a message: the caller's next words answer it.
OFFERS = (MESSAGE_DECLINE, ASK_FOR_MESSAGE, NO_PERSON)

_ASKS_TO_LEAVE = re.compile(
    r"\b(leave|take|pass on|give (?:them|him|her)|send)\b[\w\s']{0,20}\bmessage\b"
    r"|\b(call|ring|phone) me back\b|\bget back to me\b|\bcallback\b|\bcall back\b"
    r"|\b(have|get|ask) (someone|somebody|them|him|her|the \w+) to (call|ring|phone)\b",
    re.I,
)
_NO = re.compile(
    r"^\W*(no|nope|nah|not now|never ?mind|don't bother|that's (ok|okay|fine|alright))\b", re.I
)
_JUST_YES = re.compile(
    r"^\W*((yes|yeah|yep|yup|sure|ok|okay|please|do|alright|great|that would be (great|nice|good)"
    r"|go ahead|i would|i'd like that|thanks?|thank you)[\s,.!]*)+$",
    re.I,
)
_GOODBYE = re.compile(
    r"\b(good ?bye|bye|bye-bye|talk (to you )?later|have a (good|nice|great) (day|one|evening))\b"
    r"|\b(that's|that is) (all|everything)\b|\bnothing else\b",
    re.I,
)
_PEOPLE = (
    r"(person|human|human being|someone|somebody|manager|agent|operator|representative"
    r"|staff|member of staff|owner|receptionist|doctor|nurse)"
)
_WANTS_PERSON = re.compile(
    rf"\b(speak|talk|chat)\s+(to|with)\s+(a|an|the|some|your)?\s*(real\s+|actual\s+|live\s+)?"
    rf"{_PEOPLE}\b"
    rf"|\b(transfer|put|connect)\s+me\s+(through|over|to|with)\b"
    rf"|\b(real|actual|live)\s+(person|human)\b"
    rf"|\b(human|person|someone|somebody)\s+(i|we)\s+(can|could)\s+(talk|speak)\b",
    re.I,
)
_NOT_WANTED = re.compile(r"\b(don't|do not|no need to|never)\b", re.I)
_NAME = re.compile(
    r"\b(?i:my name is|my name's|name is|this is|i am|i'm|it's|it is)\s+"
    r"([A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)"
    r"|\b([A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?)\s+(?i:called|here|speaking)\b"
)
_NOT_NAMES = {
    *("Calling", "Sorry", "Just", "Here", "Fine", "Okay", "Ok", "About", "Not", "The", "Me"),
    *("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    *("Today", "Tomorrow", "Tonight"),
}
# A yes that takes the offer up ("Yes, it's about ...", "Sure please"), not a turn that
# only opens with the word ("Okay so my daughter ...").
_YES_START = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|alright|go ahead|great|that would be \w+|please)"
    r"(?=\s*(please\b|do\b|[,.!]|$))",
    re.I,
)
_ABOUT = re.compile(
    r"\b(it's|it is|this is|i'm calling|i am calling|i was calling)\s+(about|regarding)\b"
    r"|\bmessage\b",
    re.I,
)
# Words that ask the agent to pass something on: a message in the form of a question.
_PASS_ON = re.compile(r"\b(tell|ask|let|remind|inform)\s+(?!me\b|you\b|us\b)\w+", re.I)
_NUMBER = re.compile(r"\+?\d[\d\s().-]{5,}\d")
# An automated menu's options, as Whisper writes them: "For sales, press 1",
# "For repairs. Press 2." (a pause read as a full stop), "To report a fault press
# two", "Press 3 for billing", "press the star key to ...".
_KEY_WORDS = {
    **dict(
        zip("zero one two three four five six seven eight nine".split(), "0123456789", strict=True)
    ),
    "oh": "0",
    "star": "*",
    "asterisk": "*",
    "pound": "#",
    "hash": "#",
}
_KEY = r"(?:the\s+)?(?P<key>[0-9*#]|" + "|".join(_KEY_WORDS) + r")(?:\s+key)?"
_OPTION_AFTER = re.compile(
    r"\b(?:for|to|if)\s+(?P<what>[^.;:!?]{1,80}?)[\s,.]*(?:please\s+)?(?:press|dial|select)\s+"
    + _KEY
    + r"\b",
    re.I,
)
_OPTION_BEFORE = re.compile(
    r"\b(?:press|dial|select)\s+" + _KEY + r"[\s,]+(?:for|to|if)\s+(?P<what>[^.;:!?,]{1,80})",
    re.I,
)
_OPERATOR = re.compile(
    r"\b(operator|receptionist|representative|agent|person|someone|somebody|staff|"
    r"all other|any other|anything else|other enquiries|other inquiries)\b",
    re.I,
)


@dataclass(frozen=True)
class Plan:
    """What the rules make of a turn: a call to make, or a line to say."""

    call: ToolCall | None = None
    say: str | None = None


def plan(text: str, history: list[Message], actions: frozenset[str], goal: str = "") -> Plan | None:
    """The caller said `text` after `history` (which may end with `text` itself);
    `goal`: what the call is for (the persona's instructions). None: the turn is
    the LLM's."""
    if PRESS_KEYS in actions:
        key = menu_choice(text, goal)
        if key is not None:
            return Plan(call=ToolCall(new_call_id(), PRESS_KEYS, json.dumps({"digits": key})))
    history = list(history)
    if history and history[-1]["role"] == "user" and history[-1]["content"] == text:
        history.pop()
    said = _last(history, "assistant")
    wants_person = bool(_WANTS_PERSON.search(text)) and not _NOT_WANTED.search(text)
    if TRANSFER_CALL in actions and wants_person:
        return Plan(call=ToolCall(new_call_id(), TRANSFER_CALL, json.dumps({"reason": text})))
    if TAKE_MESSAGE in actions:
        offered = said is not None and any(said.strip().startswith(o) for o in OFFERS)
        if said is not None and offered and takes_offer(text, said):
            if _JUST_YES.match(text):
                return Plan(say=ASK_FOR_MESSAGE)
            asked = _last(history, "user") if said and said.startswith(MESSAGE_DECLINE) else None
            return Plan(call=take_message_call(text, asked))
        if wants_person and not offered:
            return Plan(say=NO_PERSON)
        if _ASKS_TO_LEAVE.search(text):
            if _NUMBER.search(text) and len(text.split()) >= 8:
                return Plan(call=take_message_call(text, None))
            return Plan(say=ASK_FOR_MESSAGE)
    if END_CALL in actions and _GOODBYE.search(text) and "?" not in text:
        return Plan(call=ToolCall(new_call_id(), END_CALL, "{}"))
    return None


def menu_options(text: str) -> list[tuple[str, str]]:
    """The options an automated menu read out, in order: (key, what it is for).
    A menu says them one way ("For sales, press 1") or the other ("Press 1 for
    sales"); read both ways, the way that finds more options is the menu's."""
    readings: list[list[tuple[str, str]]] = []
    for pattern in (_OPTION_AFTER, _OPTION_BEFORE):
        options: dict[str, str] = {}
        for match in pattern.finditer(text):
            raw = match.group("key").lower()
            options.setdefault(_KEY_WORDS.get(raw, raw), match.group("what").strip())
        readings.append(list(options.items()))
    return max(readings, key=len)


def menu_choice(text: str, goal: str) -> str | None:
    """The key to press for `goal` in the menu `text` reads out: the option that
    shares most terms with the goal, else one for a person; None when `text` is
    not a menu or no option fits."""
    options = menu_options(text)
    if not options:
        return None
    wanted = set(terms(goal))
    best: tuple[int, str] | None = None
    for key, what in options:
        shared = len(wanted & set(terms(what)))
        if shared and (best is None or shared > best[0]):
            best = (shared, key)
    if best is not None:
        return best[1]
    for key, what in options:
        if _OPERATOR.search(what):
            return key
    return None


def takes_offer(text: str, said: str) -> bool:
    """The caller's `text` answers the agent's offer of a message (`said`): after
    the agent asked for their details, anything but a no; after a bare offer, a
    yes, a name or a number, or words to pass on. Anything else ("Can you
    recommend a good book?", "I'd like to change my e-mail address.") is the
    caller moving on, and the LLM's turn."""
    if _NO.search(text):
        return False
    if said.strip().startswith(ASK_FOR_MESSAGE):
        return True
    return bool(
        _YES_START.match(text)
        or _PASS_ON.search(text)
        or _ASKS_TO_LEAVE.search(text)
        or _ABOUT.search(text)
        or phone_number(text)
        or caller_name(text)
    )


def take_message_call(text: str, question: str | None) -> ToolCall:
    """A take_message call with what the caller said: their name and number as
    they gave them, and their own words as the message."""
    message = text.strip()
    if question and question.strip() not in message:
        message = f"{question.strip()} {message}"
    arguments = {
        "name": caller_name(text),
        "callback_number": phone_number(text),
        "message": message,
    }
    return ToolCall(new_call_id(), TAKE_MESSAGE, json.dumps(arguments))


def caller_name(text: str) -> str:
    for match in _NAME.finditer(text):
        name = match.group(1) or match.group(2) or ""
        words = [w for w in name.split() if w not in _NOT_NAMES]
        if words:
            return " ".join(words)
    return ""


def phone_number(text: str) -> str:
    for match in _NUMBER.finditer(text):
        number = match.group(0).strip(" .-")
        if sum(c.isdigit() for c in number) >= 7:
            return number
    return ""


def _last(history: list[Message], role: str) -> str | None:
    for message in reversed(history):
        if message["role"] == role and not message.get("tool_call_id"):
            return message["content"]
    return None
