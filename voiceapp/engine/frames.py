"""Typed frames exchanged between the engine's stages and its transport."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ResponseStatus = Literal["completed", "cancelled", "failed"]


@dataclass(frozen=True, slots=True)
class Frame:
    """Base class of every frame."""


@dataclass(frozen=True, slots=True)
class AudioFrame(Frame):
    """PCM16 little-endian audio, interleaved when `channels` > 1."""

    pcm: bytes
    sample_rate: int
    channels: int = 1


@dataclass(frozen=True, slots=True)
class SpeechStarted(Frame):
    """The user started speaking; `audio_start_ms` is on the call's input clock."""

    item_id: str
    audio_start_ms: int


@dataclass(frozen=True, slots=True)
class SpeechStopped(Frame):
    """End of turn: the user finished speaking at `audio_end_ms` (input clock)."""

    item_id: str
    audio_end_ms: int


@dataclass(frozen=True, slots=True)
class TranscriptPartial(Frame):
    """A provisional transcript of the user's turn so far (full text, not a delta)."""

    item_id: str
    text: str


@dataclass(frozen=True, slots=True)
class TranscriptFinal(Frame):
    """The final transcript of a user turn; `audio_seconds` is the speech transcribed."""

    item_id: str
    text: str
    audio_seconds: float


@dataclass(frozen=True, slots=True)
class TranscriptFailed(Frame):
    """A user turn whose speech gave no usable transcript, so it is not answered.

    `reason` is the ASR's: "empty", "no_speech", "low_confidence", "hallucination",
    "repetition", "too_short", or "asr_failed" when the model itself failed.
    """

    item_id: str
    reason: str
    message: str
    audio_seconds: float


@dataclass(frozen=True, slots=True)
class ResponseStarted(Frame):
    response_id: str


@dataclass(frozen=True, slots=True)
class LLMToken(Frame):
    response_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallMade(Frame):
    """The reply calls a function tool (`arguments`: a JSON object as text). The
    reply ends with it; the tool's owner answers with `VoiceCall.add_tool_output`."""

    response_id: str
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class TextClause(Frame):
    """A speakable piece of the reply, released together with its audio."""

    response_id: str
    text: str
    index: int


@dataclass(frozen=True, slots=True)
class TTSAudio(Frame):
    """Reply audio at the call's output rate, PCM16 mono."""

    response_id: str
    pcm: bytes
    sample_rate: int
    clause_index: int


@dataclass(frozen=True, slots=True)
class Interruption(Frame):
    """The reply was cut off: the user spoke over it (barge-in) or hung up.

    Output was flushed; `heard_text` is what its first `audio_played_ms` said."""

    response_id: str
    heard_text: str
    audio_played_ms: int


@dataclass(frozen=True, slots=True)
class ResponseDone(Frame):
    """A response ended; `latency` holds the turn's spans in milliseconds."""

    response_id: str
    status: ResponseStatus
    text: str
    latency: dict[str, float | None] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, float] = field(default_factory=dict)  # marks, ms after speech end


@dataclass(frozen=True, slots=True)
class ErrorFrame(Frame):
    code: str
    message: str
