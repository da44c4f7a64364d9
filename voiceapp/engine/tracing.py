"""Per-turn latency spans, observed from the outside of the stages.

Stages call `mark(name)`; the tracer turns marks into the spans of
ARCHITECTURE.md ("Latency: what we measure"). All times come from one
monotonic clock in the process running the call loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

SPAN_NAMES = (
    "v2v_ms",
    "endpoint_ms",
    "asr_ms",
    "llm_queue_ms",
    "llm_first_token_ms",
    "first_clause_ms",
    "tts_first_audio_ms",
    "tool_ms",
    "send_ms",
)


@dataclass
class TurnTrace:
    """Marks (seconds on a monotonic clock) of one turn and the spans derived from them.

    Marks: speech_end (last voiced audio), end_of_turn, asr_start, asr_end,
    llm_start, llm_request (sent, once the call's read-ahead has ended: what a
    reply waits for it is in `timeline()` only), llm_first_token, first_clause,
    tts_start, tts_first_audio,
    tool_call (a reply's call of a tool), first_audio_sent. `llm_queue_ms` and
    `asr_queue_ms` are reported by whoever queued the request; `asr_reads` is how
    many readings the transcript took (2: the full window read it again). Those two
    are details of the ASR span, not spans: they go out with them (`details()`) but
    are not in `SPAN_NAMES`.
    """

    clock: Callable[[], float] = time.monotonic
    marks: dict[str, float] = field(default_factory=dict)
    llm_queue_ms: float | None = None
    asr_queue_ms: float | None = None
    asr_reads: int | None = None

    def mark(self, name: str, at: float | None = None) -> None:
        """Record `name` once; later marks of the same name are ignored."""
        if name not in self.marks:
            self.marks[name] = self.clock() if at is None else at

    def remark(self, name: str, at: float | None = None) -> None:
        self.marks[name] = self.clock() if at is None else at

    def take_reading(self, other: TurnTrace) -> None:
        """The ASR marks and details of a reading `other` traced, as this turn's."""
        for name in ("asr_start", "asr_end"):
            if name in other.marks:
                self.remark(name, other.marks[name])
        self.asr_queue_ms = other.asr_queue_ms
        self.asr_reads = other.asr_reads

    def _span(self, start: str, end: str) -> float | None:
        if start in self.marks and end in self.marks:
            return round(1000.0 * (self.marks[end] - self.marks[start]), 1)
        return None

    def timeline(self) -> dict[str, float]:
        """Every mark in ms relative to the end of the user's speech (negative: before it)."""
        origin = self.marks.get("speech_end")
        if origin is None:
            return {}
        return {k: round(1000.0 * (v - origin), 1) for k, v in sorted(self.marks.items())}

    def details(self) -> dict[str, float | None]:
        """What explains a long ASR span: its wait for the model, and its readings."""
        queue = None if self.asr_queue_ms is None else round(self.asr_queue_ms, 1)
        return {"asr_queue_ms": queue, "asr_reads": self.asr_reads}

    def latency(self) -> dict[str, float | None]:
        """The spans and their details: a response's `latency`."""
        return {**self.spans(), **self.details()}

    def spans(self) -> dict[str, float | None]:
        return {
            "v2v_ms": self._span("speech_end", "first_audio_sent"),
            "endpoint_ms": self._span("speech_end", "end_of_turn"),
            "asr_ms": self._span("asr_start", "asr_end"),
            "llm_queue_ms": None if self.llm_queue_ms is None else round(self.llm_queue_ms, 1),
            "llm_first_token_ms": self._span("llm_start", "llm_first_token"),
            "first_clause_ms": self._span("llm_start", "first_clause"),
            "tts_first_audio_ms": self._span("tts_start", "tts_first_audio"),
            # from the LLM's start to the tool call it wrote (or the rules made)
            "tool_ms": self._span("llm_start", "tool_call"),
            "send_ms": self._span("tts_first_audio", "first_audio_sent"),
        }
