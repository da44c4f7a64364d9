"""Persona knowledge: facts a business gives its agent, and the retriever that picks them.

A `Fact` is one entry a business wrote: an optional question (how a caller might
ask) and the answer. `KnowledgeBase.retrieve(utterance)` returns the entries
relevant to what the caller just said, in well under a millisecond for a few
hundred facts, with no model round trip: the prompt builder places them next to
the question.

Scoring is lexical, built for short spoken questions:
- words are lower-cased, lightly stemmed ("opening", "opens" -> "open") and
  stripped of function words and call fillers ("um", "could you tell me");
- a few *topics* bridge the words callers use and the shape of the answer:
  "when", "what time", "hours" match an answer that holds a time of day; "how
  much", "cost" match a price; "where" an address; "phone", "call" a number;
- a fact's score is the share of the question's information (IDF-weighted
  terms) that it covers. A word that no fact contains weighs as much as the
  rarest word, so "Do you sell gluten-free bread?" is not answered by the
  bread price: most of what was asked is not in the facts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass(frozen=True, slots=True)
class Fact:
    answer: str
    question: str = ""
    # Its sentence embedding when it was computed ahead (a document's passages are
    # embedded when the document is processed); None: encoded on the first question.
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)
    # A passage of a document (knowledge/passages.py) rather than a fact the business
    # wrote as one: longer, and in the document's words, so it is scored by meaning
    # and words together (`RetrievalSettings.passage_*`).
    passage: bool = False


@dataclass(frozen=True, slots=True)
class Match:
    fact: Fact
    score: float  # 0..1: the share of the question's weighted terms the fact covers


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    min_score: float = 0.5  # below this a fact does not answer the question
    max_facts: int = 2
    runner_up_ratio: float = 0.75  # a second fact must score this close to the best
    # With sentence embeddings: a fact whose cosine with the question reaches this
    # answers it by meaning alone, with a score from `min_score` (at this cosine) up.
    semantic_min: float = 0.6
    # A passage's score: this share of its words' score plus the rest of its cosine
    # with the question; from `passage_min` up it answers, scored from `min_score`.
    # Chosen on bench/document_cases.py's development set (bench/documents.py).
    passage_lexical_weight: float = 0.3
    passage_min: float = 0.38
    # ... or from `passage_margin_min` when it stands this far above every other
    # passage's (a question most passages are about equally far from answers none).
    passage_margin_min: float = 0.3
    passage_margin: float = 0.08
    # A sentence of the instructions is scored as a passage too, when its words cover
    # at least this share of the question's (bench/prose.py, bench/prose_dev2.py).
    fused_min_words: float = 0.2


TIE_BREAK = 0.01  # the cosine's share of a score: facts equal by their words, by meaning


class Encoder(Protocol):
    """Sentence embeddings (embedder.py): unit vectors, one a text."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


_STOPWORDS = frozenset(
    """
    a an the and or but if then so of to in on at by for with from into about as is are was
    were be been being am do does did done have has had having i me my mine we us our ours you
    your yours he him his she her it its they them their this that these those there here
    what which who whom whose how why can could would should will shall may might must
    not no yes just also too very really quite any some all each every please thanks thank
    hi hello hey um uh er ah oh okay ok well like know tell wonder wondering want wanted need
    looking let see say said get got go going come coming like actually maybe sure right
    guys one thing something anything someone anyone kind sort bit lot little much many
    question ask asking curious help think id ill im ive youre whats thats theres take
    during around usually normally exactly currently moment still
    """.split()
)

# Words that name a kind of answer. A question word maps to its topic, and a
# fact whose answer has that shape (a time, a price, ...) carries the topic.
_TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "@time": (
        "when", "time", "hour", "open", "close", "clos", "early", "late", "earliest",
        "latest", "until", "till", "morning", "evening", "tonight", "today", "tomorrow",
        "weekend", "schedule",
    ),
    "@price": (
        "price", "cost", "charge", "fee", "expensive", "cheap", "dollar", "euro",
        "pound", "much",
    ),
    "@place": ("where", "address", "locat", "street", "find", "direction", "near", "far"),
    "@phone": ("phone", "call", "number", "ring", "reach", "contact", "text"),
    "@email": ("email", "mail", "write"),
}  # fmt: skip
# Keys are stemmed, as `terms` gives them ("time" -> "tim", "where" -> "wher").
_WORD_TOPIC: dict[str, str] = {}

