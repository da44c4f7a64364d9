"""Turn detection: speech start, pause, resume and end of turn from VAD probabilities.

The detector is a small state machine driven by one Silero probability per
32 ms chunk. A *pause* (short silence) is the moment to start ASR and the LLM
speculatively; *end of turn* (longer silence) commits that work. A semantic
hint from the pause's transcript sets the silence to wait for: short after a
finished turn, long after an unfinished one. While that transcript is still
being made (`expect_hint`), the turn does not end on the plain wait, so a
sentence paused for 600 ms is not cut before anyone has read it.

How long a pause's transcript makes the turn wait is `end_of_turn_wait_ms`:
lexical cues (a trailing "to", "the", a comma) say unfinished, and otherwise
the end-of-turn model's probability (see `eou.py`) decides: finished from
`eou_threshold`, unfinished at or below `eou_unfinished_threshold`, and a
score in between waits from the long wait down to the plain one as the score
grows (on a log scale), so a question the model is unsure of is not held as
long as a phrase broken off. Whisper's closing full stop is no evidence, it
puts one after "I would like to order".

`BargeInDetector` is the same kind of machine for speech over the agent's reply:
a likely onset pauses the reply, enough speech confirms the interruption, and
an onset that stays too short (a cough, a click) resumes the reply.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, replace

from .vad import CHUNK_MS


class TurnState(enum.Enum):
    IDLE = "idle"
    SPEAKING = "speaking"
    PAUSED = "paused"


class TurnEventKind(enum.Enum):
    SPEECH_STARTED = "speech_started"
    PAUSED = "paused"
    RESUMED = "resumed"
    END_OF_TURN = "end_of_turn"


@dataclass(frozen=True, slots=True)
class TurnEvent:
    kind: TurnEventKind
    chunk_index: int  # index of the VAD chunk the event refers to
    audio_ms: int  # position on the input clock (start of speech, or end of last voiced chunk)


@dataclass(frozen=True, slots=True)
class TurnSettings:
    threshold: float = 0.5
    min_speech_ms: int = 160
    pause_ms: int = 96
    end_of_turn_ms: int = 600
    complete_end_of_turn_ms: int = 250
    incomplete_end_of_turn_ms: int = 1200
    resume_ms: int = 64
    # "eou": unfinished by lexical cues, finished only by the end-of-turn model's score.
    # "punctuation": the earlier rule that trusted Whisper's closing punctuation (kept as
    # the benchmark's baseline).
    hint_source: str = "eou"
    eou_threshold: float = 0.05  # end-of-turn probability from which a turn reads as finished
    # At or below this the turn reads as unfinished (the long wait). Mid-phrase pauses
    # score 1e-5..2.5e-3, finished questions the model is unsure of 4e-3..5e-2.
    eou_unfinished_threshold: float = 0.001

    def wait_ms(self, complete: bool | None) -> int:
        """The silence that ends a turn read as finished, unfinished or unknown (None)."""
        if complete is True:
            return min(self.end_of_turn_ms, self.complete_end_of_turn_ms)
        if complete is False:
            return max(self.end_of_turn_ms, self.incomplete_end_of_turn_ms)
        return self.end_of_turn_ms

    def with_silence(self, end_of_turn_ms: int) -> TurnSettings:
        """These settings for a persona's (or a session's) end-of-turn silence `eot`.

        A finished turn ends after 9/10 of it (at least 160 ms): with the default
        500 ms that is 450 ms, past the pause a speaker makes at a comma after a
        clause that reads as finished ("... the email address on my account, because
        ...": 384-416 ms of quiet VAD chunks in the benchmark's Piper voice, which
        the 400 ms of 4/5 split). An unfinished one waits twice `eot`, up to 3 s.
        """
        eot = end_of_turn_ms
        return replace(
            self,
            end_of_turn_ms=eot,
            complete_end_of_turn_ms=min(eot, max(160, eot * 9 // 10)),
            incomplete_end_of_turn_ms=min(3000, max(eot, eot * 2)),
        )


_INCOMPLETE_ENDINGS = {
    "a", "an", "the", "and", "or", "but", "so", "to", "of", "in", "on", "at", "for",
    "with", "my", "your", "is", "are", "was", "if", "because", "that", "what", "um",
    "uh", "like", "about", "from", "than", "then", "i", "we", "you",
}  # fmt: skip


_TRAILING_UNFINISHED = ("...", "…", ",", "-", ":", ";")
_PUNCTUATION = re.compile(r"[^\w\s'-]")


def _last_word(text: str) -> str:
    words = re.findall(r"[a-zA-Z']+", text.lower())
    return words[-1] if words else ""


def unfinished_by_words(text: str) -> bool:
    """True when `text` clearly stops mid-phrase: a trailing comma or dash, or "to", "the"..."""
    t = text.strip()
    return bool(t) and (t.endswith(_TRAILING_UNFINISHED) or _last_word(t) in _INCOMPLETE_ENDINGS)


def sentence_completeness(text: str) -> bool | None:
    """The punctuation rule: True after a closing . ? !, False when clearly unfinished."""
    t = text.strip()
    if not t:
        return None
    if unfinished_by_words(t):
        return False
    if t[-1] in ".?!":
        return True
    return None


def eou_text(text: str) -> str:
    """The transcript as the end-of-turn model reads it: lower case, no punctuation.

    Whisper punctuates by guess (a full stop wherever the audio stops), so the model
    judges the words alone.
    """
    return " ".join(_PUNCTUATION.sub(" ", text.lower()).split())


def same_words(a: str, b: str) -> bool:
    """Two readings of a turn say the same, whatever Whisper's case and punctuation."""
    return eou_text(a) == eou_text(b)


