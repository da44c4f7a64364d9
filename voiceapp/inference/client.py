"""The call loop's client for inference workers on the Channels layer.

Implements `voiceapp.engine.inference.Inference`. Every request has a bounded
life: it must be accepted within `accept_timeout_s`, the worker must show
life (a reply or heartbeat) every `liveness_timeout_s`, and the whole request
ends within `request_timeout_s`. A request that fails before it delivered
anything is retried once (another worker takes it); otherwise the caller gets
an `InferenceError` with a clear code. Closing a stream sends a cancel to the
worker that holds the request.

All attempts of one stream share its reply channel, so a worker that accepts
an abandoned attempt late (it took the request just as the caller gave up on
it) is seen, and told to cancel, instead of doing the work a second time.

A call's LLM turns go back to the worker that served its last turn, whose
llama context still holds the call's prompt prefix: the request is sent to that
worker by name and must be accepted within `affinity_accept_s`; if it is not
(the worker is busy or gone), it goes to the shared queue like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from voiceapp.engine.asr import Transcript
from voiceapp.engine.audio import float_to_pcm16, pcm16_to_float
from voiceapp.engine.inference import AudioChunk, InferenceError
from voiceapp.engine.llm import LLMOptions, Message
from voiceapp.engine.tts import VoiceSpec

from .protocol import CHANNELS, REPLY_CHANNEL_PREFIX

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClientSettings:
    accept_timeout_s: float = 3.0
    liveness_timeout_s: float = 1.0
    request_timeout_s: float = 10.0
    retries: int = 1
    affinity_accept_s: float = 0.3
    affinity_sessions: int = 4096  # calls remembered for LLM worker affinity


class ChannelStream(Generic[T]):
    """One streaming request: an async iterator over decoded replies."""

    def __init__(
        self,
        client: ChannelsInference,
        kind: str,
        payload: dict[str, Any],
        decode: Any,
        *,
        prefer: str | None = None,
        on_accept: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self._prefer = prefer
        self._on_accept = on_accept
        self._kind = kind
        self._payload = payload
        self._decode = decode
        self._started = False
        self._finished = False
        self._delivered = 0
        self._request_id = ""
        self._abandoned: set[str] = set()
        self._reply = f"{REPLY_CHANNEL_PREFIX}.{uuid.uuid4().hex}"
        self._worker: str | None = None
        self._sent_at = 0.0
        self._deadline = 0.0
        self._accept_ms: float | None = None
        self._worker_queue_ms: float | None = None
        self.worker: str | None = None

    @property
    def queue_ms(self) -> float | None:
        """Time before a model started on the request: layer queue plus worker queue."""
        if self._accept_ms is None:
            return None
        return self._accept_ms + (self._worker_queue_ms or 0.0)

    def __aiter__(self) -> ChannelStream[T]:
        return self

    async def _send_request(self) -> None:
        layer = self._client.layer
        if self._request_id:
            self._abandoned.add(self._request_id)
        self._request_id = uuid.uuid4().hex
        self._worker = None
        self._sent_at = time.monotonic()
        await layer.send(
            self._prefer or CHANNELS[self._kind],
            {
                "type": "inference.request",
                "kind": self._kind,
                "request_id": self._request_id,
                "reply_channel": self._reply,
                "accept_by": time.time() + self._accept_timeout(),
                "payload": self._payload,
            },
        )

    def _accept_timeout(self) -> float:
        s = self._client.settings
        return s.affinity_accept_s if self._prefer else s.accept_timeout_s

    async def __anext__(self) -> T:
        s = self._client.settings
        if self._finished:
            raise StopAsyncIteration
        if not self._started:
            self._started = True
            self._attempts = 0
            self._deadline = time.monotonic() + s.request_timeout_s
            await self._send_request()
        while True:
            try:
                message = await self._receive()
            except InferenceError as exc:
                if self._prefer and exc.code == "no_worker" and not self._expired():
                    log.info("%s request %s: %s", self._kind, self._request_id, exc)
                    self._prefer = None  # the call's worker is busy or gone: any worker
                    await self._send_request()
                    continue
                if self._delivered == 0 and self._attempts < s.retries and not self._expired():
                    self._attempts += 1
                    log.warning("%s request %s: failing over", self._kind, self._request_id)
                    await self._send_request()
                    continue
                self._finished = True
                raise
            kind = message.get("type")
            if message.get("request_id") != self._request_id:
                if kind == "inference.accepted" and message.get("request_id") in self._abandoned:
                    await self._cancel(str(message["worker"]), str(message["request_id"]))
                continue  # a late reply to an abandoned attempt
            if kind == "inference.accepted":
                self._worker = self.worker = str(message["worker"])
                self._accept_ms = 1000.0 * (time.monotonic() - self._sent_at)
                if self._on_accept is not None:
                    self._on_accept(self._worker)
            elif kind == "inference.heartbeat":
                continue
            elif kind == "inference.done":
                self._finished = True
                raise StopAsyncIteration
            elif kind == "inference.error":
                self._finished = True
                raise InferenceError(
                    f"{self._kind} worker error: {message.get('message')}",
                    str(message.get("code", "inference_error")),
                )
            else:
                if "queue_ms" in message and message["queue_ms"] is not None:
                    self._worker_queue_ms = float(message["queue_ms"])
                self._delivered += 1
                return self._decode(message)

    def _expired(self) -> bool:
        return time.monotonic() >= self._deadline

    async def _receive(self) -> dict[str, Any]:
        s = self._client.settings
        wait = s.liveness_timeout_s if self._worker else self._accept_timeout()
        wait = min(wait, self._deadline - time.monotonic())
        if wait <= 0:
            raise InferenceError(
                f"{self._kind} request timed out after {s.request_timeout_s:.1f} s", "timeout"
            )
        try:
            return dict(await asyncio.wait_for(self._client.layer.receive(self._reply), wait))
        except TimeoutError:
            if self._worker is None:
                raise InferenceError(
                    f"no {self._kind} worker accepted the request within "
                    f"{self._accept_timeout():.1f} s",
                    "no_worker",
                ) from None
            raise InferenceError(
                f"{self._kind} worker stopped responding (no heartbeat for "
                f"{s.liveness_timeout_s:.1f} s)",
                "worker_lost",
            ) from None

    async def _cancel(self, worker: str, request_id: str) -> None:
        with contextlib.suppress(Exception):
            await self._client.layer.send(
                worker, {"type": "inference.cancel", "request_id": request_id}
            )

    async def aclose(self) -> None:
        if self._started and not self._finished and self._worker:
            await self._cancel(self._worker, self._request_id)
        self._finished = True


def _decode_token(message: dict[str, Any]) -> str:
    return str(message["text"])


def _decode_audio(message: dict[str, Any]) -> AudioChunk:
    return AudioChunk(pcm16_to_float(bytes(message["pcm"])), int(message["sample_rate"]))


def _decode_transcript(message: dict[str, Any]) -> Transcript:
    t = message["transcript"]
    return Transcript(
        text=str(t["text"]),
        no_speech_prob=float(t["no_speech_prob"]),
        avg_logprob=float(t["avg_logprob"]),
        audio_seconds=float(t["audio_seconds"]),
        rejected=t.get("rejected"),
    )


class ChannelsInference:
    """`Inference` over a channel layer: requests to `inference.*`, replies streamed back."""

    def __init__(self, layer: Any, settings: ClientSettings | None = None) -> None:
        self.layer = layer
        self.settings = settings or ClientSettings()
        self._affinity: OrderedDict[str, str] = OrderedDict()  # call -> its LLM worker

    def llm_worker_of(self, session: str) -> str | None:
        """The worker that served `session`'s last LLM turn, if remembered."""
        return self._affinity.get(session)

    def _remember(self, session: str, worker: str) -> None:
        self._affinity[session] = worker
        self._affinity.move_to_end(session)
        while len(self._affinity) > self.settings.affinity_sessions:
            self._affinity.popitem(last=False)

    async def transcribe(self, audio: np.ndarray, language: str) -> Transcript:
        stream: ChannelStream[Transcript] = ChannelStream(
            self, "asr", {"audio": float_to_pcm16(audio), "language": language}, _decode_transcript
        )
        try:
            async for transcript in stream:
                return transcript
        finally:
            await stream.aclose()
        raise InferenceError("ASR worker finished without a transcript", "asr_failed")

    def generate(self, messages: list[Message], options: LLMOptions) -> ChannelStream[str]:
        payload = {
            "messages": [dict(m) for m in messages],
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "model": options.model,
            "backend": options.backend,
            "session": options.session,
        }
        session = options.session
        if not session:
            return ChannelStream(self, "llm", payload, _decode_token)
        return ChannelStream(
            self,
            "llm",
            payload,
            _decode_token,
            prefer=self._affinity.get(session),
            on_accept=lambda worker: self._remember(session, worker),
        )

    def synthesize(self, text: str, voice: VoiceSpec) -> ChannelStream[AudioChunk]:
        payload = {
            "text": text,
            "voice_id": voice.voice_id,
            "model_path": voice.model_path,
            "speed": voice.speed,
        }
        return ChannelStream(self, "tts", payload, _decode_audio)
