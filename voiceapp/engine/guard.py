"""Checks on each clause of a reply before it is spoken.

A small model can loop ("No, no, no, no ..."), run on, switch language, or
state a number it made up. `ReplyGuard.check(clause)` looks at each clause the
chunker cuts, before it goes to TTS, and says whether to speak it, speak a
shortened form and stop, or stop (and what to say instead). The call stops the
LLM as soon as the guard says stop, so a loop costs one clause, not 26 s of audio.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

NUMBER_WORDS = {
    "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13",
    "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
}  # fmt: skip

# Function words that mark a language; a clause in the pinned language rarely
# holds several of another's and none of its own.
_FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "the and is are you we i it to of a in for on that this with be have not do can "
        "our your at from will".split()
    ),
    "fr": frozenset(
        "le la les est et vous nous je un une des du de pour dans pas que qui sur avec "
        "sont être avez c'est il elle ce en moi toi votre vos notre nos au aux ou mais "
        "très oui non merci bonjour comment suis sommes êtes s'il plaît peut voulez".split()
    ),
    "es": frozenset(
        "el la los las es y usted nosotros yo un una de del para en que con por se "
        "está son hola gracias muy pero su sus nuestro puede tiene hay".split()
    ),
    "de": frozenset(
        "der die das ist und sie wir ich ein eine nicht zu mit für auf den dem ist sind "
        "haben".split()
    ),
    "it": frozenset("il la lo gli le è e noi io un una di per non che con sono".split()),
    "pt": frozenset("o a os as é e nós eu um uma de do da para em não que com são".split()),
    "nl": frozenset("de het is en u wij ik een niet van voor op met zijn".split()),
}


class Action(enum.Enum):
    SPEAK = "speak"  # speak the clause (maybe shortened) and go on
    STOP = "stop"  # speak the clause given (if any), then end the reply


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    text: str  # what to speak ("" for nothing)
    # why it intervened: loop, invented_number, language, language_talk, sentence_cap,
    # echo
    reason: str = ""


@dataclass(frozen=True, slots=True)
class GuardSettings:
    max_sentences: int = 3  # a voice reply longer than this is cut at a sentence end
    language: str = "en"
    check_numbers: bool = True
    decline: str = ""  # said instead of a clause with an invented number ("" = nothing)
    # A clause about languages (the caller did not ask about one), or a disclaimer
    # about being an assistant, is dropped: a small model answers "Please repeat
    # that" with "As a voice assistant, I only support English".
    language_talk: bool = False
    # The caller's last words: a clause that only says them back is dropped (the
    # model answered "How are you today?" with "How are you today?").
    caller_text: str = ""


LANGUAGE_TALK = re.compile(
    r"\b(languages?|english|french|spanish|german|italian|portuguese|dutch|bilingual|"
    r"multilingual|translat\w*)\b",
    re.I,
)


# A small model's disclaimer about itself ("as a voice assistant on a call, I ..."),
# said instead of an answer: dropped like talk about languages.
DISCLAIMER = re.compile(
    r"\bas (a|an|your) ([\w-]+ ){0,4}(assistant|ai|bot|chatbot|language model)\b", re.I
)


def numbers_in(text: str) -> set[str]:
    """The numbers a text states, as digit strings ("8:00 am" -> {"8"}, "eight" -> {"8"})."""
    lowered = text.lower()
    found = {n.lstrip("0") or "0" for n in re.findall(r"\d+", lowered)}
    found.update(NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", lowered) if w in NUMBER_WORDS)
    return found - {"0"}


# A list's numbering, which a voice reply does not read out: "1." or "2)" as a clause
# of its own or at a clause's start; after a clause's comma ("Stay calm, 2.") only as
# the next number of a list already begun ("Sizes 1, 2." is a sentence).
_LIST_MARK_ALONE = re.compile(r"^(\d{1,2})[.)]$")
_LIST_MARK_FIRST = re.compile(r"^(\d{1,2})[.)]\s+(?=[^\W\d])")
_LIST_MARK_LAST = re.compile(r",\s*(\d{1,2})[.)]$")
# Where a sentence ends: its closing mark, then a space (or the end of the text);
# not a title's ("Dr. Lee"), an abbreviation's before lower case ("9 a.m. on"), or
# "No." before a figure.
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
_TITLE = re.compile(r"\b(mr|mrs|ms|dr|st|jr|sr|prof|vs|etc)\.$", re.I)
_DOTTED = re.compile(r"\b([a-z]\.){2,}$", re.I)
ECHO_MIN_WORDS = 3


def without_list_marks(clause: str, next_mark: int | None = None) -> tuple[str, int | None]:
    """`clause` without a list's numbering ("" when it was nothing else), and the
    number the list's next mark would have (None: no list begun). `next_mark`: that
    number before this clause."""
    text = clause.strip()
    alone = _LIST_MARK_ALONE.match(text)
    if alone:
        return "", int(alone.group(1)) + 1
    first = _LIST_MARK_FIRST.match(text)
    if first:
        next_mark = int(first.group(1)) + 1
        text = text[first.end() :]
    last = _LIST_MARK_LAST.search(text)
    if last and next_mark is not None and int(last.group(1)) == next_mark:
        return text[: last.start()] + ".", next_mark + 1
    return text, next_mark


def sentence_ends(text: str) -> list[int]:
    """The offsets just past each sentence's end in `text`, for sentences that hold a
    word (a stray "." is not a sentence)."""
    ends: list[int] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        head, after = text[: m.end()], text[m.end() :].lstrip()
        if _TITLE.search(head) or (_DOTTED.search(head) and after[:1].islower()):
            continue
        if re.search(r"\bno\.$", head, re.I) and after[:1].isdigit():
            continue
        if re.search(r"\w", text[start : m.start()]):
            ends.append(m.end())
            start = m.end()
    return ends


def _words(text: str) -> list[str]:
    return re.findall(r"[a-zà-ÿ']+", text.lower())


def _repeated_unit(words: list[str]) -> int | None:
    """Index where a unit of 1-6 words starts repeating a third time in a row, else None."""
    n = len(words)
    for size in range(1, 7):
        for start in range(0, n - 3 * size + 1):
            unit = words[start : start + size]
            if (
                words[start + size : start + 2 * size] == unit
                and words[start + 2 * size : start + 3 * size] == unit
            ):
                return start + size  # keep the first occurrence
    return None


def _foreign(text: str, language: str) -> bool:
    own = _FUNCTION_WORDS.get(language)
    if own is None:
        return False
    words = _words(text)
    if len(words) < 4:
        return False
    own_hits = sum(w in own for w in words)
    for other, vocabulary in _FUNCTION_WORDS.items():
        if other == language:
            continue
        hits = sum(w in vocabulary and w not in own for w in words)
        if hits >= 3 and hits > 2 * own_hits:
            return True
    return False


class ReplyGuard:
    """One per reply. `allowed_numbers`: numbers the reply may state (facts, caller, history)."""

    def __init__(self, settings: GuardSettings, allowed_numbers: set[str] | None = None) -> None:
        self.settings = settings
        self.allowed_numbers = allowed_numbers or set()
        self._spoken: list[str] = []
        self._spoken_text: list[str] = []
        self._spoken_words: list[str] = []
        self._list_next: int | None = None  # a numbered list's next mark, once begun
        self.reason = ""  # set once the guard has cut the reply

    def check(self, clause: str) -> Verdict:
        s = self.settings
        clause, self._list_next = without_list_marks(clause, self._list_next)
        if not clause:
            return Verdict(Action.SPEAK, "")  # a list's "1.": nothing to say, and no sentence
        words = _words(clause)
        norm = " ".join(words)
        # A clause said before, or a unit looping inside this clause or across clauses.
        if norm and norm in self._spoken:
            return self._stop("", "loop")
        joined = self._spoken_words + words
        cut = _repeated_unit(joined)
        if cut is not None:
            keep = max(0, cut - len(self._spoken_words))
            text = " ".join(clause.split()[:keep]).rstrip(",;:") if keep else ""
            if text and text[-1] not in ".!?":
                text += "."
            return self._stop(text, "loop")
        # after the loops: a caller's "no, no, no" said back is a loop, and ends it
        if self._echoes(words):
            self.reason = "echo"
            return Verdict(Action.SPEAK, "", "echo")  # dropped; the reply goes on
        # Judged on the reply so far: a short clause alone says little about its language.
        said = " ".join([*self._spoken_text, clause])
        if s.language and _foreign(said, s.language.split("-")[0].lower()):
            return self._stop("", "language")
        if s.language_talk and (LANGUAGE_TALK.search(clause) or DISCLAIMER.search(clause)):
            self.reason = "language_talk"
            return Verdict(Action.SPEAK, "", "language_talk")  # dropped; the reply goes on
        if s.check_numbers:
            invented = numbers_in(clause) - self.allowed_numbers
            if invented:
                return self._stop(s.decline, "invented_number")
        before = " ".join(self._spoken_text)
        self._spoken.append(norm)
        self._spoken_text.append(clause)
        self._spoken_words = joined
        # Sentences are counted in the reply so far, not clause by clause: a clause may
        # end mid-sentence, and one clause may hold several ("No, no. I'm afraid not.").
        offset = len(before) + 1 if before else 0
        ends = sentence_ends(" ".join(self._spoken_text))
        if len(ends) >= s.max_sentences:
            last = ends[s.max_sentences - 1] - offset
            return self._stop(clause[:last].strip() if last > 0 else "", "sentence_cap")
        return Verdict(Action.SPEAK, clause)

    def _echoes(self, words: list[str]) -> bool:
        """The clause is one of the caller's last sentences, said back whole. Part of
        one is not: reading back what the caller gave ("12 Mill Lane, Leeds") or
        saying what they asked for ("Repeat after me: ...") is an answer."""
        if len(words) < ECHO_MIN_WORDS:
            return False
        text = self.settings.caller_text
        return any(_words(part) == words for part in [text, *re.split(r"[.!?]+\s*", text)])

    def _stop(self, text: str, reason: str) -> Verdict:
        self.reason = reason
        return Verdict(Action.STOP, text, reason)