def end_of_turn_wait_ms(text: str, eou_probability: float | None, settings: TurnSettings) -> int:
    """The silence after which a pause with this transcript ends the turn.

    Lexical cues can only say "unfinished" (the long wait). The end-of-turn
    model's probability says "finished" (the short wait) at or above
    `eou_threshold` and "unfinished" at or below `eou_unfinished_threshold`;
    in between, the wait falls from the long one to the plain one as log(p)
    grows. No text or no score: the plain wait.
    """
    if not text.strip():
        return settings.wait_ms(None)
    if unfinished_by_words(text):
        return settings.wait_ms(False)
    if eou_probability is None:
        return settings.wait_ms(None)
    low, high = settings.eou_unfinished_threshold, settings.eou_threshold
    if eou_probability >= high:
        return settings.wait_ms(True)
    if eou_probability <= low:
        return settings.wait_ms(False)
    share = math.log(eou_probability / low) / math.log(high / low)
    longest, plain = settings.wait_ms(False), settings.wait_ms(None)
    return round(longest - share * (longest - plain))


class TurnDetector:
    """Feeds on VAD probabilities; returns the turn events each chunk produces."""

    def __init__(self, settings: TurnSettings) -> None:
        self.settings = settings
        self.state = TurnState.IDLE
        self._chunk = -1
        self._speech_run = 0
        self._silence_run = 0
        self._speech_start_chunk = 0
        self._last_voiced_chunk = -1
        self._wait_ms: int | None = None  # this pause's wait, set by its hint
        self._hint_pending = False

    @property
    def end_of_turn_ms(self) -> int:
        if self._wait_ms is not None:
            return self._wait_ms
        return self.settings.wait_ms(False if self._hint_pending else None)

    @property
    def hint_pending(self) -> bool:
        return self._hint_pending

    def expect_hint(self) -> None:
        """A hint for this pause is on its way: until it comes, wait as for an unfinished turn.

        Call `set_hint` when it comes (None if it failed), then `check_end_of_turn`.
        """
        if self.state is not TurnState.IDLE:
            self._wait_ms = None
            self._hint_pending = True

    def set_hint(self, wait_ms: int | None) -> None:
        """The current pause's wait, from its transcript (None: the plain wait)."""
        self._wait_ms = wait_ms
        self._hint_pending = False

    def silence_ms(self) -> int:
        return self._silence_run * CHUNK_MS

    def push(self, prob: float) -> list[TurnEvent]:
        s = self.settings
        self._chunk += 1
        voiced = prob >= s.threshold
        quiet = prob < max(0.01, s.threshold - 0.15)
        events: list[TurnEvent] = []
        if self.state is TurnState.IDLE:
            if voiced:
                if self._speech_run == 0:
                    self._speech_start_chunk = self._chunk
                self._speech_run += 1
                self._last_voiced_chunk = self._chunk
                if self._speech_run * CHUNK_MS >= s.min_speech_ms:
                    self.state = TurnState.SPEAKING
                    self._silence_run = 0
                    events.append(
                        TurnEvent(
                            TurnEventKind.SPEECH_STARTED,
                            self._speech_start_chunk,
                            self._speech_start_chunk * CHUNK_MS,
                        )
                    )
            elif quiet:
                self._speech_run = 0
            return events
        # SPEAKING or PAUSED
        if voiced:
            self._last_voiced_chunk = self._chunk
            self._silence_run = 0
            self._speech_run += 1
            if self.state is TurnState.PAUSED and self._speech_run * CHUNK_MS >= s.resume_ms:
                self.state = TurnState.SPEAKING
                self._wait_ms = None
                self._hint_pending = False
                events.append(TurnEvent(TurnEventKind.RESUMED, self._chunk, self._chunk * CHUNK_MS))
            return events
        if quiet or self.state is TurnState.PAUSED:
            self._silence_run += 1
            self._speech_run = 0 if quiet else self._speech_run
        end_ms = (self._last_voiced_chunk + 1) * CHUNK_MS
        if self.state is TurnState.SPEAKING and self.silence_ms() >= s.pause_ms:
            self.state = TurnState.PAUSED
            events.append(TurnEvent(TurnEventKind.PAUSED, self._last_voiced_chunk, end_ms))
        if self.state is TurnState.PAUSED and self.silence_ms() >= self.end_of_turn_ms:
            events.append(TurnEvent(TurnEventKind.END_OF_TURN, self._last_voiced_chunk, end_ms))
            self.reset()
        return events

    def reset(self) -> None:
        self.state = TurnState.IDLE
        self._speech_run = 0
        self._silence_run = 0
        self._wait_ms = None
        self._hint_pending = False

    def check_end_of_turn(self) -> TurnEvent | None:
        """Re-check after a hint arrives: the silence so far may already be enough."""
        if self.state is TurnState.PAUSED and self.silence_ms() >= self.end_of_turn_ms:
            end_ms = (self._last_voiced_chunk + 1) * CHUNK_MS
            event = TurnEvent(TurnEventKind.END_OF_TURN, self._last_voiced_chunk, end_ms)
            self.reset()
            return event
        return None


