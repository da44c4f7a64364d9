"""A document's sections, cut into passages the agent can retrieve and speak.

A passage is one sentence, or a few that belong together: the sentences of a
paragraph while they fit in about 160 characters, a sentence that leans on the
one before ("It costs £5.", "When they are full, ...") and a very short one.
Short fragments without a closing stop (the items of a list under "Payment
methods", the rows of a price list) are gathered and prefixed with their
heading, so "Payment methods: Visa, Mastercard, cash." can be spoken as it
stands. Each passage keeps its section's heading, which the retriever reads as
the question it answers; a question that opens a block ("Do you take walk-ins?
Yes, ...") becomes the passage's question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .extract import Section

MAX_PASSAGE_CHARS = 400  # a passage is spoken whole when it answers
_HARD_CAP = 1000  # a single sentence longer than this is cut
_SHORT = 30  # a sentence shorter than this joins its neighbour ("Yes.", "No cheques.")
# Sentences of one paragraph are joined while the passage stays this short (about
# two short sentences), so that an answer and what qualifies it stay together
# ("There is no car park of our own. The town car park ... is free."). Chosen on
# bench/document_cases.py's development set (bench/documents.py).
_TOGETHER = 160
_FRAGMENT = 80
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“(£$€A-Z0-9])")
_LEANS_BACK = re.compile(
    r"^(it|its|it's|this|that|these|those|they|them|their|both|also|however|but|"
    r"otherwise|then|so|and|or|if not|even|"
    # "When they are full, ...": a clause whose subject is the sentence before's
    r"(when|if|once|until|unless|while|after|before|because|although|though)\s+"
    r"(it|it's|its|they|they're|this|these|those|that|there)\b)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Passage:
    heading: str  # what the passage answers: its section's heading or its own question
    text: str


def sentences(block: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(block) if s.strip()]


def _is_fragment(block: str) -> bool:
    return len(block) < _FRAGMENT and not re.search(r"[.!?]$", block)


def _cut(text: str) -> str:
    if len(text) <= _HARD_CAP:
        return text
    return text[: _HARD_CAP - 1].rsplit(" ", 1)[0] + "…"


def _from_block(heading: str, block: str) -> list[Passage]:
    parts = sentences(block)
    question = heading
    if len(parts) > 1 and parts[0].endswith("?"):
        question, parts = parts[0], parts[1:]  # "Do you deliver? Yes, within 5 miles."
    out: list[str] = []
    for sentence in parts:
        if (
            out
            and (
                len(out[-1]) < _SHORT
                or len(sentence) < _SHORT // 2
                or _LEANS_BACK.match(sentence)
                or len(out[-1]) + 1 + len(sentence) <= _TOGETHER
            )
            and len(out[-1]) + 1 + len(sentence) <= MAX_PASSAGE_CHARS
        ):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return [Passage(question, _cut(text)) for text in out]


def _from_fragments(heading: str, fragments: list[str]) -> list[Passage]:
    """List items under one heading, in passages of about `_TOGETHER` characters."""
    passages: list[Passage] = []
    group: list[str] = []

    def flush() -> None:
        if group:
            items = ("; " if any(":" in g for g in group) else ", ").join(group)
            text = f"{heading}: {items}." if heading else f"{items}."
            passages.append(Passage(heading, _cut(text)))
            group.clear()

    for fragment in fragments:
        if group and len(", ".join([*group, fragment])) + len(heading) > _TOGETHER:
            flush()
        group.append(fragment.rstrip(",;"))
    flush()
    return passages


def passages_of(sections: list[Section]) -> list[Passage]:
    """The passages of a document's sections, in reading order."""
    out: list[Passage] = []
    for section in sections:
        fragments: list[str] = []
        for block in section.blocks:
            if _is_fragment(block):
                fragments.append(block)
                continue
            out.extend(_from_fragments(section.heading, fragments))
            fragments = []
            out.extend(_from_block(section.heading, block))
        out.extend(_from_fragments(section.heading, fragments))
    return out
