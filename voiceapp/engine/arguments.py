"""What a caller said that could be a tool's argument: candidate values per argument.

The small embedded model writes a call's JSON under a grammar (tools.py), which
makes it well formed but not right: left free, SmolLM2 wrote prompt text as an
order number. So each argument may only take a value the caller actually said,
of the kind the argument needs, read from their recent words:

- an `enum` argument: the allowed values the caller named ("nuts" for "nut");
- an integer or number: the numbers said, in digits or words ("for four");
- a string, by what its name and description say it holds:
  an identifier (order, account or reference number): the tokens with digits;
  a phone number; an email address; a person's name (capitalised words, as
  Whisper writes names, or the words after "my name is", "under", ...);
  a date or time ("next Tuesday", "the 12th of May", "Saturday at 8");
  a street address ("14 Oak Street");
- any other string (a product, a dish, a reason): the phrases of the caller's
  words, without the function words at their edges.

`candidates(tool, texts)` gives each argument its values, best first. An
argument of a known kind for which the caller said nothing of that kind has
none: the router (router.py) then does not call the tool, since a call needs
what its schema requires. The grammar lets the model pick among the values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from .tools import ToolSpec


class Kind(Enum):
    ENUM = "enum"
    NUMBER = "number"
    IDENTIFIER = "identifier"
    PHONE = "phone"
    EMAIL = "email"
    NAME = "name"
    DATE = "date"
    ADDRESS = "address"
    BOOLEAN = "boolean"
    TEXT = "text"  # free words: any phrase the caller said

    @property
    def typed(self) -> bool:
        """A kind whose values can be told apart from other words (evidence for a call)."""
        return self not in (Kind.TEXT, Kind.BOOLEAN)


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a tool, with the values the caller's words hold for it."""

    name: str
    kind: Kind
    required: bool
    values: tuple[Any, ...]  # best first; JSON values (str, int, float, bool)
    # The values the caller clearly gave: for a name, one they introduced ("my name
    # is", "under ..."), not any capitalised word (a book's title is capitalised too).
    given: tuple[Any, ...] = ()

    @property
    def evident(self) -> bool:
        return bool(self.given)


_WORDS = re.compile(r"[A-Za-z0-9][\w'\u2019-]*")

_IDENTIFIER_HINT = re.compile(
    r"\b(number|no|id|code|reference|ref|account|order|ticket|booking|invoice|tracking|"
    r"confirmation|membership|policy|serial)\b"
)
_PHONE_HINT = re.compile(r"\b(phone|telephone|mobile|cell|callback)\b")
_EMAIL_HINT = re.compile(r"\b(e-?mail)\b")
_NAME_HINT = re.compile(
    r"\b(name|names|who|person|patient|customer|caller|guest|client|contact|surname)\b"
)
_DATE_HINT = re.compile(r"\b(date|day|days|when|time|times|weekday|slot|start|arrival|until)\b")
_ADDRESS_HINT = re.compile(r"\b(address|street|location|postcode|where)\b")


