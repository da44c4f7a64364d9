"""The engine's view of model inference, and an in-process implementation.

The call loop only sees `Inference`: `transcribe`, `generate` (a token
stream), `synthesize` (an audio stream) and `end_of_turn` (the probability
that a transcript is a finished turn). Streams are async iterators with
`aclose()`, which cancels the work behind them within one token or one chunk.
`LocalInference` runs the blocking backends in threads of this process; the
Channels client in `voiceapp.inference` implements the same protocol against
worker processes.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from .asr import ASR, DEFAULT_ASR_MODEL, Transcript, lower_priority
from .devices import DevicePlan
from .eou import EndOfTurnScorer
from .llm import LLM, LLMError, LLMOptions, Message, PromptUsage
from .tools import ToolCall
from .tts import TTS, VoiceSpec

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class InferenceError(RuntimeError):
    """A model request failed (worker gone, timeout, backend error)."""

    def __init__(self, message: str, code: str = "inference_error") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class AudioChunk:
    samples: np.ndarray  # float32 mono
    sample_rate: int


class Stream(Protocol[T_co]):
    """An async iterator of results that can be cancelled with `aclose()`."""

    @property
    def queue_ms(self) -> float | None:
        """Time the request waited for a free model before it started (ms)."""
        ...

    def __aiter__(self) -> AsyncIterator[T_co]: ...

    async def __anext__(self) -> T_co: ...

    async def aclose(self) -> None: ...


class TokenStream(Stream[str | ToolCall], Protocol):
    """A reply's text deltas (then the tool calls it made, if any), and the prompt
    tokens its request read.

    `usage` is filled in as the backend learns it: the local model before the
    first delta, an HTTP endpoint or a worker at the end of the stream. Read it
    after the stream ended or was closed; a request closed before then may have
    counted nothing.
    """

    @property
    def usage(self) -> PromptUsage: ...


class Inference(Protocol):
    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        """`partial`: a live caption of a turn still being spoken, which nothing waits
        on (a worker may run it at a lower priority)."""
        ...

    def generate(self, messages: list[Message], options: LLMOptions) -> TokenStream: ...

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> Stream[AudioChunk]:
        """`background`: a clause the caller will not hear for a while (enough of the
        reply is made ahead of it), which a worker may make at a lower priority."""
        ...

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        """Probability that the caller's turn is finished after `text` (see `eou.py`)."""
        ...


_END = object()

# An embedded reply goes on in the background once this many words are written: its
# first clause (at most 7 words, chunker.py) is out, and the words ahead of the rest
# (about 4 s of speech) leave the rest time to be written at a lower priority.
BACKGROUND_AFTER_WORDS = 12


class WordsWritten:
    """A stream's hand-off test: true once its text items hold `words` words."""

    def __init__(self, words: int) -> None:
        self.words = words
        self._text = ""

    def __call__(self, item: object) -> bool:
        if isinstance(item, str):
            self._text += item
        return len(self._text.split()) >= self.words


@dataclass(frozen=True, slots=True)
class Handoff:
    """Where a `ThreadStream`'s rest is produced once `due(item)` says so: a thread
    of `executor` (at a lower priority) takes the iterator over."""

    executor: ThreadPoolExecutor
    due: Callable[[Any], bool]