# The shape of an answer: what a fact's text holds.
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "@time",
        re.compile(
            r"\b\d{1,2}(:\d\d)?\s*(a\.?m\.?|p\.?m\.?)|\b\d{1,2}:\d\d\b|\bnoon\b|\bmidnight\b"
            r"|\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|\bdays?\b"
            r"|\bhours?\b|\bweeks?\b|\bminutes?\b|\b(january|february|march|april|may|june"
            r"|july|august|september|october|november|december)\b",
            re.I,
        ),
    ),
    ("@price", re.compile(r"[$€£]\s*\d|\b\d+(\.\d\d)?\s*(dollars?|euros?|pounds?|cents?)\b", re.I)),
    ("@phone", re.compile(r"\b\d{3}[-. ]\d{3,4}([-. ]\d{3,4})?\b|\bphone\b|\bcall us\b", re.I)),
    ("@email", re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")),
    (
        "@place",
        re.compile(
            r"\b\d+\s+\w+\s+(street|st|road|rd|avenue|ave|lane|ln|boulevard|blvd|square|way)\b"
            r"|\b(street|avenue|road|lane|square|located|address|downtown|corner|next to"
            r"|opposite|behind|walk away|minutes? walk)\b",
            re.I,
        ),
    ),
)

_SYNONYMS: dict[str, str] = {
    # caller's word -> the word a business tends to write
    "buy": "order", "purchase": "order", "book": "reserv", "booking": "reserv",
    "reservation": "reserv", "table": "reserv", "ship": "deliver", "bring": "deliver",
    "drop": "deliver", "pet": "dog", "pup": "dog", "puppy": "dog",
    "card": "pay", "cash": "pay", "credit": "pay", "debit": "pay", "accept": "pay",
    "delivery": "deliver", "deliveries": "deliver", "loaf": "bread", "loaves": "bread",
    "weekday": "week", "weekdays": "week", "weekends": "weekend",
    "wheelchair": "access", "ramp": "access",
    "vegan": "vegan", "glutenfree": "gluten", "wifi": "wifi", "internet": "wifi",
    "guarantee": "warranty", "guaranteed": "warranty", "cancel": "cancel",
    "refund": "refund", "return": "refund", "job": "hir",
    "work": "hir", "hiring": "hir", "kid": "child", "children": "child",
}  # fmt: skip


def _stem(word: str) -> str:
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiousl":
        w = w[:-1]  # "shopp" -> "shop", "bigg" -> "big"
    return w


_PHRASES = (
    ("gluten-free", "glutenfree"), ("gluten free", "glutenfree"), ("e-mail", "email"),
    ("email address", "email"), ("mail address", "email"), ("phone number", "phone"),
    ("telephone", "phone"),
)  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
# A day asked about is answered by a fact about its part of the week ("closed at weekends").
_DAY_GROUP = {**{d: "week" for d in _WEEKDAYS}, "saturday": "weekend", "sunday": "weekend"}


_WORD_TOPIC.update({_stem(w): topic for topic, words in _TOPIC_WORDS.items() for w in words})


def terms(text: str) -> list[str]:
    """Content terms of `text`: lower-cased, stemmed, function words removed."""
    text = text.lower()
    for phrase, replacement in _PHRASES:
        text = text.replace(phrase, replacement)
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text)
    out: list[str] = []
    for raw in words:
        w = raw.replace("'", "")
        if w in _STOPWORDS or (len(w) < 2 and not w.isdigit()):
            continue
        if w in _SYNONYMS:
            out.append(_SYNONYMS[w])
            continue
        out.append(_stem(w))
    return out


