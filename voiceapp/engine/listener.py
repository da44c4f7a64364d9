"""The caller's side of a call: audio in, turns and transcripts out.

A `Listener` takes the caller's audio (any rate, mono or interleaved),
resamples it to 16 kHz, scores it with Silero VAD on 32 ms chunks and feeds
the turn detector. It keeps the utterance being spoken (with its prefix
padding), says when speech starts and stops, sends live captions (partial
transcripts) while the caller speaks, and reads each turn's final transcript.
When to answer is not its business: it tells the call through a small hooks
Protocol (`ListenerHooks`) that a turn paused, resumed or ended, and the call
decides what to do with its replies.

Speculation timing is kept here too: the call says when it started a
speculative reply and how long the turn detector should wait on its
transcript (`set_hint`); the listener says when the pause went on long enough
that a transcript which read as unfinished should be read again, and whether
faint speech came after the speculation started.

Manual turns (no automatic answer, or no turn detection at all) are
transcribed here as well: `commit_audio()` takes a client's committed buffer,
and `create_response()` waits for `pending()` transcriptions before it answers.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .asr import DEFAULT_ASR_MODEL, Transcript
from .audio import VAD_RATE, StreamResampler, check_rate, pcm16_to_float, resample, to_mono_float
from .frames import (
    Frame,
    SpeechStarted,
    SpeechStopped,
    TranscriptFailed,
    TranscriptFinal,
    TranscriptPartial,
)
from .inference import Inference, InferenceError
from .tasks import TaskOwner
from .tracing import TurnTrace
from .turns import TurnDetector, TurnEvent, TurnEventKind, TurnSettings, TurnState
from .vad import CHUNK_SAMPLES, SileroModel, StreamingVAD

log = logging.getLogger(__name__)

RESPECULATE_AFTER_MS = 300  # more silence before an "unfinished" pause is transcribed again
# A live caption reads the whole turn so far, so with a fixed interval a turn's captions
# cost the square of its length. The next caption waits at least this share of the
# turn so far (and `partial_interval_ms`): a 7 s question got 11 readings (32 s of
# audio read) where it got 19-22 (70-85 s) every 300 ms.
CAPTION_GROWTH = 0.25
# A pause inside a turn is read by the ASR as this long at most: half of it after the
# words before, half before the words after. tiny.en reads a turn with a long pause
# in it by chance: "What is the capital ... of Italy?" (0.7 s) lost "of Italy" at 6
# of 30 start offsets 4 ms apart, and at none with the pause cut to 256 ms
# (docs/QUALITY.md, "A pause inside a turn").
PAUSE_READ_MS = 256


@dataclass(frozen=True, slots=True)
class ListenerSettings:
    turns: TurnSettings
    language: str = "en"
    asr_model: str = DEFAULT_ASR_MODEL
    partial_interval_ms: int = 300  # 0 turns partial transcripts off
    prefix_padding_ms: int = 300
    max_utterance_s: float = 30.0
    pause_read_ms: int = PAUSE_READ_MS  # 0: a pause inside a turn is read whole


class ListenerHooks(Protocol):
    """What the listener tells the call (`VoiceCall` implements it)."""

    @property
    def speaking(self) -> bool:
        """Reply audio is going out: speech over it is not a turn until confirmed."""
        ...

    def heard(self, probability: float) -> None:
        """Each chunk's speech probability, before the turn detector reads it."""

    def heard_so_far(self, text: str) -> None:
        """A live caption read the turn in progress as `text` (already emitted)."""

    def turn_paused(self) -> None:
        """The caller paused in a turn that counts: a reply may be speculated."""

    def turn_resumed(self) -> None:
        """The caller went on talking after a pause."""

    def pause_lengthened(self) -> None:
        """A pause whose transcript read as unfinished went on: read it again (the
        call `expect_hint()`s; its speculation stands unless the words changed)."""

    def turn_ended(self, item_id: str, event: TurnEvent) -> None:
        """A turn that counts ended (`SpeechStopped` is already out)."""

    def user_said(self, text: str) -> None:
        """A transcript read outside a reply (manual turns, late ones) for the history."""