class ThreadStream(Generic[T]):
    """Runs a blocking iterator in a thread and yields its items asynchronously.

    `slot` (optional) bounds how many of these run at once; the time spent
    waiting for it is `queue_ms`. `aclose()` (or `cancel()`, which needs no await)
    sets the cancel event that the blocking iterator checks between items.
    `usage` is the prompt count an LLM iterator fills in (untouched by other
    kinds). `handoff` (optional): once its test passes on an item, the rest of the
    items are produced in a thread of its executor, which keeps the slot until the
    end.
    """

    def __init__(
        self,
        start: Callable[[threading.Event], Iterator[T]],
        executor: ThreadPoolExecutor,
        slot: threading.Semaphore | None = None,
        usage: PromptUsage | None = None,
        handoff: Handoff | None = None,
    ) -> None:
        self.usage = usage if usage is not None else PromptUsage()
        self._handoff = handoff
        self._start = start
        self._executor = executor
        self._slot = slot
        self._cancel = threading.Event()
        self._queue: asyncio.Queue[Any] | None = None
        self._future: asyncio.Future[None] | None = None
        self.queue_ms: float | None = None

    def __aiter__(self) -> ThreadStream[T]:
        return self

    def _run(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        put = queue.put_nowait
        queued_at = time.monotonic()
        acquired = False
        handed_off = False
        try:
            if self._slot is not None:
                while not self._cancel.is_set():
                    if self._slot.acquire(timeout=0.05):
                        acquired = True
                        break
                if not acquired:
                    return
            self.queue_ms = 1000.0 * (time.monotonic() - queued_at)
            items = iter(self._start(self._cancel))
            handed_off = self._put(items, loop, put, self._handoff, acquired)
        except BaseException as exc:  # handed to the awaiting coroutine
            loop.call_soon_threadsafe(put, exc)
        finally:
            if not handed_off:
                self._end(loop, put, acquired)

    def _put(
        self,
        items: Iterator[T],
        loop: asyncio.AbstractEventLoop,
        put: Callable[[Any], None],
        handoff: Handoff | None,
        acquired: bool,
    ) -> bool:
        """Hand `items` to the consumer, to their end or until `handoff` is due; then
        its executor produces the rest (True)."""
        for item in items:
            if self._cancel.is_set():
                break
            loop.call_soon_threadsafe(put, item)
            if handoff is not None and handoff.due(item):
                handoff.executor.submit(self._rest, items, loop, put, acquired)
                return True
        return False

    def _rest(
        self,
        items: Iterator[T],
        loop: asyncio.AbstractEventLoop,
        put: Callable[[Any], None],
        acquired: bool,
    ) -> None:
        try:
            self._put(items, loop, put, None, acquired)
        except BaseException as exc:
            loop.call_soon_threadsafe(put, exc)
        finally:
            self._end(loop, put, acquired)

    def _end(
        self, loop: asyncio.AbstractEventLoop, put: Callable[[Any], None], acquired: bool
    ) -> None:
        if acquired and self._slot is not None:
            self._slot.release()
        if not loop.is_closed():
            loop.call_soon_threadsafe(put, _END)

    async def __anext__(self) -> T:
        if self._queue is None:
            loop = asyncio.get_running_loop()
            self._queue = asyncio.Queue()
            self._future = loop.run_in_executor(self._executor, self._run, loop, self._queue)
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            raise StopAsyncIteration
        if isinstance(item, InferenceError):
            raise item
        if isinstance(item, BaseException):
            raise InferenceError(str(item) or type(item).__name__) from item
        return item

    def cancel(self) -> None:
        """Stop the blocking iterator at its next item, from any thread or task."""
        self._cancel.set()

    async def aclose(self) -> None:
        self.cancel()


class LocalInference:
    """Backends in threads of this process (embedded mode, tests, the worker itself)."""

    def __init__(
        self,
        asr: ASR,
        llm: LLM,
        tts: TTS,
        *,
        http_llm: LLM | None = None,
        eou: EndOfTurnScorer | None = None,
        llm_slots: int = 1,
        asr_slots: int = 2,
        tts_slots: int = 2,
        max_threads: int = 16,
        asr_model: str = DEFAULT_ASR_MODEL,
        asr_loader: Callable[[str], ASR] | None = None,
        devices: DevicePlan | None = None,
        caption_asr: ASR | None = None,
        background_nice: int = -1,
    ) -> None:
        """`devices`: where the models run (`load_inference` plans it; None: not known).
        `caption_asr`: the default model's instance for live captions (one reading at
        a time, at a lower priority); None: captions share `asr`.
        `background_nice`: at or above 0, work nobody waits on yet runs in threads of
        this nice value, so that it yields the cores to a reply's first words: the
        clauses asked for with `synthesize(..., background=True)`, with `tts_slots` of
        their own (they never hold a slot first words wait for), and the rest of an
        embedded reply once `BACKGROUND_AFTER_WORDS` of it are written. Below 0
        everything runs alike."""
        self.asr = asr
        self.caption_asr = caption_asr
        self._caption_slot = threading.Semaphore(1)
        self.devices = devices
        # Other ASR models by name, loaded on first use (a persona's larger Whisper).
        self.asr_model = asr_model
        self._asrs: dict[str, ASR] = {asr_model: asr}
        self._asr_loader = asr_loader
        self._asr_load_lock = threading.Lock()
        self.llm = llm
        self.http_llm = http_llm
        self.tts = tts
        self.eou = eou
        self.executor = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="infer")
        self.llm_slots = llm_slots
        self._llm_slot = threading.Semaphore(llm_slots)
        self.asr_slots = asr_slots
        self._asr_slot = threading.Semaphore(asr_slots)
        self._tts_slot = threading.Semaphore(tts_slots)
        self.background: ThreadPoolExecutor | None = None
        self._tts_background_slot = threading.Semaphore(tts_slots)
        if background_nice >= 0:
            self.background = ThreadPoolExecutor(
                max_workers=tts_slots + llm_slots,
                thread_name_prefix="background",
                initializer=lower_priority,
                initargs=(background_nice,),
            )
        # clauses made at once: the background lane's slots are its own
        self.tts_slots = tts_slots * (2 if self.background is not None else 1)

    def _asr_named(self, model: str) -> ASR:
        with self._asr_load_lock:
            asr = self._asrs.get(model)
            if asr is None:
                if self._asr_loader is None:
                    raise InferenceError(f"ASR model {model!r} is not loaded", "asr_failed")
                asr = self._asrs[model] = self._asr_loader(model)
            return asr

    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        # A request whose caller gave up while it waited for the model (a speculative
        # transcript the user spoke over) is dropped instead of keeping the model busy.
        abandoned = threading.Event()
        queued_at = time.monotonic()

        caption_asr = self.caption_asr if partial and model == self.asr_model else None

        def run() -> Transcript:
            asr = caption_asr or self._asr_named(model)
            with self._caption_slot if caption_asr else self._asr_slot:
                if abandoned.is_set():
                    raise InferenceError("transcription abandoned", "asr_cancelled")
                waited_ms = round(1000.0 * (time.monotonic() - queued_at), 1)
                return replace(asr.transcribe(audio, language), queue_ms=waited_ms)

        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, run)
        except asyncio.CancelledError:
            abandoned.set()
            raise
        except InferenceError:
            raise
        except Exception as exc:
            raise InferenceError(f"ASR failed: {exc}", "asr_failed") from exc

    def generate(
        self, messages: list[Message], options: LLMOptions
    ) -> ThreadStream[str | ToolCall]:
        usage = PromptUsage()
        if options.backend == "http":
            http = self.http_llm
            if http is None:
                raise InferenceError("no HTTP LLM endpoint is configured", "llm_unavailable")
            return ThreadStream(
                lambda cancel: http.stream(messages, options, cancel, usage),
                self.executor,
                usage=usage,
            )
        handoff = None
        if self.background is not None:
            handoff = Handoff(self.background, WordsWritten(BACKGROUND_AFTER_WORDS))
        return ThreadStream(
            lambda cancel: self.llm.stream(messages, options, cancel, usage),
            self.executor,
            self._llm_slot,
            usage=usage,
            handoff=handoff,
        )

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> ThreadStream[AudioChunk]:
        def run(cancel: threading.Event) -> Iterator[AudioChunk]:
            rate = self.tts.sample_rate(voice)
            # A clause nobody waits on yet is made a sentence at a time (less work).
            for samples in self.tts.synthesize(text, voice, cancel, windowed=not background):
                yield AudioChunk(samples, rate)

        if background and self.background is not None:
            return ThreadStream(run, self.background, self._tts_background_slot)
        return ThreadStream(run, self.executor, self._tts_slot)

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        scorer = self.eou
        if scorer is None:
            raise InferenceError("no end-of-turn model is loaded", "eou_unavailable")
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self.executor, scorer.probability, text, previous_reply
            )
        except Exception as exc:
            raise InferenceError(f"end-of-turn scoring failed: {exc}", "eou_failed") from exc

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.background is not None:
            self.background.shutdown(wait=False, cancel_futures=True)


