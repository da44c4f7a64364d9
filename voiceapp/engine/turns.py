"""Turn detection: speech start, pause, resume and end of turn from VAD probabilities.

The detector is a small state machine driven by one Silero probability per
32 ms chunk. A *pause* (short silence) is the moment to start ASR and the LLM
speculatively; *end of turn* (longer silence) commits that work. A semantic
hint from the transcript shortens the silence to wait for after a complete
sentence and lengthens it after an unfinished phrase.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

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


_INCOMPLETE_ENDINGS = {
    "a", "an", "the", "and", "or", "but", "so", "to", "of", "in", "on", "at", "for",
    "with", "my", "your", "is", "are", "was", "if", "because", "that", "what", "um",
    "uh", "like", "about", "from", "than", "then", "i", "we", "you",
}  # fmt: skip


def sentence_completeness(text: str) -> bool | None:
    """True if `text` reads as a finished sentence, False if clearly unfinished, else None."""
    t = text.strip()
    if not t:
        return None
    if t.endswith(("...", "…", ",", "-", ":", ";")):
        return False
    words = re.findall(r"[a-zA-Z']+", t.lower())
    if words and words[-1] in _INCOMPLETE_ENDINGS:
        return False
    if t[-1] in ".?!":
        return True
    return None


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
        self._hint: bool | None = None

    @property
    def end_of_turn_ms(self) -> int:
        s = self.settings
        if self._hint is True:
            return min(s.end_of_turn_ms, s.complete_end_of_turn_ms)
        if self._hint is False:
            return max(s.end_of_turn_ms, s.incomplete_end_of_turn_ms)
        return s.end_of_turn_ms

    def set_hint(self, complete: bool | None) -> None:
        """Semantic hint for the current pause (from the speculative transcript)."""
        self._hint = complete

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
                self._hint = None
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
        self._hint = None

    def check_end_of_turn(self) -> TurnEvent | None:
        """Re-check after a hint arrives: the silence so far may already be enough."""
        if self.state is TurnState.PAUSED and self.silence_ms() >= self.end_of_turn_ms:
            end_ms = (self._last_voiced_chunk + 1) * CHUNK_MS
            event = TurnEvent(TurnEventKind.END_OF_TURN, self._last_voiced_chunk, end_ms)
            self.reset()
            return event
        return None
