"""The call loop: one `VoiceCall` per conversation.

A transport pushes input audio (PCM16, any rate, mono or interleaved) with
`push_audio()` and reads typed frames from `frames()`. Inside, audio is
resampled to 16 kHz, scored by Silero VAD on 32 ms chunks and fed to the turn
detector. On a pause the call starts a *speculative* response (final ASR,
LLM, clause chunking, TTS) whose output is held back; at end of turn it is
committed and released, or it is cancelled if the user resumes. Reply audio
is released paced against real time (`playback_lead_ms` ahead), so a barge-in
can flush what has not been sent and the history keeps only what was heard.

The call owns every task it starts and cancels them in `close()`.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace

import numpy as np

from .asr import DEFAULT_ASR_MODEL, Transcript
from .audio import (
    VAD_RATE,
    AudioFormatError,
    StreamResampler,
    check_rate,
    float_to_pcm16,
    pcm16_to_float,
    resample,
    to_mono_float,
)
from .chunker import ChunkerSettings, ClauseChunker
from .frames import (
    ErrorFrame,
    Frame,
    Interruption,
    LLMToken,
    ResponseDone,
    ResponseStarted,
    ResponseStatus,
    SpeechStarted,
    SpeechStopped,
    TextClause,
    TranscriptFailed,
    TranscriptFinal,
    TranscriptPartial,
    TTSAudio,
)
from .inference import Inference, InferenceError, Stream
from .knowledge import Fact
from .llm import LLMOptions, Message
from .tracing import TurnTrace
from .tts import VoiceSpec
from .turns import TurnDetector, TurnEvent, TurnEventKind, TurnSettings, sentence_completeness
from .vad import CHUNK_MS, CHUNK_SAMPLES, SileroModel, StreamingVAD

log = logging.getLogger(__name__)

RESPECULATE_AFTER_MS = 300  # more silence before an "unfinished" pause is transcribed again
TRANSCRIPT_WAIT_S = 10.0  # how long a requested reply waits for a turn still being transcribed

DEFAULT_REPLY_HINT = (
    "You are speaking on a voice call: answer in one or two short sentences, "
    "plain words, no lists, no markdown, no emojis."
)


LANGUAGE_NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "nl": "Dutch", "pt": "Portuguese", "pl": "Polish", "sv": "Swedish", "da": "Danish",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class CallConfig:
    """Everything a call needs, as plain values (built from a persona by the Django side)."""

    voice: VoiceSpec
    instructions: str = "You are a helpful voice assistant."
    facts: tuple[Fact, ...] = ()  # the persona's knowledge: retrieved per caller turn
    reply_hint: str = DEFAULT_REPLY_HINT
    greeting: str = ""
    language: str = "en"
    llm: LLMOptions = field(default_factory=LLMOptions)
    turns: TurnSettings = field(default_factory=TurnSettings)
    chunker: ChunkerSettings = field(default_factory=ChunkerSettings)
    output_sample_rate: int = 24000
    output_chunk_ms: int = 40
    playback_lead_ms: int = 300
    partial_interval_ms: int = 300  # 0 turns partial transcripts off
    prefix_padding_ms: int = 300
    speculative: bool = True
    sequential: bool = False  # baseline: whole ASR, then whole reply, then whole TTS
    create_response: bool = True  # answer automatically at end of turn
    speak: bool = True  # False: text-only replies (clauses are emitted, nothing is synthesized)
    interruptions_enabled: bool = True
    barge_in_min_ms: int = 250
    barge_in_threshold: float = 0.7
    # History kept for the LLM, in characters (~4 per token). Past the budget the
    # oldest turns are dropped down to half of it at once, so the prompt's prefix (and
    # the LLM's KV cache of it) stays the same for many turns instead of shifting each turn.
    history_budget_chars: int = 2000
    max_utterance_s: float = 30.0
    asr_model: str = DEFAULT_ASR_MODEL  # a packaged Whisper by name (asr.ASR_MODELS)


class ResponseState(enum.Enum):
    SPECULATIVE = "speculative"
    ACTIVE = "active"
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass
class _Response:
    id: str
    item_id: str | None
    trace: TurnTrace
    state: ResponseState
    user_text: str | None = None
    text: str = ""
    held: list[Frame] = field(default_factory=list)
    committed: asyncio.Event = field(default_factory=asyncio.Event)
    audio: asyncio.Queue[tuple[int, np.ndarray] | None] = field(default_factory=asyncio.Queue)
    clauses: list[tuple[str, int]] = field(default_factory=list)  # (text, samples at out rate)
    sent_samples: int = 0
    first_sent_at: float | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    empty: bool = False  # the transcript was empty or rejected: nothing to answer
    incomplete: bool = False  # its transcript read as an unfinished phrase
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    speak: bool = True  # synthesize the reply (False: text only), fixed when it starts
    # The response that was active when this one was committed: cancelled once this
    # one's transcript turns out to hold words, left playing if it was only noise.
    supersedes: _Response | None = None


class VoiceCall:
    """One conversation: audio in, frames out. Use inside a running event loop."""

    def __init__(
        self,
        config: CallConfig,
        inference: Inference,
        vad_model: SileroModel,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.call_id = f"call_{uuid.uuid4().hex[:20]}"
        self._inference = inference
        self._clock = clock
        self._vad = StreamingVAD(vad_model)
        self._detector = TurnDetector(config.turns)
        self._resampler: StreamResampler | None = None
        self._out: asyncio.Queue[Frame | None] = asyncio.Queue()
        self.history: list[Message] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._transcribing: set[asyncio.Task[None]] = set()  # manual-mode turns in ASR
        self._ids = itertools.count(1)
        self._closed = False
        # Input clock and the current user turn.
        self._chunks = 0
        self._pending16 = np.zeros(0, dtype=np.float32)
        self._recent = np.zeros(0, dtype=np.float32)  # last prefix_padding_ms, for turn starts
        self._utterance: list[np.ndarray] = []
        self._utterance_samples = 0
        self._item_id: str | None = None
        self._last_voiced_at: float | None = None
        self._speech_announced = False
        self._partial_task: asyncio.Task[None] | None = None
        self._partial_at_samples = 0
        self._barge_run = 0
        self._last_sound_chunk = -1  # last chunk that might hold speech (not clearly quiet)
        self._speculated_at_chunk = -1
        self._respeculated = False
        # Responses.
        self._speculative: _Response | None = None
        self._active: _Response | None = None
        self._last_spoken: _Response | None = None
        self._history_start = 0  # first history message still sent to the LLM
        self.stats = {"speculative_started": 0, "speculative_cancelled": 0, "interruptions": 0}

    # ----- transport surface -------------------------------------------------

    async def frames(self) -> AsyncIterator[Frame]:
        """Output frames in order until the call is closed."""
        while True:
            frame = await self._out.get()
            if frame is None:
                return
            yield frame

    async def next_frame(self, wait_s: float | None = None) -> Frame | None:
        """The next output frame, or None when closed or on timeout."""
        try:
            return await asyncio.wait_for(self._out.get(), wait_s)
        except TimeoutError:
            return None

    def push_audio(self, pcm: bytes, sample_rate: int, channels: int = 1) -> None:
        """Feed PCM16 LE input audio (any rate, mono or interleaved channels)."""
        self.push_samples(pcm16_to_float(pcm, channels), sample_rate)

    def push_samples(self, samples: np.ndarray, sample_rate: int) -> None:
        """Feed float or int audio, 1-D or (frames, channels). Raises AudioFormatError."""
        if self._closed:
            raise RuntimeError("call is closed")
        check_rate(sample_rate)
        mono = to_mono_float(samples)
        if mono.size == 0:
            return
        if self._resampler is None or self._resampler.in_rate != sample_rate:
            self._resampler = StreamResampler(sample_rate, VAD_RATE)
        audio16 = self._resampler.process(mono)
        self._pending16 = np.concatenate([self._pending16, audio16])
        n = len(self._pending16) // CHUNK_SAMPLES
        for i in range(n):
            self._on_chunk(self._pending16[i * CHUNK_SAMPLES : (i + 1) * CHUNK_SAMPLES])
        self._pending16 = self._pending16[n * CHUNK_SAMPLES :]

    def add_message(self, role: str, text: str) -> None:
        """Add a conversation item (role user, assistant or system) to the history."""
        if role not in ("user", "assistant", "system"):
            raise ValueError(f"unknown role {role!r}")
        self.history.append({"role": role, "content": text})

    def update_config(self, config: CallConfig) -> None:
        """Apply new settings (instructions, voice, turn detection ...) from the next turn on."""
        self.config = config
        self._detector.settings = config.turns

    def create_response(
        self, *, instructions: str | None = None, max_output_tokens: int | None = None
    ) -> str:
        """Answer the history now (manual turns, `response.create`). Returns the response id."""
        self.cancel_response()
        response = self._new_response(None, ResponseState.ACTIVE)
        self._active = response
        response.committed.set()
        self._emit(response, ResponseStarted(response.id))
        llm = self.config.llm
        if max_output_tokens:
            llm = replace(llm, max_tokens=max_output_tokens)
        self._spawn_response(response, self._reply_after_transcripts(response, llm, instructions))
        return response.id

    async def _reply_after_transcripts(
        self, response: _Response, options: LLMOptions, instructions: str | None
    ) -> None:
        """Manual mode: a turn still being transcribed belongs in the prompt."""
        pending = [t for t in self._transcribing if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=TRANSCRIPT_WAIT_S)
        await self._reply(response, options, instructions)

    def say(self, text: str) -> str:
        """Speak fixed text (a greeting) as a response, without the LLM."""
        self.cancel_response()
        response = self._new_response(None, ResponseState.ACTIVE)
        self._active = response
        response.committed.set()
        self._emit(response, ResponseStarted(response.id))
        self._spawn_response(response, self._speak_text(response, text))
        return response.id

    def cancel_response(self) -> None:
        """Stop the active response now (`response.cancel`); no-op when idle."""
        if self._active is not None and self._active.state is ResponseState.ACTIVE:
            self._finish_cancelled(self._active, interrupted=False)

    def truncate(self, audio_end_ms: int) -> str:
        """Cut the last reply in the history to what its first `audio_end_ms` said."""
        response = self._last_spoken
        if response is None:
            return ""
        heard = self._heard_text(response, max(0, audio_end_ms))
        for msg in reversed(self.history):
            if msg["role"] == "assistant":
                msg["content"] = heard
                break
        return heard

    async def close(self, wait_s: float = 2.0) -> None:
        """Cancel everything the call started and end `frames()`."""
        if self._closed:
            return
        self._closed = True
        for response in (self._speculative, self._active):
            if response is not None:
                self._cancel_tasks(response)
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait_s)
        self._out.put_nowait(None)

    @property
    def speaking(self) -> bool:
        """True while reply audio is being released."""
        r = self._active
        return r is not None and r.state is ResponseState.ACTIVE and r.first_sent_at is not None

    # ----- input side --------------------------------------------------------

    def _on_chunk(self, chunk: np.ndarray) -> None:
        now = self._clock()
        prob = self._vad.process(chunk)[0]
        self._chunks += 1
        detector = self._detector
        if detector.state.value != "idle":
            self._utterance.append(chunk)
            self._utterance_samples += len(chunk)
        else:
            keep = int(self.config.prefix_padding_ms * VAD_RATE / 1000)
            keep += self.config.turns.min_speech_ms * VAD_RATE // 1000 + CHUNK_SAMPLES
            self._recent = np.concatenate([self._recent, chunk])[-keep:]
        if prob >= self.config.turns.threshold:
            self._last_voiced_at = now
        if prob >= max(0.2, self.config.turns.threshold - 0.3):
            self._last_sound_chunk = self._chunks
        self._check_barge_in(prob)
        for event in detector.push(prob):
            self._on_turn_event(event, chunk)
        self._maybe_respeculate()
        self._maybe_partial()

    def _check_barge_in(self, prob: float) -> None:
        cfg = self.config
        if not (cfg.interruptions_enabled and self.speaking):
            self._barge_run = 0
            return
        self._barge_run = self._barge_run + 1 if prob >= cfg.barge_in_threshold else 0
        if self._barge_run * CHUNK_MS >= cfg.barge_in_min_ms and self._active is not None:
            self._barge_run = 0
            # The protocol's order: speech_started, then the cancelled response.
            if self._item_id is not None and not self._speech_announced:
                self._announce_speech()
            self._finish_cancelled(self._active, interrupted=True)

    def _announce_speech(self) -> None:
        assert self._item_id is not None
        self._speech_announced = True
        start_ms = max(0, self._speech_start_ms - self.config.prefix_padding_ms)
        self._out.put_nowait(SpeechStarted(self._item_id, start_ms))

    def _on_turn_event(self, event: TurnEvent, chunk: np.ndarray) -> None:
        kind = event.kind
        if kind is TurnEventKind.SPEECH_STARTED:
            self._item_id = f"item_{uuid.uuid4().hex[:20]}"
            self._speech_start_ms = event.audio_ms
            # The detected speech and its prefix padding are in the recent-audio buffer.
            self._utterance = [self._recent.copy()]
            self._utterance_samples = len(self._recent)
            self._recent = np.zeros(0, dtype=np.float32)
            self._partial_at_samples = 0
            self._speech_announced = False
            if not self.speaking:
                self._announce_speech()
        elif kind is TurnEventKind.PAUSED:
            self._respeculated = False
            if self.config.speculative and not self.config.sequential and self._turn_counts():
                self._start_turn_response(speculative=True)
        elif kind is TurnEventKind.RESUMED:
            if self._speculative is not None:
                self._finish_cancelled(self._speculative, interrupted=False, silent=True)
                self._speculative = None
                self.stats["speculative_cancelled"] += 1
        elif kind is TurnEventKind.END_OF_TURN:
            self._end_of_turn(event)

    def _maybe_respeculate(self) -> None:
        """Transcribe again when the pause's transcript looked unfinished.

        Whisper often drops the last word when the audio stops right after it; with
        a few hundred ms more of silence the same turn often reads as finished,
        and the shorter end-of-turn wait applies again.
        """
        response = self._speculative
        respeculate_ms = self.config.turns.pause_ms + RESPECULATE_AFTER_MS
        if (
            response is None
            or not response.incomplete
            or self._respeculated
            or self._detector.silence_ms() < respeculate_ms
        ):
            return
        self._respeculated = True
        self._finish_cancelled(response, interrupted=False, silent=True)
        self._speculative = None
        self.stats["speculative_cancelled"] += 1
        self._detector.set_hint(None)
        self._start_turn_response(speculative=True)

    def _turn_counts(self) -> bool:
        """A turn only answers when it was announced (not echo or a cough during playback)."""
        return self._speech_announced

    def _end_of_turn(self, event: TurnEvent) -> None:
        item_id = self._item_id
        if item_id is None:
            return
        if not self._turn_counts():
            self._reset_utterance()
            return
        self._out.put_nowait(SpeechStopped(item_id, event.audio_ms))
        response = self._speculative
        self._speculative = None
        if response is not None and self._last_sound_chunk > self._speculated_at_chunk:
            # Faint speech after the speculation started: its transcript may miss words.
            self._finish_cancelled(response, interrupted=False, silent=True)
            self.stats["speculative_cancelled"] += 1
            response = None
        if response is None:
            response = self._start_turn_response(speculative=False)
        if response is not None:
            response.trace.mark("speech_end", self._last_voiced_at)
            response.trace.mark("end_of_turn")
            self._commit(response)
        self._reset_utterance()

    def _reset_utterance(self) -> None:
        self._utterance = []
        self._utterance_samples = 0
        self._item_id = None
        self._speech_announced = False
        if self._partial_task is not None:
            self._partial_task.cancel()
            self._partial_task = None

    def _utterance_audio(self) -> np.ndarray:
        audio = np.concatenate(self._utterance) if self._utterance else np.zeros(0, np.float32)
        return audio[-int(self.config.max_utterance_s * VAD_RATE) :]

    def _maybe_partial(self) -> None:
        cfg = self.config
        if (
            cfg.partial_interval_ms <= 0
            or self._detector.state.value != "speaking"
            or not self._speech_announced
            or (self._partial_task is not None and not self._partial_task.done())
        ):
            return
        step = cfg.partial_interval_ms * VAD_RATE // 1000
        if self._utterance_samples - self._partial_at_samples < step:
            return
        self._partial_at_samples = self._utterance_samples
        item_id = self._item_id
        audio = self._utterance_audio()

        async def partial() -> None:
            try:
                result = await self._inference.transcribe(audio, cfg.language, cfg.asr_model)
            except InferenceError as exc:
                log.warning("partial transcript failed: %s", exc)
                return
            if result.text and item_id is not None and item_id == self._item_id:
                self._out.put_nowait(TranscriptPartial(item_id, result.text))

        self._partial_task = self._spawn(partial())

    # ----- responses ---------------------------------------------------------

    def _new_response(self, item_id: str | None, state: ResponseState) -> _Response:
        rid = f"resp_{uuid.uuid4().hex[:20]}"
        trace = TurnTrace(clock=self._clock)
        return _Response(rid, item_id, trace, state, speak=self.config.speak)

    def _start_turn_response(self, *, speculative: bool) -> _Response | None:
        if not self.config.create_response and not speculative:
            # Manual mode: transcribe only; the transport calls create_response().
            task = self._spawn(self._transcribe_only(self._item_id, self._utterance_audio()))
            self._transcribing.add(task)
            task.add_done_callback(self._transcribing.discard)
            return None
        if not self.config.create_response:
            return None
        response = self._new_response(self._item_id, ResponseState.SPECULATIVE)
        audio = self._utterance_audio()
        if speculative:
            self._speculative = response
            self._speculated_at_chunk = self._chunks
            self.stats["speculative_started"] += 1
        self._spawn_response(response, self._turn(response, audio))
        return response

    def _commit(self, response: _Response) -> None:
        """Release a speculative response: its held frames go out, audio may start.

        One response at a time: the active one (a greeting, an answer still playing)
        is cancelled, but only once this turn's transcript is known to hold words,
        so a cough or a noise does not silence the agent.
        """
        if response.state is not ResponseState.SPECULATIVE:
            return
        if response.empty:
            response.state = ResponseState.DONE
            for frame in response.held:  # its TranscriptFailed: a rejected turn is reported
                if isinstance(frame, TranscriptFailed):
                    self._out.put_nowait(frame)
            response.held.clear()
            return
        previous = self._active
        if previous is not None and previous.state is ResponseState.ACTIVE:
            if response.user_text:
                self._finish_cancelled(previous, interrupted=False)
            else:
                response.supersedes = previous
        response.state = ResponseState.ACTIVE
        self._active = response
        for frame in response.held:
            self._out.put_nowait(frame)
        response.held.clear()
        if response.user_text:
            self.add_message("user", response.user_text)
        response.committed.set()

    def _emit(self, response: _Response, frame: Frame) -> None:
        if response.state is ResponseState.SPECULATIVE:
            response.held.append(frame)
        elif response.state is ResponseState.ACTIVE:
            self._out.put_nowait(frame)

    def _spawn(self, coro: object) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _spawn_response(self, response: _Response, coro: object) -> None:
        task = self._spawn(coro)
        response.tasks.add(task)
        task.add_done_callback(response.tasks.discard)

    def _messages(self, user_text: str | None, instructions: str | None = None) -> list[Message]:
        cfg = self.config
        system = (instructions or cfg.instructions).strip()
        if cfg.reply_hint:
            system = f"{system}\n\n{cfg.reply_hint}"
        language = LANGUAGE_NAMES.get(cfg.language.split("-")[0].lower())
        if language:  # small models drift into other languages without this
            system = f"{system} Always answer in {language}."
        history = self._trimmed_history()
        msgs: list[Message] = [{"role": "system", "content": system}]
        msgs += history
        if user_text is not None:
            msgs.append({"role": "user", "content": user_text})
        return msgs

    def _trimmed_history(self) -> list[Message]:
        budget = self.config.history_budget_chars
        start = self._history_start
        if sum(len(m["content"]) for m in self.history[start:]) > budget:
            kept = 0
            start = len(self.history)
            while start > 0 and kept + len(self.history[start - 1]["content"]) <= budget // 2:
                start -= 1
                kept += len(self.history[start]["content"])
            while start < len(self.history) and self.history[start]["role"] == "assistant":
                start += 1  # begin with a user turn
            self._history_start = start
        return self.history[start:]

    async def _transcribe(self, response: _Response, audio: np.ndarray) -> Transcript | None:
        """The turn's final ASR, in a task of the call's own.

        A committed turn whose response is cancelled while its words are still being
        read (the caller went on talking: barge-in) keeps its transcript: it is
        emitted when it comes, so the turn does not vanish. A speculative one that
        is cancelled (the caller resumed) drops its request.
        """
        response.trace.mark("asr_start")
        read: list[Transcript] = []

        async def run() -> None:
            cfg = self.config
            read.append(await self._inference.transcribe(audio, cfg.language, cfg.asr_model))

        task = self._spawn(run())
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if response.committed.is_set() and response.item_id and not self._closed:
                item_id = response.item_id
                task.add_done_callback(lambda t: self._late_transcript(item_id, t, read))
            else:
                task.cancel()
            raise
        response.trace.mark("asr_end")
        return read[0]

    def _late_transcript(
        self, item_id: str, task: asyncio.Task[None], read: list[Transcript]
    ) -> None:
        if task.cancelled() or self._closed:
            return
        exc = task.exception()
        if exc is not None:
            code = exc.code if isinstance(exc, InferenceError) else "asr_failed"
            self._out.put_nowait(TranscriptFailed(item_id, code, str(exc), 0.0))
        elif read[0].text:
            self._out.put_nowait(TranscriptFinal(item_id, read[0].text, read[0].audio_seconds))
            self.add_message("user", read[0].text)
        else:
            self._out.put_nowait(_failed(item_id, read[0]))

    async def _transcribe_only(self, item_id: str | None, audio: np.ndarray) -> None:
        """Manual mode: the turn's words go to the history; no answer until asked."""
        try:
            result = await self._inference.transcribe(
                audio, self.config.language, self.config.asr_model
            )
        except InferenceError as exc:
            self._out.put_nowait(ErrorFrame(exc.code, str(exc)))
            return
        if result.text and item_id:
            self._out.put_nowait(TranscriptFinal(item_id, result.text, result.audio_seconds))
            self.add_message("user", result.text)
        elif item_id:
            self._out.put_nowait(_failed(item_id, result))

    async def _turn(self, response: _Response, audio: np.ndarray) -> None:
        """Final ASR, then the reply; speculative until committed."""
        try:
            result = await self._transcribe(response, audio)
        except InferenceError as exc:
            if response.item_id:
                self._emit(response, TranscriptFailed(response.item_id, exc.code, str(exc), 0.0))
            self._fail(response, exc)
            return
        assert result is not None
        previous = response.supersedes
        response.supersedes = None
        if not result.text:
            log.info(
                "turn %s discarded: %s (no_speech %.2f, avg_logprob %.2f, %.2f s)",
                response.item_id,
                result.rejected,
                result.no_speech_prob,
                result.avg_logprob,
                result.audio_seconds,
            )
            response.empty = True
            if response.item_id:
                self._emit(response, _failed(response.item_id, result))
            if response.state is ResponseState.ACTIVE:
                response.state = ResponseState.DONE
                if self._active is response:
                    # Noise, not words: what was playing before goes on.
                    live = previous is not None and previous.state is ResponseState.ACTIVE
                    self._active = previous if live else None
            return
        if previous is not None and previous.state is ResponseState.ACTIVE:
            self._finish_cancelled(previous, interrupted=False)
        response.user_text = result.text
        if response.item_id:
            self._emit(
                response, TranscriptFinal(response.item_id, result.text, result.audio_seconds)
            )
        if response.state is ResponseState.SPECULATIVE and self._speculative is response:
            complete = sentence_completeness(result.text)
            response.incomplete = complete is False
            self._detector.set_hint(complete)
            event = self._detector.check_end_of_turn()
            if event is not None:
                self._end_of_turn(event)
        self._emit(response, ResponseStarted(response.id))
        pending_user_text: str | None = result.text
        if response.state is ResponseState.ACTIVE:  # committed before the transcript came
            self.add_message("user", result.text)
            pending_user_text = None
        await self._reply(response, self.config.llm, None, user_text=pending_user_text)

    async def _reply(
        self,
        response: _Response,
        options: LLMOptions,
        instructions: str | None,
        user_text: str | None = None,
    ) -> None:
        """LLM -> clause chunker -> TTS -> paced playout, in parallel."""
        cfg = self.config
        messages = self._messages(user_text, instructions)
        clauses: asyncio.Queue[str | None] = asyncio.Queue()
        tts_task = self._spawn(self._tts(response, clauses))
        response.tasks.add(tts_task)
        play_task = self._spawn(self._playout(response))
        response.tasks.add(play_task)
        chunker = ClauseChunker(cfg.chunker)
        trace = response.trace
        trace.mark("llm_start")
        stream: Stream[str] | None = None
        tokens = 0
        try:
            stream = self._inference.generate(messages, replace(options, session=self.call_id))
            async for delta in stream:
                if tokens == 0:
                    trace.mark("llm_first_token")
                    trace.llm_queue_ms = stream.queue_ms
                tokens += 1
                response.text += delta
                self._emit(response, LLMToken(response.id, delta))
                if not cfg.sequential:
                    for clause in chunker.push(delta):
                        trace.mark("first_clause")
                        clauses.put_nowait(clause)
        except InferenceError as exc:
            clauses.put_nowait(None)
            self._fail(response, exc)
            return
        finally:
            if stream is not None:
                await stream.aclose()
        response.usage = {"output_tokens": tokens}
        rest = [response.text.strip()] if cfg.sequential else chunker.flush()
        for clause in rest:
            trace.mark("first_clause")
            clauses.put_nowait(clause)
        clauses.put_nowait(None)
        await asyncio.gather(tts_task, play_task)
        self._finish(response, "completed")

    async def _speak_text(self, response: _Response, text: str) -> None:
        clauses: asyncio.Queue[str | None] = asyncio.Queue()
        chunker = ClauseChunker(self.config.chunker)
        for clause in [*chunker.push(text + " "), *chunker.flush()]:
            clauses.put_nowait(clause)
        clauses.put_nowait(None)
        response.text = text
        tts_task = self._spawn(self._tts(response, clauses))
        play_task = self._spawn(self._playout(response))
        response.tasks.update({tts_task, play_task})
        await asyncio.gather(tts_task, play_task)
        self._finish(response, "completed")

    async def _tts(self, response: _Response, clauses: asyncio.Queue[str | None]) -> None:
        """Synthesize clauses in order; audio goes to the playout queue at the output rate."""
        cfg = self.config
        trace = response.trace
        index = 0
        try:
            while (clause := await clauses.get()) is not None:
                self._emit(response, TextClause(response.id, clause, index))
                if not response.speak:
                    response.clauses.append((clause, 0))
                    index += 1
                    continue
                trace.mark("tts_start")
                stream = self._inference.synthesize(clause, cfg.voice)
                total = 0
                whole: list[np.ndarray] = []
                try:
                    async for chunk in stream:
                        out = resample(chunk.samples, chunk.sample_rate, cfg.output_sample_rate)
                        total += len(out)
                        if cfg.sequential:  # the baseline releases audio once all is made
                            whole.append(out)
                            continue
                        trace.mark("tts_first_audio")
                        response.audio.put_nowait((index, out))
                finally:
                    await stream.aclose()
                if whole:
                    trace.mark("tts_first_audio")
                    response.audio.put_nowait((index, np.concatenate(whole)))
                response.clauses.append((clause, total))
                index += 1
        except InferenceError as exc:
            self._fail(response, exc)
        finally:
            response.audio.put_nowait(None)

    async def _playout(self, response: _Response) -> None:
        """Release audio in `output_chunk_ms` pieces, at most `playback_lead_ms` ahead."""
        cfg = self.config
        rate = cfg.output_sample_rate
        step = max(1, cfg.output_chunk_ms * rate // 1000)
        await response.committed.wait()
        while (item := await response.audio.get()) is not None:
            index, samples = item
            for start in range(0, len(samples), step):
                piece = samples[start : start + step]
                if response.first_sent_at is not None:
                    ahead_ms = 1000.0 * response.sent_samples / rate - 1000.0 * (
                        self._clock() - response.first_sent_at
                    )
                    if ahead_ms > cfg.playback_lead_ms:
                        await asyncio.sleep((ahead_ms - cfg.playback_lead_ms) / 1000.0)
                if response.state is not ResponseState.ACTIVE:
                    return
                if response.first_sent_at is None:
                    response.first_sent_at = self._clock()
                    self._last_spoken = response
                    response.trace.mark("first_audio_sent", response.first_sent_at)
                response.sent_samples += len(piece)
                self._out.put_nowait(TTSAudio(response.id, float_to_pcm16(piece), rate, index))

    def _played_ms(self, response: _Response) -> int:
        if response.first_sent_at is None:
            return 0
        sent_ms = 1000.0 * response.sent_samples / self.config.output_sample_rate
        elapsed_ms = 1000.0 * (self._clock() - response.first_sent_at)
        return int(min(sent_ms, elapsed_ms))

    def _heard_text(self, response: _Response, played_ms: int) -> str:
        """The part of the reply whose audio was played, cut at a word boundary."""
        remaining = played_ms * self.config.output_sample_rate // 1000
        heard: list[str] = []
        for text, samples in response.clauses:
            if remaining >= samples:
                heard.append(text)
                remaining -= samples
                continue
            words = text.split()
            keep = int(len(words) * remaining / max(1, samples))
            if keep:
                heard.append(" ".join(words[:keep]))
            break
        return " ".join(heard)

    def _cancel_tasks(self, response: _Response) -> None:
        current = asyncio.current_task()
        for task in list(response.tasks):
            if task is not current:
                task.cancel()

    def _finish_cancelled(
        self, response: _Response, *, interrupted: bool, silent: bool = False
    ) -> None:
        was_active = response.state is ResponseState.ACTIVE
        response.state = ResponseState.CANCELLED
        self._cancel_tasks(response)
        if self._active is response:
            self._active = None
        if silent or not was_active:
            return
        played = self._played_ms(response)
        # Without audio the reader saw every token so far.
        heard = self._heard_text(response, played) if response.speak else response.text.strip()
        if response.user_text is not None or heard:
            self.add_message("assistant", heard)
        if interrupted:
            self.stats["interruptions"] += 1
            self._out.put_nowait(Interruption(response.id, heard, played))
        self._out.put_nowait(
            ResponseDone(
                response.id,
                "cancelled",
                heard,
                response.trace.spans(),
                response.usage,
                response.trace.timeline(),
            )
        )

    def _finish(self, response: _Response, status: ResponseStatus) -> None:
        if response.state is not ResponseState.ACTIVE:
            return
        response.state = ResponseState.DONE
        if self._active is response:
            self._active = None
        if response.text:
            self.add_message("assistant", response.text.strip())
        self._out.put_nowait(
            ResponseDone(
                response.id,
                status,
                response.text.strip(),
                response.trace.spans(),
                response.usage,
                response.trace.timeline(),
            )
        )

    def _fail(self, response: _Response, exc: InferenceError) -> None:
        log.warning("response %s failed: %s", response.id, exc)
        was = response.state
        response.state = ResponseState.CANCELLED
        self._cancel_tasks(response)
        if self._speculative is response:
            self._speculative = None
        if self._active is response:
            self._active = None
        if was is not ResponseState.CANCELLED:
            self._out.put_nowait(ErrorFrame(exc.code, str(exc)))
            self._out.put_nowait(
                ResponseDone(response.id, "failed", response.text, response.trace.spans())
            )


def _failed(item_id: str, result: Transcript) -> TranscriptFailed:
    reason = result.rejected or "empty"
    message = f"The speech could not be transcribed ({reason.replace('_', ' ')})."
    return TranscriptFailed(item_id, reason, message, result.audio_seconds)


__all__ = ["AudioFormatError", "CallConfig", "VoiceCall"]
