"""Cut the LLM's token stream into speakable clauses, the first one as early as sensible."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = ".!?"
_CLAUSE_END = ",;:\u2014\u2013"  # comma, semicolon, colon, em and en dash
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr"}
# a mark that ends the text so far, after a word of letters only ("Paris." but not "3."
# or "a.m.")
_MARKED_WORD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z']*)([.!?,;:])$")
# what may follow a mark the first clause was cut at: more of it, or a closing quote
_TRAILING_MARKS = _SENTENCE_END + _CLAUSE_END + "\u2026\"')]"


@dataclass(frozen=True, slots=True)
class ChunkerSettings:
    first_min_words: int = 3  # a comma clause this long may go first
    first_max_words: int = 7  # without punctuation, cut the first clause at a space
    min_words: int = 6  # later clauses: cut at a comma only past this many words
    max_words: int = 30
    first_at_mark: bool = True  # the first clause ends as its mark arrives (below)


class ClauseChunker:
    """Feed text deltas; get back clauses ready for TTS. `flush()` at end of reply.

    A boundary is confirmed by the whitespace after it, which comes with the LLM's
    next token, but the first clause's mark is not waited on: "Paris." or "Yes, of
    course," ends it as the mark arrives, one token (about 20 ms on a CPU) before the
    next word would confirm it. Only after a word of letters that is no abbreviation
    and none of `joined` (the words the prompt writes before a dot inside a name,
    "bakery" of "bakery.com": the reply may copy the name).
    """

    def __init__(
        self, settings: ChunkerSettings | None = None, joined: frozenset[str] = frozenset()
    ) -> None:
        self.settings = settings or ChunkerSettings()
        self._joined = joined | {"www"}
        self._buf = ""
        self._after_mark = False  # the first clause was cut at a mark the text ended with
        self.emitted = 0

    def push(self, delta: str) -> list[str]:
        self._buf += delta
        if self._after_mark:
            # more of the mark ("!!", "...") or a closing quote: said with the clause
            rest = self._buf.lstrip(_TRAILING_MARKS)
            if rest or len(self._buf) > 3:
                self._after_mark = False
            self._buf = rest
        out: list[str] = []
        while True:
            cut = self._find_cut()
            if cut is None:
                break
            clause, self._buf = self._buf[:cut].strip(), self._buf[cut:].lstrip()
            if clause:
                out.append(clause)
                self.emitted += 1
        return out

    def flush(self) -> list[str]:
        clause, self._buf = self._buf.strip(), ""
        if clause and re.search(r"[A-Za-z0-9]", clause):
            self.emitted += 1
            return [clause]
        return []

    def _find_cut(self) -> int | None:
        s = self.settings
        buf = self._buf
        first = self.emitted == 0
        min_clause_words = s.first_min_words if first else s.min_words
        words = 0
        in_word = False
        for i, ch in enumerate(buf):
            if ch.isspace():
                in_word = False
                # A boundary is confirmed by the whitespace that follows it.
                prev = buf[i - 1] if i else ""
                if prev and prev in _SENTENCE_END and not self._is_abbreviation(buf[:i]):
                    return i
                if prev and prev in _CLAUSE_END and words >= min_clause_words:
                    return i
                if first and words >= s.first_max_words:
                    return i
                if words >= s.max_words:
                    return i
                if ch == "\n" and words:
                    return i
            elif not in_word:
                in_word = True
                words += 1
        if first and s.first_at_mark:
            return self._cut_at_mark(words, min_clause_words)
        return None

    def _cut_at_mark(self, words: int, min_clause_words: int) -> int | None:
        """The first clause, cut where the text so far ends, on a mark after a plain word."""
        m = _MARKED_WORD.search(self._buf)
        if m is None:
            return None
        word, mark = m.group(1).lower(), m.group(2)
        if mark in _CLAUSE_END and words < min_clause_words:
            return None
        if mark == "." and (len(word) < 2 or word in _ABBREVIATIONS or word in self._joined):
            return None
        self._after_mark = True
        return len(self._buf)

    @staticmethod
    def _is_abbreviation(text: str) -> bool:
        m = re.search(r"(\S+)\.$", text)
        if not m:
            return False
        token = m.group(1).lower().strip("(\"'")
        return token in _ABBREVIATIONS


def joined_words(texts: list[str]) -> frozenset[str]:
    """The words `texts` write before a dot inside a name or a short form ("bakery" of
    "bakery.com", "e" of "e.g."), lower-cased: a clause is not cut after them."""
    return frozenset(
        w.lower() for text in texts for w in re.findall(r"([A-Za-z]+)\.(?=[A-Za-z0-9])", text)
    )
