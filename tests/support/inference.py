"""The real models behind the engine's `Inference`, with what they were asked kept."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript
from voiceapp.engine.inference import AudioChunk, Inference, Stream, TokenStream
from voiceapp.engine.llm import LLMOptions, Message
from voiceapp.engine.tts import VoiceSpec


@dataclass(frozen=True)
class LLMRequest:
    messages: list[Message]
    options: LLMOptions
    stream: TokenStream  # its `usage` says what the request read


class RecordingInference:
    """Passes every request to `inner` (the real models) and keeps the LLM's and the
    end-of-turn scorer's requests, oldest first."""

    def __init__(self, inner: Inference) -> None:
        self.inner = inner
        self.llm: list[LLMRequest] = []
        self.scored: list[tuple[str, str]] = []  # (caller's words, previous reply)
        self.read: list[tuple[float, bool]] = []  # each ASR request: (seconds, partial)
        self.synthesized: list[tuple[str, bool]] = []  # each clause: (text, background)

    @property
    def prompts(self) -> list[list[Message]]:
        """The messages of each LLM request, oldest first."""
        return [request.messages for request in self.llm]

    @property
    def max_tokens(self) -> list[int]:
        """The token cap of each LLM request, oldest first."""
        return [request.options.max_tokens for request in self.llm]

    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        self.read.append((len(audio) / 16000, partial))
        return await self.inner.transcribe(audio, language, model, partial=partial)

    def generate(self, messages: list[Message], options: LLMOptions) -> TokenStream:
        stream = self.inner.generate(messages, options)
        self.llm.append(LLMRequest([dict(m) for m in messages], options, stream))
        return stream

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> Stream[AudioChunk]:
        self.synthesized.append((text, background))
        return self.inner.synthesize(text, voice, background=background)

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        self.scored.append((text, previous_reply))
        return await self.inner.end_of_turn(text, previous_reply)