class Listener:
    """One call's input: VAD, turn detection, the utterance, partials and ASR."""

    def __init__(
        self,
        settings: ListenerSettings,
        inference: Inference,
        vad_model: SileroModel,
        emit: Callable[[Frame], None],
        tasks: TaskOwner,
        hooks: ListenerHooks,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._inference = inference
        self._emit = emit
        self._tasks = tasks
        self._hooks = hooks
        self._clock = clock
        self._vad = StreamingVAD(vad_model)
        self._detector = TurnDetector(settings.turns)
        self._resampler: StreamResampler | None = None
        self._transcribing = TaskOwner("transcribing")  # manual turns in ASR
        self.closed = False
        # Input clock and the current turn.
        self._chunks = 0
        self._pending16 = np.zeros(0, dtype=np.float32)
        self._recent = np.zeros(0, dtype=np.float32)  # last prefix_padding_ms, for turn starts
        self._utterance: list[np.ndarray] = []
        self._utterance_quiet: list[bool] = []  # per piece of the utterance: clearly no speech
        self._utterance_samples = 0
        self.item_id: str | None = None
        self._speech_start_ms = 0
        self.announced = False  # SpeechStarted is out: the turn counts
        self.last_voiced_at: float | None = None
        self._partial_task: asyncio.Task[None] | None = None
        self._partial_at_samples = 0
        # Speculation timing.
        self._last_sound_chunk = -1  # last chunk that might hold speech (not clearly quiet)
        self._speculated_at_chunk = -1
        self._unfinished = False  # the speculation's transcript read as unfinished
        self._respeculated = False

    def update(self, settings: ListenerSettings) -> None:
        self.settings = settings
        self._detector.settings = settings.turns

    # ----- audio in ------------------------------------------------------------

    def push_samples(self, samples: np.ndarray, sample_rate: int) -> None:
        """Feed float or int audio, 1-D or (frames, channels). Raises AudioFormatError."""
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

    def _on_chunk(self, chunk: np.ndarray) -> None:
        now = self._clock()
        prob = self._vad.process(chunk)[0]
        self._chunks += 1
        turns = self.settings.turns
        quiet = prob < quiet_below(turns.threshold)
        if self._detector.state is not TurnState.IDLE:
            self._utterance.append(chunk)
            self._utterance_quiet.append(quiet)
            self._utterance_samples += len(chunk)
        else:
            keep = int(self.settings.prefix_padding_ms * VAD_RATE / 1000)
            keep += turns.min_speech_ms * VAD_RATE // 1000 + CHUNK_SAMPLES
            self._recent = np.concatenate([self._recent, chunk])[-keep:]
        if prob >= turns.threshold:
            self.last_voiced_at = now
        if not quiet:
            self._last_sound_chunk = self._chunks
        self._hooks.heard(prob)
        for event in self._detector.push(prob):
            self._on_turn_event(event)
        self._maybe_respeculate()
        if prob >= turns.threshold:
            self._maybe_partial()

    def _on_turn_event(self, event: TurnEvent) -> None:
        kind = event.kind
        if kind is TurnEventKind.SPEECH_STARTED:
            self.item_id = f"item_{uuid.uuid4().hex[:20]}"
            self._speech_start_ms = event.audio_ms
            # The detected speech and its prefix padding are in the recent-audio buffer.
            self._utterance = [self._recent.copy()]
            self._utterance_quiet = [False]
            self._utterance_samples = len(self._recent)
            self._recent = np.zeros(0, dtype=np.float32)
            self._partial_at_samples = 0
            self.announced = False
            if not self._hooks.speaking:
                self.announce()
        elif kind is TurnEventKind.PAUSED:
            self._respeculated = False
            self._unfinished = False
            if self.announced:
                self._hooks.turn_paused()
        elif kind is TurnEventKind.RESUMED:
            self._unfinished = False
            self._hooks.turn_resumed()
        elif kind is TurnEventKind.END_OF_TURN:
            self._end_of_turn(event)

    def announce(self) -> None:
        """Say the turn started (`SpeechStarted`): from now on it counts.

        Speech over a reply is announced only once it is confirmed as a barge-in
        (the call calls this), so an echo or a cough never makes a turn."""
        if self.item_id is None or self.announced:
            return
        self.announced = True
        start_ms = max(0, self._speech_start_ms - self.settings.prefix_padding_ms)
        self._emit(SpeechStarted(self.item_id, start_ms))

    def _end_of_turn(self, event: TurnEvent) -> None:
        item_id = self.item_id
        if item_id is None:
            return
        if self.announced:
            self._emit(SpeechStopped(item_id, event.audio_ms))
            self._hooks.turn_ended(item_id, event)
        self._unfinished = False
        self._reset_utterance()

    def _reset_utterance(self) -> None:
        self._utterance = []
        self._utterance_quiet = []
        self._utterance_samples = 0
        self.item_id = None
        self.announced = False
        if self._partial_task is not None:
            self._partial_task.cancel()
            self._partial_task = None

    def utterance_audio(self) -> np.ndarray:
        """The turn so far at 16 kHz, as the ASR reads it: its prefix padding included,
        each pause between its words cut to `pause_read_ms`, at most max_utterance_s."""
        pieces = self._utterance
        if self.settings.pause_read_ms > 0:
            keep = max(2, self.settings.pause_read_ms * VAD_RATE // 1000 // CHUNK_SAMPLES)
            pieces = shorten_pauses(pieces, self._utterance_quiet, keep)
        audio = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        return audio[-int(self.settings.max_utterance_s * VAD_RATE) :]

    # ----- speculation timing --------------------------------------------------

    def speculation_started(self) -> None:
        """The call speculates on the turn as heard up to now."""
        self._speculated_at_chunk = self._chunks
        self._unfinished = False

    def sound_since_speculation(self) -> bool:
        """Faint speech came after the speculation started: its transcript may miss words."""
        return self._last_sound_chunk > self._speculated_at_chunk

    def expect_hint(self) -> None:
        """The end of the turn waits for a verdict on the speculation's transcript."""
        self._detector.expect_hint()

    def set_hint(self, wait_ms: int | None) -> None:
        """How long the pause must last to end the turn (None: the plain wait).

        A wait longer than the plain one means the transcript read as unfinished:
        once the pause has gone on `RESPECULATE_AFTER_MS` more, the turn is read
        again (`ListenerHooks.pause_lengthened`). The turn may end at once."""
        self._unfinished = wait_ms is not None and wait_ms > self.settings.turns.end_of_turn_ms
        self._detector.set_hint(wait_ms)
        event = self._detector.check_end_of_turn()
        if event is not None:
            self._end_of_turn(event)

    def clear_hint(self) -> None:
        """No verdict will come (the transcript failed): the plain wait applies."""
        self._unfinished = False
        self._detector.set_hint(None)

    def _maybe_respeculate(self) -> None:
        """Whisper often drops the last word when the audio stops right after it; with
        a few hundred ms more of silence the same turn often reads as finished,
        and the shorter end-of-turn wait applies again."""
        respeculate_ms = self.settings.turns.pause_ms + RESPECULATE_AFTER_MS
        if (
            not self._unfinished
            or self._respeculated
            or self._detector.silence_ms() < respeculate_ms
        ):
            return
        self._respeculated = True
        self._unfinished = False
        self._hooks.pause_lengthened()

    # ----- transcripts ---------------------------------------------------------

    def _maybe_partial(self) -> None:
        """Transcribe the turn so far for live captions, every `partial_interval_ms`.

        Called on voiced chunks only: a partial started in the quiet that may be the
        end of the turn would still be running when the pause starts the final
        transcript, and the two would share the worker's cores on its critical path.
        """
        cfg = self.settings
        if (
            cfg.partial_interval_ms <= 0
            or self._detector.state is not TurnState.SPEAKING
            or not self.announced
            or (self._partial_task is not None and not self._partial_task.done())
        ):
            return
        step = max(
            cfg.partial_interval_ms * VAD_RATE // 1000,
            int(CAPTION_GROWTH * self._partial_at_samples),
        )
        if self._utterance_samples - self._partial_at_samples < step:
            return
        self._partial_at_samples = self._utterance_samples
        item_id = self.item_id
        audio = self.utterance_audio()

        async def partial() -> None:
            try:
                result = await self._inference.transcribe(
                    audio, cfg.language, cfg.asr_model, partial=True
                )
            except InferenceError as exc:
                log.warning("partial transcript failed: %s", exc)
                return
            if result.text and item_id is not None and item_id == self.item_id:
                self._emit(TranscriptPartial(item_id, result.text))
                self._hooks.heard_so_far(result.text)

        self._partial_task = self._spawn(partial())

    async def transcribe(
        self,
        audio: np.ndarray,
        trace: TurnTrace,
        *,
        item_id: str | None,
        keep_if_cancelled: Callable[[], bool],
    ) -> Transcript:
        """A turn's final transcript, read in a task of the listener's own.

        A reply cancelled while its turn's words are still being read (the caller
        went on talking: barge-in) keeps the transcript when `keep_if_cancelled()`
        says the turn was committed: it is emitted when it comes, so the turn
        does not vanish. Otherwise the request is dropped.
        """
        trace.mark("asr_start")
        read: list[Transcript] = []

        async def run() -> None:
            cfg = self.settings
            read.append(await self._inference.transcribe(audio, cfg.language, cfg.asr_model))

        task = self._spawn(run())
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if item_id and keep_if_cancelled() and not self.closed:
                task.add_done_callback(lambda t: self._late_transcript(item_id, t, read))
            else:
                task.cancel()
            raise
        trace.mark("asr_end")
        trace.asr_queue_ms = read[0].queue_ms
        trace.asr_reads = read[0].reads
        return read[0]

    def _late_transcript(
        self, item_id: str, task: asyncio.Task[None], read: list[Transcript]
    ) -> None:
        if task.cancelled() or self.closed:
            return
        exc = task.exception()
        if exc is not None:
            code = exc.code if isinstance(exc, InferenceError) else "asr_failed"
            self._emit(TranscriptFailed(item_id, code, str(exc), 0.0))
        else:
            self._transcribed(item_id, read[0])

    def transcribe_turn(self) -> None:
        """Manual answers: the ended turn's words go to the history; no reply until asked."""
        if self.item_id is not None:
            self._transcribe_only(self.item_id, self.utterance_audio())

    def commit_audio(self, pcm: bytes, sample_rate: int, item_id: str | None = None) -> str:
        """A client's committed input buffer (PCM16 mono) as a user turn: transcribed
        in the background (`pending()`), reported as `TranscriptFinal` or
        `TranscriptFailed`, and added to the history. Returns the turn's item id."""
        check_rate(sample_rate)
        item = item_id or f"item_{uuid.uuid4().hex[:20]}"

        async def to_asr() -> np.ndarray:  # seconds of audio: off the loop
            return await asyncio.to_thread(_asr_audio, pcm, sample_rate)

        self._transcribe_only(item, to_asr())
        return item

    def pending(self) -> list[asyncio.Task[Any]]:
        """Manual turns still being transcribed."""
        return self._transcribing.pending()

    def _transcribe_only(
        self, item_id: str, audio: np.ndarray | Coroutine[Any, Any, np.ndarray]
    ) -> None:
        async def run() -> None:
            samples = audio if isinstance(audio, np.ndarray) else await audio
            cfg = self.settings
            try:
                result = await self._inference.transcribe(samples, cfg.language, cfg.asr_model)
            except InferenceError as exc:
                self._emit(TranscriptFailed(item_id, exc.code, str(exc), 0.0))
                return
            self._transcribed(item_id, result)

        self._transcribing.add(self._spawn(run()))

    def _transcribed(self, item_id: str, result: Transcript) -> None:
        if result.text:
            self._emit(TranscriptFinal(item_id, result.text, result.audio_seconds))
            self._hooks.user_said(result.text)
        else:
            self._emit(failed_transcript(item_id, result))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._tasks.spawn(coro)


def quiet_below(threshold: float) -> float:
    """The VAD probability under which a chunk clearly holds no speech (not even faint)."""
    return max(0.2, threshold - 0.3)


def shorten_pauses(pieces: list[np.ndarray], quiet: list[bool], keep: int) -> list[np.ndarray]:
    """`pieces` with each run of more than `keep` quiet ones between sounds cut to `keep`:
    the first half of the run and its last half stay. A quiet run at the end (the
    pause that may end the turn) is kept whole."""
    out: list[np.ndarray] = []
    run: list[np.ndarray] = []
    for piece, is_quiet in zip(pieces, quiet, strict=True):
        if is_quiet:
            run.append(piece)
            continue
        if len(run) > keep:
            run = run[: keep // 2] + run[len(run) - (keep - keep // 2) :]
        out += run
        out.append(piece)
        run = []
    return out + run


def failed_transcript(item_id: str, result: Transcript) -> TranscriptFailed:
    """A transcript with no words (noise, or a reading Whisper rejected)."""
    reason = result.rejected or "empty"
    message = f"The speech could not be transcribed ({reason.replace('_', ' ')})."
    return TranscriptFailed(item_id, reason, message, result.audio_seconds)


def _asr_audio(pcm: bytes, sample_rate: int) -> np.ndarray:
    samples = pcm16_to_float(pcm, 1)
    return samples if sample_rate == VAD_RATE else resample(samples, sample_rate, VAD_RATE)
