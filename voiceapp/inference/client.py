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
from dataclasses import dataclass, replace
from typing import Any, Generic, NoReturn, TypeVar

import numpy as np

from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript
from voiceapp.engine.audio import float_to_pcm16, pcm16_to_float
from voiceapp.engine.inference import AudioChunk, InferenceError
from voiceapp.engine.llm import LLMOptions, Message, PromptUsage
from voiceapp.engine.tools import ToolCall
from voiceapp.engine.tts import VoiceSpec

from .protocol import (
    ACCEPTED,
    AUDIO,
    CHANNELS,
    CLOSED,
    DONE,
    ERROR,
    HEARTBEAT,
    MALFORMED_REPLY,
    REPLY_CHANNEL_PREFIX,
    RESULT,
    SCORE,
    SEND_TRIES,
    TOKEN,
    Payload,
    ProtocolError,
    Reply,
    Request,
    TokenMessage,
    as_prompt_usage,
    as_transcript,
    decode_received,
    encode_asr_payload,
    encode_cancel,
    encode_closed,
    encode_eou_payload,
    encode_llm_payload,
    encode_request,
    encode_tts_payload,
    layer_send,
    token_item,
    unexpected,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
ACCEPT_GRACE_S = 0.5  # after `accept_by`, for a worker's accept already on its way


@dataclass(frozen=True, slots=True)
class MalformedReply:
    """A reply this stream could not read, for the request it names (or the latest)."""

    request_id: str
    error: ProtocolError


@dataclass(frozen=True, slots=True)
class ClientSettings:
    accept_timeout_s: float = 3.0
    liveness_timeout_s: float = 1.0
    request_timeout_s: float = 10.0
    retries: int = 1
    affinity_accept_s: float = 0.3
    affinity_sessions: int = 4096  # calls remembered for LLM worker affinity


class ChannelStream(Generic[T]):
    """One streaming request: an async iterator over decoded replies.

    A reader task takes the replies off the layer into an in-process queue, and the
    iterator waits on that queue. Closing a stream (barge-in, a cancelled
    speculation) therefore never cancels a Redis receive: redis-py can swallow a
    cancellation that lands in a blocking pop and leave the task stuck for good.
    The reader ends when the stream sends itself `inference.closed`, after any
    attempt a worker could still accept has had its time (a late accept is
    answered with a cancel).
    """

    def __init__(
        self,
        client: ChannelsInference,
        kind: str,
        payload: Payload,
        decode: Callable[[Reply], T],
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
        self._attempts = 0
        self._delivered = 0
        self._request_id = ""
        self._abandoned: set[str] = set()
        self._owners: dict[str, str] = {}  # request id -> the worker that accepted it first
        self._reply = f"{REPLY_CHANNEL_PREFIX}.{uuid.uuid4().hex}"
        self._inbox: asyncio.Queue[Reply | MalformedReply] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._accept_by = 0.0  # wall clock: until then a worker may take the latest attempt
        self._worker: str | None = None
        self._sent_at = 0.0
        self._deadline = 0.0
        self._accept_ms: float | None = None
        self._worker_queue_ms: float | None = None
        self.worker: str | None = None
        self.usage = PromptUsage()  # an LLM reply's prompt, as its worker reports it

    @property
    def queue_ms(self) -> float | None:
        """Time before a model started on the request: layer queue plus worker queue."""
        if self._accept_ms is None:
            return None
        return self._accept_ms + (self._worker_queue_ms or 0.0)

    def __aiter__(self) -> ChannelStream[T]:
        return self

    async def _read(self) -> None:
        layer = self._client.layer
        failures = 0
        while True:
            try:
                raw = await layer.receive(self._reply)
                failures = 0
            except Exception as exc:
                # After a Redis restart each dead pooled connection fails once: try again
                # a few times; past that the layer is down, and the stream times out.
                failures += 1
                if failures >= SEND_TRIES:
                    log.warning("%s replies on %s: %s", self._kind, self._reply, exc)
                    return
                await asyncio.sleep(0.05 * failures)
                continue
            try:
                message = decode_received(raw)
            except ProtocolError as exc:
                log.warning("%s request: malformed reply on %s: %s", self._kind, self._reply, exc)
                request_id = exc.request_id or self._request_id
                if not self._finished and not self._ignored(request_id, exc.worker):
                    self._inbox.put_nowait(MalformedReply(request_id, exc))
                continue
            if message["type"] == CLOSED:
                return
            if message["type"] == ACCEPTED:
                request_id, sender = message["request_id"], message["worker"]
                if request_id in self._abandoned or (
                    self._owners.setdefault(request_id, sender) != sender
                ):
                    # Taken just as it was given up, or taken twice (channels_redis can
                    # hand a shared-queue message out twice): keep to one worker.
                    await self._cancel(sender, request_id)
                    continue
            elif self._ignored(message["request_id"], message.get("worker")):
                continue
            if not self._finished:
                self._inbox.put_nowait(message)

    def _ignored(self, request_id: str, sender: str | None) -> bool:
        """A reply to an abandoned attempt, or from a worker other than the one that
        accepted the request first."""
        return request_id in self._abandoned or (
            sender is not None and self._owners.get(request_id, sender) != sender
        )

    async def _send_request(self) -> None:
        layer = self._client.layer
        if self._reader is None or self._reader.done():  # none yet, or it lost the layer
            self._reader = self._client.spawn(self._read())
            self._client.readers[self._reply] = self._reader
            self._reader.add_done_callback(lambda _t: self._client.readers.pop(self._reply, None))
        if self._request_id:
            self._abandoned.add(self._request_id)
            if self._worker:  # it accepted, then went quiet: stop it if it ever wakes up
                await self._cancel(self._worker, self._request_id)
        self._request_id = uuid.uuid4().hex
        self._worker = None
        self._sent_at = time.monotonic()
        if self._prefer:
            try:
                await layer_send(layer, self._prefer, self._request())
                return
            except Exception as exc:  # e.g. a dead worker's channel is full
                log.info("%s request: %s unreachable (%s)", self._kind, self._prefer, exc)
                self._prefer = None
        try:
            await layer_send(layer, CHANNELS[self._kind], self._request())
        except Exception as exc:  # Redis away: this request fails, the call goes on
            await self._finish()
            raise InferenceError(
                f"{self._kind} request not sent: channel layer unreachable ({exc})",
                "layer_unavailable",
            ) from exc

    def _request(self) -> Request:
        self._accept_by = time.time() + self._accept_timeout()
        return encode_request(
            self._kind,
            self._payload,
            request_id=self._request_id,
            reply_channel=self._reply,
            accept_by=self._accept_by,
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
                await self._finish()
                raise
            if isinstance(message, MalformedReply):
                if message.request_id == self._request_id:
                    await self._malformed(message.error)
                continue
            if message["request_id"] != self._request_id:
                continue
            if message["type"] == ACCEPTED:
                self._worker = self.worker = message["worker"]
                self._accept_ms = 1000.0 * (time.monotonic() - self._sent_at)
                if self._on_accept is not None:
                    self._on_accept(self._worker)
            elif message["type"] == HEARTBEAT:
                continue
            elif message["type"] == DONE:
                if "usage" in message:
                    self.usage = as_prompt_usage(message["usage"])
                await self._finish(completed=True)
                raise StopAsyncIteration
            elif message["type"] == ERROR:
                await self._finish(completed=True)
                raise InferenceError(
                    f"{self._kind} worker error: {message['message']}", message["code"]
                )
            else:
                try:
                    result = self._decode(message)
                except ProtocolError as exc:
                    log.warning("%s request %s: %s", self._kind, self._request_id, exc)
                    await self._malformed(exc)
                if message["type"] == TOKEN:
                    self._read_token(message)
                self._delivered += 1
                return result

    def _read_token(self, message: TokenMessage) -> None:
        """The worker's queue time and prompt count, which ride on a reply's first token."""
        if message.get("queue_ms") is not None:
            self._worker_queue_ms = message.get("queue_ms")
        if "usage" in message:
            self.usage = as_prompt_usage(message["usage"])

    async def _malformed(self, error: ProtocolError) -> NoReturn:
        """End the request on a reply it could not read; the worker is told to stop."""
        await self._finish()
        raise InferenceError(f"{self._kind} reply malformed: {error}", MALFORMED_REPLY) from error

    def _expired(self) -> bool:
        return time.monotonic() >= self._deadline

    async def _receive(self) -> Reply | MalformedReply:
        s = self._client.settings
        wait = s.liveness_timeout_s if self._worker else self._accept_timeout()
        wait = min(wait, self._deadline - time.monotonic())
        timed_out = InferenceError(
            f"{self._kind} request timed out after {s.request_timeout_s:.1f} s", "timeout"
        )
        if wait <= 0:
            raise timed_out
        try:
            return await asyncio.wait_for(self._inbox.get(), wait)
        except TimeoutError:
            if self._expired():  # the request's own deadline, not a silent worker
                raise timed_out from None
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
            await self._client.layer.send(worker, encode_cancel(request_id))

    async def _finish(self, *, completed: bool = False) -> None:
        """No more replies wanted: stop the worker, then the reader once nothing can come."""
        if self._finished:
            return
        self._finished = True
        if not self._started or not _loop_running():
            # Never sent, or closed by the garbage collector after its loop ended (an
            # engine generator finalised late): nothing can be sent or awaited now.
            return
        if self._worker and not completed:
            await self._cancel(self._worker, self._request_id)
        # Until `accept_by` a worker may still take an unaccepted attempt; the reader
        # stays to answer it with a cancel.
        unaccepted = bool(self._abandoned) or self._worker is None
        self._abandoned.add(self._request_id)
        linger = max(0.0, self._accept_by - time.time()) + ACCEPT_GRACE_S if unaccepted else 0.0
        self._client.spawn(self._close_reader(linger))

    async def _close_reader(self, linger: float) -> None:
        await asyncio.sleep(linger)
        with contextlib.suppress(Exception):
            await self._client.layer.send(self._reply, encode_closed())

    async def aclose(self) -> None:
        await self._finish()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# What each kind's stream yields, from the one reply type that kind is answered with.


def _decode_token(message: Reply) -> str | ToolCall:
    if message["type"] != TOKEN:
        raise unexpected(message, TOKEN)
    return token_item(message)


def _decode_audio(message: Reply) -> AudioChunk:
    if message["type"] != AUDIO:
        raise unexpected(message, AUDIO)
    return AudioChunk(pcm16_to_float(message["pcm"]), message["sample_rate"])


def _decode_score(message: Reply) -> float:
    if message["type"] != SCORE:
        raise unexpected(message, SCORE)
    return message["probability"]


def _decode_transcript(message: Reply) -> Transcript:
    if message["type"] != RESULT:
        raise unexpected(message, RESULT)
    return as_transcript(message["transcript"])


class ChannelsInference:
    """`Inference` over a channel layer: requests to `inference.*`, replies streamed back."""

    def __init__(self, layer: Any, settings: ClientSettings | None = None) -> None:
        self.layer = layer
        self.settings = settings or ClientSettings()
        self._affinity: OrderedDict[str, str] = OrderedDict()  # call -> its LLM worker
        self._tasks: set[asyncio.Task[None]] = set()
        self.readers: dict[str, asyncio.Task[None]] = {}  # reply channel -> its reader

    async def close(self, timeout_s: float = 3.0) -> None:
        """End every stream's reader now (tests, benchmarks: before the loop closes).

        Each reader is told to stop through its own channel instead of being
        cancelled, which a blocking Redis pop can swallow (see `ChannelStream`).
        """
        for reply in list(self.readers):
            with contextlib.suppress(Exception):
                await self.layer.send(reply, encode_closed())
        pending = [t for t in self._tasks if not t.done() and t not in self.readers.values()]
        for task in pending:  # readers' delayed close messages: already sent above
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)

    def spawn(self, coro: Any) -> asyncio.Task[None]:
        """A background task of this client's streams, kept until it ends."""
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def llm_worker_of(self, session: str) -> str | None:
        """The worker that served `session`'s last LLM turn, if remembered."""
        return self._affinity.get(session)

    def _remember(self, session: str, worker: str) -> None:
        self._affinity[session] = worker
        self._affinity.move_to_end(session)
        while len(self._affinity) > self.settings.affinity_sessions:
            self._affinity.popitem(last=False)

    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        payload = encode_asr_payload(float_to_pcm16(audio), language, model)
        kind = "caption" if partial else "asr"
        stream: ChannelStream[Transcript] = ChannelStream(self, kind, payload, _decode_transcript)
        try:
            async for transcript in stream:
                if stream.queue_ms is None:
                    return transcript
                # as an LLM reply's: the layer's queue (until accepted) plus the worker's
                waited = stream.queue_ms + (transcript.queue_ms or 0.0)
                return replace(transcript, queue_ms=round(waited, 1))
        finally:
            await stream.aclose()
        raise InferenceError("ASR worker finished without a transcript", "asr_failed")

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        stream: ChannelStream[float] = ChannelStream(
            self, "eou", encode_eou_payload(text, previous_reply), _decode_score
        )
        try:
            async for probability in stream:
                return probability
        finally:
            await stream.aclose()
        raise InferenceError("end-of-turn worker finished without a score", "eou_failed")

    def generate(
        self, messages: list[Message], options: LLMOptions
    ) -> ChannelStream[str | ToolCall]:
        payload = encode_llm_payload(messages, options)
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

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> ChannelStream[AudioChunk]:
        payload = encode_tts_payload(text, voice, background=background)
        return ChannelStream(self, "tts", payload, _decode_audio)