def kind_of(name: str, schema: dict[str, Any]) -> Kind:
    """What an argument holds, from its schema's type and enum, then its name and
    description (`order_number`, "The caller's full name", ...)."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return Kind.ENUM
    kind = schema.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if kinds & {"integer", "number"}:
        return Kind.NUMBER
    if "boolean" in kinds:
        return Kind.BOOLEAN
    words = f"{name.replace('_', ' ')} {schema.get('description') or ''}".lower()
    fmt = schema.get("format")
    if fmt == "email" or _EMAIL_HINT.search(words):
        return Kind.EMAIL
    if fmt in ("date", "date-time", "time"):
        return Kind.DATE
    if _PHONE_HINT.search(words):
        return Kind.PHONE
    # a name first: "the name the booking is under" is a name, not a booking number
    if _NAME_HINT.search(name.replace("_", " ").lower()) or re.search(r"\bname\b", words):
        return Kind.NAME
    if _IDENTIFIER_HINT.search(words):
        return Kind.IDENTIFIER
    if _DATE_HINT.search(words):
        return Kind.DATE
    if _ADDRESS_HINT.search(words):
        return Kind.ADDRESS
    return Kind.TEXT


def candidates(tool: ToolSpec, texts: Sequence[str]) -> tuple[Argument, ...]:
    """Each argument of `tool` with the values `texts` (the caller's recent turns,
    the latest last) hold for it: values from later turns come first."""
    schema = tool.schema()
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ()
    required = set(schema.get("required") or ())
    card = f"{tool.name.replace('_', ' ')} {tool.description}"
    own = frozenset(  # the tool's own words, and their singulars
        form
        for w in _WORDS.findall(card.lower())
        for form in (w, w.removesuffix("'s"), w.removesuffix("s"))
    )
    out = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        kind = kind_of(name, prop)
        values: list[Any] = []
        for text in reversed(texts):
            for value in values_of(kind, prop, text):
                if kind is Kind.TEXT:
                    value = _trimmed(value, own)
                if value and value not in values:
                    values.append(value)
        if kind is Kind.TEXT:  # trimmed phrases: the longest first again
            values.sort(key=lambda v: -len(str(v).split()))
        if kind is Kind.NAME:
            given = tuple(v for t in reversed(texts) for v in introduced(t))
        else:
            given = tuple(values) if kind.typed else ()
        out.append(Argument(name, kind, name in required, tuple(values), given))
    return tuple(_apart(out))


def _overlap(taken: str, phrase: str) -> bool:
    """The phrase holds the taken value, or is part of it ("Dana" of "Dana Webb")."""
    phrase = phrase.lower()
    return taken in phrase or phrase in taken


def _trimmed(phrase: str, own: frozenset[str]) -> str:
    """A phrase without the tool's own words at its edges ("in stock" is not part of
    the product asked about), or "" when nothing else is left."""
    words = phrase.split()
    while words and (words[0].lower() in own or words[0].lower() in _EDGE_WORDS):
        words.pop(0)
    while words and (words[-1].lower() in own or words[-1].lower() in _EDGE_WORDS):
        words.pop()
    return " ".join(words)


def _apart(arguments: list[Argument]) -> list[Argument]:
    """Free-word arguments without the phrases that hold another argument's value:
    a dish is not its allergen, a book's title not the customer's name."""
    taken = [str(v).lower() for a in arguments for v in a.given]
    out = []
    for a in arguments:
        if a.kind is Kind.TEXT and taken:
            kept = tuple(v for v in a.values if not any(_overlap(t, str(v)) for t in taken))
            if kept:
                a = replace(a, values=kept)
        out.append(a)
    return out


def values_of(kind: Kind, schema: dict[str, Any], text: str) -> list[Any]:
    """The values of `kind` in one utterance, in the order they were said."""
    if kind is Kind.ENUM:
        return _enum_values(schema["enum"], text)
    if kind is Kind.NUMBER:
        integer = schema.get("type") == "integer" or "integer" in (schema.get("type") or [])
        return _numbers(text, integer=integer)
    if kind is Kind.BOOLEAN:
        return [True, False]
    if kind is Kind.IDENTIFIER:
        return _unique(m.group(0).strip("-") for m in _IDENTIFIER.finditer(text))
    if kind is Kind.PHONE:
        return _unique(m.group(0).strip(" .-") for m in _PHONE.finditer(text))
    if kind is Kind.EMAIL:
        return _unique(m.group(0) for m in _EMAIL.finditer(text))
    if kind is Kind.NAME:
        return names(text)
    if kind is Kind.DATE:
        return dates(text)
    if kind is Kind.ADDRESS:
        return _unique(m.group(0) for m in _ADDRESS.finditer(text))
    return phrases(text)


# -- values of each kind ------------------------------------------------------------

_IDENTIFIER = re.compile(r"\b(?=[A-Za-z-]*\d)[A-Za-z0-9][A-Za-z0-9-]{1,23}\b")
_PHONE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ADDRESS = re.compile(
    r"\b\d{1,5}[a-z]?\s+(?:[A-Z][\w'-]*\s+){0,3}"
    r"(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Way|Close|Court|Place|Square|"
    r"Boulevard|Blvd|Terrace|Crescent|Hill|View|Row|Walk|Park|Gardens|[A-Z][\w'-]*)\b"
)

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "a couple": 2,
    "a dozen": 12, "single": 1, "double": 2, "pair": 2,
}  # fmt: skip
_NUMBER = re.compile(
    r"(?<![\w:.])\d+(?:[.,]\d+)?(?![\w:])|\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I
)


_CLOCK_AROUND = re.compile(r"(?:\b(?:at|around|about|by|until|till)\s*$)", re.I)
_CLOCK_AFTER = re.compile(r"^\s*(?:am\b|pm\b|a\.m\.|p\.m\.|o'clock|:\d)", re.I)


def _numbers(text: str, *, integer: bool) -> list[Any]:
    """Numbers said, in digits or words; those that read as a time of day last."""
    found: list[tuple[bool, Any]] = []
    for match in _NUMBER.finditer(text):
        word = match.group(1)
        if word:
            value: Any = _NUMBER_WORDS[word.lower()]
        else:
            raw = match.group(0).replace(",", ".")
            if integer and "." in raw:
                continue
            value = int(raw) if "." not in raw else float(raw)
        clock = bool(
            _CLOCK_AROUND.search(text[: match.start()]) or _CLOCK_AFTER.match(text[match.end() :])
        )
        if all(value != v for _, v in found):
            found.append((clock, value))
    return [v for clock, v in found if not clock] + [v for clock, v in found if clock]


def _enum_values(allowed: list[Any], text: str) -> list[Any]:
    """Allowed values the caller named, as a word or its plural ("nut" for "nuts")."""
    words = {w.lower() for w in _WORDS.findall(text)}
    lowered = text.lower()
    out = []
    for value in allowed:
        label = str(value).lower()
        stem = label[:-1] if label.endswith("s") and len(label) > 3 else label
        if (
            label in words
            or stem in words
            or f"{stem}s" in words
            or (" " in label and label in lowered)
        ):
            out.append(value)
    return out


_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_MONTHS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
)
_ORDINAL = r"(?:\d{1,2}(?:st|nd|rd|th)|first|second|third|fourth|fifth|tenth|twentieth)"
_CLOCK = r"(?:\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)|\d{1,2}:\d{2}|noon|midnight)"
_DATE_PART = (
    rf"(?:(?:next|this|coming)\s+(?:week|{_WEEKDAYS})|{_WEEKDAYS}|today|tomorrow|tonight"
    rf"|the day after tomorrow|(?:this|tomorrow|in the)\s+(?:morning|afternoon|evening)"
    rf"|(?:the\s+)?{_ORDINAL}(?:\s+of\s+{_MONTHS})?|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?"
    rf"|{_CLOCK}|(?:at|around|about|by)\s+\d{{1,2}}(?::\d{{2}})?(?!\d)"
    rf"|morning|afternoon|evening|\d{{4}}-\d{{2}}-\d{{2}})"
)
_DATE = re.compile(
    rf"\b{_DATE_PART}(?:(?:\s+(?:at|around|about|by|in the|from|on)\s+|\s*,?\s*){_DATE_PART})*",
    re.I,
)


def dates(text: str) -> list[str]:
    """Dates and times as said: "next Tuesday", "the 12th of May", "Saturday at 8"."""
    out = []
    for match in _DATE.finditer(text):
        value = match.group(0).strip(" ,")
        value = re.sub(r"^(?:at|around|about|by)\s+", "", value, flags=re.I)
        if value and value not in out:
            out.append(value)
    return out


_NOT_NAMES = frozenset(
    """
    i i'm i'd i'll hi hello hey yes no okay ok please thanks thank sorry so well and but
    the a an my our your this that it it's is can could would will do does did have has
    what when where why how who which is are was were hello good morning afternoon evening
    monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight
    january february march april may june july august september october november december
    mr mrs ms dr just also then there here okay yeah yep sure great perfect cheers
    """.split()
)
_INTRO = re.compile(
    r"\b(?i:my name is|my name's|name is|name's|the name|name of|this is|i am|i'm|it's|"
    r"it is|under|for|called)\s+([A-Z][\w'\u2019-]+(?:\s+[A-Z][\w'\u2019-]+)?)"
    r"|\b([A-Z][\w'\u2019-]+(?:\s+[A-Z][\w'\u2019-]+)?)\s+(?i:here|speaking)\b"
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z'\u2019-]+(?:\s+[A-Z][a-z'\u2019-]+)*")


def introduced(text: str) -> list[str]:
    """The names a caller introduced: "my name is Anna", "under Lopez", "Sam here"."""
    return names(text, introduced_only=True)


def names(text: str, *, introduced_only: bool = False) -> list[str]:
    """People's names: what follows "my name is", "this is", "under", ... when it is
    capitalised, then other capitalised words that do not open a sentence."""
    out: list[str] = []

    def add(value: str) -> None:
        words = value.split()
        while words and words[0].lower().strip("\u2019'") in _NOT_NAMES:
            words.pop(0)
        while words and words[-1].lower().strip("\u2019'") in _NOT_NAMES:
            words.pop()
        if not words or not all(w[0].isupper() for w in words):
            return
        value = " ".join(words)
        if value not in out:
            out.append(value)

    for match in _INTRO.finditer(text):
        value = match.group(1) or match.group(2) or ""
        if value[:1].isupper():
            add(value)
    if introduced_only:
        return out
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip()
        if not before or before[-1] in ".?!":
            continue  # a sentence's first word is capitalised anyway
        add(match.group(0))
    return out


_EDGE_WORDS = frozenset(
    """
    a an the and or but if so of to in on at by for with from into about as is are was were
    be been am do does did have has had i me my we us our you your he him his she her it its
    they them their this that these those there here what which who how can could would
    should will shall may might must not no yes any some please thanks hi hello hey um uh
    okay ok well like just also too very really got get one need want looking
    i'm i'd i'll i've it's that's there's what's don't can't won't isn't aren't you're
    we're they're let's
    """.split()
)
MAX_PHRASE_WORDS = 6


def phrases(text: str) -> list[str]:
    """The caller's phrases of one to `MAX_PHRASE_WORDS` words within a sentence, not
    beginning or ending with a function word, longest first."""
    out: list[str] = []
    for sentence in re.split(r"[.?!,;]+", text):
        words = _WORDS.findall(sentence)
        for size in range(min(MAX_PHRASE_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                span = words[start : start + size]
                if span[0].lower() in _EDGE_WORDS or span[-1].lower() in _EDGE_WORDS:
                    continue
                value = " ".join(span)
                if value not in out:
                    out.append(value)
    return out


def _unique(values: Any) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if value and value not in out:
            out.append(value)
    return out


def narrowed(tool: ToolSpec, arguments: Sequence[Argument]) -> ToolSpec:
    """`tool` with each argument limited to the caller's values (an `enum` the
    call grammar keeps to); an optional argument the caller gave nothing for is
    left out, and a required one without values stays as the schema has it."""
    schema = tool.schema()
    properties = dict(schema.get("properties") or {})
    for argument in arguments:
        prop = dict(properties.get(argument.name) or {})
        if argument.values:
            prop["enum"] = list(argument.values)
            properties[argument.name] = prop
        elif not argument.required:
            properties.pop(argument.name, None)
    required = [r for r in schema.get("required") or () if r in properties]
    new = {**schema, "properties": properties, "required": required}
    return ToolSpec(tool.name, tool.description, json.dumps(new))