def _question_topics(text: str, words: Iterable[str]) -> set[str]:
    t = text.lower()
    topics = {_WORD_TOPIC[w] for w in words if w in _WORD_TOPIC}
    for wh, topic in (("when", "@time"), ("what time", "@time"), ("how long", "@time")):
        if re.search(rf"\b{wh}\b", t):
            topics.add(topic)
    if re.search(r"\bwhere\b", t):  # not "anywhere": "Is there anywhere to park?"
        topics.add("@place")
    if re.search(r"\bhow (much|expensive)\b", t):
        topics.add("@price")
    return topics


def _fact_topics(fact: Fact) -> set[str]:
    text = f"{fact.question} {fact.answer}"
    topics = {topic for topic, pattern in _SHAPES if pattern.search(text)}
    words = terms(text)
    for w in words:
        if w in _WORD_TOPIC:
            topics.add(_WORD_TOPIC[w])
    # Day names stand for "week" and "weekend", as callers say them.
    if any(day in words for day in _WEEKDAYS):
        topics.add("week")
    if "saturday" in words or "sunday" in words:
        topics.add("weekend")
    return topics


def fact_text(fact: Fact) -> str:
    """What a fact's embedding is computed from: its question and its answer."""
    return f"{fact.question} {fact.answer}".strip()


