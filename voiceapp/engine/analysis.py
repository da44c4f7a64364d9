"""After a call: a short summary, the business's own fields, and whether the call
met the business's criterion of success.

Two analysts, one shape (`Analysis`):

- `RulesAnalyst`, for the embedded default (SmolLM2-135M cannot read a whole call
  and answer in JSON). Fields are read from the caller's words as tool arguments
  are (arguments.py): a phone number, a name the caller gave, a date, an e-mail, a
  number, one of an enum's values; the latest one said wins, since callers correct
  themselves. A free-text field ("reason") is the caller's first request, in their
  words. The summary is extractive: who called and what they asked, what the
  agent said last, and the fields found. Success is decided by meaning: the
  criterion's cosine with what the agent said (a confirmation reads like the
  criterion) must reach `success_min`.
- `LLMAnalyst`, for an organization's own LLM endpoint: the transcript, the
  fields' schema and the criterion go to the model, which answers in JSON; an
  answer that is not JSON, or lacks the summary, falls back to the rules.

Accuracy of each on a set of written calls: docs/QUALITY.md ("Post-call analysis").
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .arguments import Kind, introduced, kind_of, values_of
from .knowledge import Encoder
from .llm import LLM, LLMOptions, Message

MAX_TRANSCRIPT_CHARS = 12_000  # what an LLM is given of a long call: its start and end


@dataclass(frozen=True, slots=True)
class Line:
    role: str  # "user", "assistant" or "tool"
    text: str


@dataclass(frozen=True, slots=True)
class Analysis:
    summary: str
    fields: dict[str, Any] = field(default_factory=dict)
    success: bool | None = None  # None: no criterion was given
    success_reason: str = ""
    method: str = "rules"  # "rules", or "llm" (the org's own endpoint)


def properties_of(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {str(k): (v if isinstance(v, dict) else {}) for k, v in properties.items()}


_DIGIT_WORDS = {
    "oh": "0", "zero": "0", "o": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}  # fmt: skip
_SPOKEN_DIGITS = re.compile(
    r"\b(?:(?:double|triple)\s+)?(?:oh|zero|one|two|three|four|five|six|seven|eight|nine)"
    r"(?:[\s,-]+(?:(?:double|triple)\s+)?(?:oh|zero|one|two|three|four|five|six|seven|eight|"
    r"nine|\d))+\b",
    re.I,
)


def _digits_spoken(text: str) -> str:
    """ "oh seven seven double oh" -> "07700": phone numbers said as words."""

    def digits(match: re.Match[str]) -> str:
        out: list[str] = []
        repeat = 1
        for word in re.split(r"[\s,-]+", match.group(0).lower()):
            if word in ("double", "triple"):
                repeat = 2 if word == "double" else 3
                continue
            out.append((_DIGIT_WORDS.get(word) or word) * repeat)
            repeat = 1
        joined = "".join(out)
        return joined if len(joined) >= 6 else match.group(0)

    return _SPOKEN_DIGITS.sub(digits, text)


def _sentence(text: str, max_words: int) -> str:
    words = text.split()
    cut = " ".join(words[:max_words])
    return cut + ("…" if len(words) > max_words else "")


_FILLER = re.compile(r"^(hi|hello|hey|yes|yeah|no|ok|okay|thanks|thank you|bye|goodbye)\b", re.I)


class RulesAnalyst:
    """The analysis the embedded default writes, from the caller's words."""

    def __init__(self, encoder: Encoder | None, *, success_min: float = 0.40) -> None:
        # success_min: chosen on bench/analysis_cases.py's development calls
        self.encoder = encoder
        self.success_min = success_min

    def analyze(self, lines: Sequence[Line], schema: dict[str, Any], criterion: str) -> Analysis:
        fields = self._fields(lines, schema)
        success, reason = self._success(lines, criterion)
        return Analysis(
            summary=self._summary(lines, fields),
            fields=fields,
            success=success,
            success_reason=reason,
        )

    def _fields(self, lines: Sequence[Line], schema: dict[str, Any]) -> dict[str, Any]:
        """Each field's value: the last one said (callers correct themselves), in
        the caller's words; a date also in the agent's, which confirms the one
        agreed ("booked for Tuesday at 10")."""
        caller = [_digits_spoken(line.text) for line in lines if line.role == "user"]
        spoken = [_digits_spoken(line.text) for line in lines if line.role in ("user", "assistant")]
        out: dict[str, Any] = {}
        for name, prop in properties_of(schema).items():
            kind = kind_of(name, prop)
            if kind is Kind.TEXT:
                out[name] = _first_request(caller)
            elif kind is Kind.NAME:
                out[name] = _name(lines)
            elif kind is Kind.BOOLEAN:
                out[name] = None  # yes or no cannot be read from words alone
            else:
                texts = spoken if kind is Kind.DATE else caller
                out[name] = _last_value(kind, prop, texts)
        return out

    def _success(self, lines: Sequence[Line], criterion: str) -> tuple[bool | None, str]:
        if not criterion.strip():
            return None, ""
        said = [line.text for line in lines if line.role in ("assistant", "tool") and line.text]
        if self.encoder is None or not said:
            return False, "Nothing the agent said or did matches the criterion."
        vectors = self.encoder.encode([criterion, *said])
        cosines = vectors[1:] @ vectors[0]
        best = int(np.argmax(cosines))
        if float(cosines[best]) >= self.success_min:
            return True, f"The agent said: “{_sentence(said[best], 30)}”"
        return False, "Nothing the agent said or did matches the criterion."

    def _summary(self, lines: Sequence[Line], fields: dict[str, Any]) -> str:
        request = _first_request([line.text for line in lines if line.role == "user"])
        if not request:
            return "The caller said nothing the agent could answer."
        replies = [
            line.text
            for line in lines
            if line.role == "assistant"
            and line.text
            and not (_FILLER.match(line.text) and len(line.text.split()) <= 4)
        ]
        parts = [f"The caller said: “{_sentence(request, 25)}”"]
        if replies:
            parts.append(f"The agent's last answer: “{_sentence(replies[-1], 25)}”")
        noted = [
            f"{name.replace('_', ' ')} {value}"
            for name, value in fields.items()
            if value is not None and not isinstance(value, bool) and value != request
        ]
        if noted:
            parts.append("Noted: " + "; ".join(noted) + ".")
        return " ".join(p if p.endswith((".", "”")) else p + "." for p in parts)


