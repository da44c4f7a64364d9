"""Persona knowledge: facts a business gives its agent, and the retriever that picks them.

A `Fact` is one entry a business wrote: an optional question (how a caller might
ask) and the answer. `KnowledgeBase.retrieve(utterance)` returns the entries
relevant to what the caller just said, in a fraction of a millisecond, with no
model round trip: the prompt builder places them next to the question.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fact:
    answer: str
    question: str = ""