class BargeInKind(enum.Enum):
    PAUSE = "pause"  # a likely onset: hold the reply's audio where it is
    CONFIRM = "confirm"  # enough speech: the caller interrupts
    RESUME = "resume"  # the onset stayed short (a cough, a click): play on


@dataclass(frozen=True, slots=True)
class BargeInSettings:
    threshold: float = 0.7  # VAD probability that counts as speech over the reply
    onset_ms: int = 64  # voiced run that pauses the reply; 0: no pause, cancel at confirm_ms
    confirm_ms: int = 250  # voiced time (since the onset) that confirms the interruption
    resume_ms: int = 600  # unvoiced time after a paused onset that makes it a false one


class BargeInDetector:
    """Speech over the agent's reply, one Silero probability per 32 ms chunk.

    IDLE -> (voiced run >= onset_ms) PAUSED -> CONFIRM when the voiced chunks since
    the onset reach confirm_ms, or RESUME after resume_ms without a voiced chunk.
    With onset_ms 0 it confirms after a continuous voiced run of confirm_ms.
    """

    def __init__(self, settings: BargeInSettings) -> None:
        self.settings = settings
        self.paused = False
        self._run = 0
        self._voiced = 0
        self._quiet = 0

    def reset(self) -> None:
        self.paused = False
        self._run = self._voiced = self._quiet = 0

    def push(self, prob: float) -> BargeInKind | None:
        s = self.settings
        voiced = prob >= s.threshold
        if not self.paused:
            self._run = self._run + 1 if voiced else 0
            if s.onset_ms > 0 and self._run * CHUNK_MS >= s.onset_ms:
                self.paused = True
                self._voiced, self._quiet = self._run, 0
                if self._voiced * CHUNK_MS >= s.confirm_ms:
                    self.reset()
                    return BargeInKind.CONFIRM
                return BargeInKind.PAUSE
            if s.onset_ms <= 0 and self._run * CHUNK_MS >= s.confirm_ms:
                self.reset()
                return BargeInKind.CONFIRM
            return None
        if voiced:
            self._voiced += 1
            self._quiet = 0
            if self._voiced * CHUNK_MS >= s.confirm_ms:
                self.reset()
                return BargeInKind.CONFIRM
            return None
        self._quiet += 1
        if self._quiet * CHUNK_MS >= s.resume_ms:
            self.reset()
            return BargeInKind.RESUME
        return None