class EndpointInference:
    """A call's own LLM endpoint for `generate`; `inner` for everything else.

    The process that runs the call streams from the endpoint itself (in a
    thread of `executor`), so the endpoint's credentials stay in this process
    and never travel through the channel layer. A failing endpoint surfaces as
    `InferenceError` with the backend's code (`llm_endpoint_unauthorized`,
    `llm_endpoint_timeout`, ...), which the call reports as a failed response.
    """

    def __init__(self, inner: Inference, llm: LLM, executor: ThreadPoolExecutor) -> None:
        self.inner = inner
        self.llm = llm
        self._executor = executor

    async def transcribe(
        self,
        audio: np.ndarray,
        language: str,
        model: str = DEFAULT_ASR_MODEL,
        *,
        partial: bool = False,
    ) -> Transcript:
        return await self.inner.transcribe(audio, language, model, partial=partial)

    def generate(
        self, messages: list[Message], options: LLMOptions
    ) -> ThreadStream[str | ToolCall]:
        llm = self.llm
        usage = PromptUsage()

        def run(cancel: threading.Event) -> Iterator[str | ToolCall]:
            try:
                yield from llm.stream(messages, options, cancel, usage)
            except LLMError as exc:
                raise InferenceError(str(exc), exc.code) from exc

        return ThreadStream(run, self._executor, usage=usage)

    def synthesize(
        self, text: str, voice: VoiceSpec, *, background: bool = False
    ) -> Stream[AudioChunk]:
        return self.inner.synthesize(text, voice, background=background)

    async def end_of_turn(self, text: str, previous_reply: str) -> float:
        return await self.inner.end_of_turn(text, previous_reply)

    async def close(self) -> None:
        """Close the inner client (the Channels client ends its reply readers)."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            result = close()
            if inspect.isawaitable(result):
                await result


async def collect(stream: Stream[T]) -> list[T]:
    """Drain a stream (used by the sequential baseline and tests)."""
    return [item async for item in stream]
