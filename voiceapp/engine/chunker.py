"""Cut the LLM's token stream into speakable clauses, the first one as early as sensible."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = ".!?"
_CLAUSE_END = ",;:\u2014\u2013"  # comma, semicolon, colon, em and en dash
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "vs", "etc", "e.g", "i.e", "no", "jr", "sr"}


@dataclass(frozen=True, slots=True)
class ChunkerSettings:
    first_min_words: int = 3  # a comma clause this long may go first
    first_max_words: int = 7  # without punctuation, cut the first clause at a space
    min_words: int = 6  # later clauses: cut at a comma only past this many words
    max_words: int = 30


class ClauseChunker:
    """Feed text deltas; get back clauses ready for TTS. `flush()` at end of reply."""

    def __init__(self, settings: ChunkerSettings | None = None) -> None:
        self.settings = settings or ChunkerSettings()
        self._buf = ""
        self.emitted = 0

    def push(self, delta: str) -> list[str]:
        self._buf += delta
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
        return None

    @staticmethod
    def _is_abbreviation(text: str) -> bool:
        m = re.search(r"(\S+)\.$", text)
        if not m:
            return False
        token = m.group(1).lower().strip("(\"'")
        return token in _ABBREVIATIONS