class KnowledgeBase:
    """An index of a persona's facts. Build once per call; `retrieve` per caller turn."""

    def __init__(
        self,
        facts: Sequence[Fact],
        settings: RetrievalSettings | None = None,
        *,
        background: str = "",
        encoder: Encoder | None = None,
    ) -> None:
        """`background`: text the whole call is about (the persona's instructions).

        Its words ("bakery", the business's name) say little about which fact
        a question needs, so they weigh less. `encoder`: sentence embeddings, so a
        fact that says what was asked in other words ("car park" for "parking",
        "any card" for "pay by card") is found too; None: words alone.
        """
        self.facts = tuple(facts)
        self.settings = settings or RetrievalSettings()
        self._encoder = encoder
        self._vectors: np.ndarray | None = None  # the facts', on the first question
        self._background = set(terms(background))
        self._terms: list[set[str]] = []
        df: dict[str, int] = {}
        for fact in self.facts:
            words = set(terms(f"{fact.question} {fact.answer}")) | _fact_topics(fact)
            self._terms.append(words)
            for w in words:
                df[w] = df.get(w, 0) + 1
        n = max(1, len(self.facts))
        # Smoothed IDF; an unknown word weighs as much as a word in a single fact.
        self._idf = {w: math.log(1.0 + n / c) for w, c in df.items()}
        self._unknown_idf = math.log(1.0 + n)

    def __len__(self) -> int:
        return len(self.facts)

    def _weight(self, term: str) -> float:
        weight = self._idf.get(term, self._unknown_idf)
        if term.startswith("@"):
            # A topic names what kind of answer is wanted: it counts even when many
            # facts share it ("when" -> a time), though less than an unknown word.
            return max(weight, 0.8 * self._unknown_idf)
        if term in self._background:
            return 0.2 * weight
        if term.isdigit():
            return 0.5 * weight  # a number in a question is often the caller's guess
        return weight

    def _meaning(self, utterance: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Each fact's score by meaning (0 below `semantic_min`: from `min_score` at
        `semantic_min` to 1) and its cosine with the question; None without an
        encoder."""
        if self._encoder is None or not utterance.strip():
            return None
        if self._vectors is None:
            self._vectors = self._fact_vectors(self._encoder)
        cosine = self._vectors @ self._encoder.encode([utterance])[0]
        s = self.settings
        scaled = s.min_score + (cosine - s.semantic_min) * (1 - s.min_score) / (1 - s.semantic_min)
        return np.where(cosine >= s.semantic_min, scaled, 0.0), cosine

    def _fused(self, words: float, cosine: float) -> float:
        s = self.settings
        return s.passage_lexical_weight * words + (1 - s.passage_lexical_weight) * cosine

    def _standout(self, fused: list[tuple[float, Fact]]) -> Fact | None:
        """The passage that stands out from the others by `passage_margin`, from
        `passage_margin_min` (below `passage_min`), when none answers by itself."""
        s = self.settings
        if not fused:
            return None
        ranked = sorted(fused, key=lambda p: p[0], reverse=True)
        best, fact = ranked[0]
        second = ranked[1][0] if len(ranked) > 1 else 0.0
        if best >= s.passage_margin_min and best - second >= s.passage_margin:
            return fact
        return None

    def _passage_score(self, words: float, cosine: float) -> float:
        s = self.settings
        fused = self._fused(words, cosine)
        if fused < s.passage_min:
            return 0.0
        return s.min_score + (fused - s.passage_min) * (1 - s.min_score) / (1 - s.passage_min)

    def _fact_vectors(self, encoder: Encoder) -> np.ndarray:
        """Each fact's embedding: the one it carries, else encoded now (in one batch)."""
        missing = [i for i, f in enumerate(self.facts) if f.vector is None]
        if len(missing) == len(self.facts):
            return encoder.encode([fact_text(f) for f in self.facts])
        carried = [f.vector for f in self.facts if f.vector is not None]
        vectors = np.zeros((len(self.facts), len(carried[0])), dtype=np.float32)
        for i, fact in enumerate(self.facts):
            if fact.vector is not None:
                vectors[i] = fact.vector
        if missing:
            vectors[missing] = encoder.encode([fact_text(self.facts[i]) for i in missing])
        return vectors

    def _join_compounds(self, words: list[str]) -> list[str]:
        """Join word pairs the facts write as one ("sour dough" -> "sourdough").

        Whisper often splits compounds; a pair is joined only when the facts hold it.
        """
        out: list[str] = []
        i = 0
        while i < len(words):
            if i + 1 < len(words):
                joined = _stem(words[i] + words[i + 1])
                if joined in self._idf and not joined.startswith("@"):
                    out.append(joined)
                    i += 2
                    continue
            out.append(words[i])
            i += 1
        return out

    def retrieve(self, utterance: str) -> list[Match]:
        """The facts that answer `utterance`, best first (empty when none does)."""
        if not self.facts:
            return []
        words = self._join_compounds(terms(utterance))
        topics = _question_topics(utterance, words)
        # A topic word ("open", "price") stands for its topic; other words for themselves.
        query: dict[str, float] = {}
        for w in words:
            key = _WORD_TOPIC.get(w, w)
            query[key] = max(query.get(key, 0.0), self._weight(key))
        for topic in topics:
            query[topic] = max(query.get(topic, 0.0), self._weight(topic))
        total = sum(query.values())
        meaning = self._meaning(utterance)
        if total <= 0 and meaning is None:
            return []
        s = self.settings
        scored: list[Match] = []
        fused_passages: list[tuple[float, Fact]] = []  # each passage's words and meaning
        for i, (fact, fact_terms) in enumerate(zip(self.facts, self._terms, strict=True)):
            covered = sum(
                weight
                for term, weight in query.items()
                if term in fact_terms or _DAY_GROUP.get(term) in fact_terms
            )
            score = covered / total if total > 0 else 0.0
            if meaning is not None and fact.passage:
                fused_passages.append((self._fused(score, float(meaning[1][i])), fact))
                score = self._passage_score(score, float(meaning[1][i]))
            elif meaning is not None:
                scaled, cosine = meaning
                # by words or by meaning, whichever is more; ties go to the meaning. A
                # sentence of prose (no question of its own) may also answer by both,
                # as a passage does, once the question's words touch it: "What's the
                # price for a grown-up?" and "An adult swim costs £4.80."
                fused = 0.0
                if not fact.question and score >= s.fused_min_words:
                    fused = self._passage_score(score, float(cosine[i]))
                score = max(score, float(scaled[i]), fused) + TIE_BREAK * float(cosine[i])
            if score > 0:
                scored.append(Match(fact, score))
        scored.sort(key=lambda m: m.score, reverse=True)
        if not scored or scored[0].score < s.min_score:
            standout = self._standout(fused_passages)
            return [Match(standout, s.min_score)] if standout is not None else []
        best = scored[0].score
        return [
            m
            for m in scored[: s.max_facts]
            if m.score >= max(s.min_score, best * s.runner_up_ratio)
        ]