_PHONE_LIKE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_ASKS_NAME = re.compile(r"\bname\b", re.I)
_BARE_NAME = re.compile(r"^[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,2}[.!]?$")


def _last_value(kind: Kind, schema: dict[str, Any], texts: Sequence[str]) -> Any:
    """The value of `kind` in the latest sentence that holds one: the last said
    there ("906. No wait, 909."), or for a date the first ("next Tuesday, drop-off
    by 8:30": the day agreed, then a detail)."""
    for text in reversed(texts):
        for sentence in reversed(re.split(r"(?<=[.!?])\s+", text)):
            if kind is not Kind.PHONE:
                sentence = _PHONE_LIKE.sub(" ", sentence)  # a phone number is not a date
            found = values_of(kind, schema, sentence)
            if found:
                return found[0] if kind is Kind.DATE else found[-1]
    return None


def _name(lines: Sequence[Line]) -> str | None:
    """The name the caller gave: introduced ("my name is", "under ...", "it's ..."),
    or said on its own when the agent asked for it."""
    found: str | None = None
    asked = False
    for line in lines:
        if line.role == "assistant":
            asked = bool(_ASKS_NAME.search(line.text))
            continue
        if line.role != "user":
            continue
        given = introduced(line.text)
        if given:
            found = given[-1]
        elif asked and _BARE_NAME.match(line.text.strip()):
            found = line.text.strip().rstrip(".!")
    return found


def _first_request(caller: Sequence[str]) -> str | None:
    """The caller's first turn with something in it beyond a greeting."""
    for text in caller:
        words = re.findall(r"[a-z']+", text.lower())
        if len([w for w in words if len(w) > 3]) >= 2:
            return text.strip()
    return None


_PROMPT = """You read the transcript of a phone call to a business and write its record.
Answer with one JSON object and nothing else, with these keys:
"summary": two or three sentences: who called, what they wanted, how it ended;
"fields": an object with exactly these keys, each the value the call gives, or null
when the call does not say it: {fields};
"success": true or false: did the call meet this criterion? {criterion}
"reason": one sentence saying why."""


class LLMAnalyst:
    """The analysis an organization's own LLM writes; the rules when its answer fails."""

    def __init__(self, llm: LLM, options: LLMOptions, fallback: RulesAnalyst) -> None:
        self.llm = llm
        self.options = options
        self.fallback = fallback

    def messages(
        self, lines: Sequence[Line], schema: dict[str, Any], criterion: str
    ) -> list[Message]:
        properties = properties_of(schema)
        described = json.dumps(
            {k: v.get("description") or v.get("type", "string") for k, v in properties.items()}
        )
        transcript = "\n".join(
            f"{'Caller' if line.role == 'user' else 'Agent'}: {line.text}"
            for line in lines
            if line.text and line.role in ("user", "assistant")
        )
        if len(transcript) > MAX_TRANSCRIPT_CHARS:
            half = MAX_TRANSCRIPT_CHARS // 2
            transcript = f"{transcript[:half]}\n[...]\n{transcript[-half:]}"
        system = _PROMPT.format(
            fields=described, criterion=criterion.strip() or "(none: answer null)"
        )
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": transcript},
        ]

    def analyze(self, lines: Sequence[Line], schema: dict[str, Any], criterion: str) -> Analysis:
        pieces = self.llm.stream(
            self.messages(lines, schema, criterion), self.options, threading.Event()
        )
        text = "".join(p for p in pieces if isinstance(p, str))  # no tools offered
        parsed = _json_object(text)
        if parsed is None or not isinstance(parsed.get("summary"), str):
            return self.fallback.analyze(lines, schema, criterion)
        given = parsed.get("fields")
        given = given if isinstance(given, dict) else {}
        fields = {name: _json_value(given.get(name)) for name in properties_of(schema)}
        success = parsed.get("success")
        return Analysis(
            summary=parsed["summary"].strip()[:1000],
            fields=fields,
            success=success if isinstance(success, bool) and criterion.strip() else None,
            success_reason=str(parsed.get("reason") or "")[:500],
            method="llm",
        )


def _json_object(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)[:500] if not isinstance(value, dict | list) else json.dumps(value)[:500]
