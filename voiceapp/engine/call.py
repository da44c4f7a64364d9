"""The call loop: one `VoiceCall` per conversation.

A transport pushes input audio (PCM16, any rate, mono or interleaved) with
`push_audio()` and reads typed frames from `frames()`. Inside, audio is
resampled to 16 kHz, scored by Silero VAD on 32 ms chunks and fed to the turn
detector. On a pause the call starts a *speculative* response (final ASR,
LLM, clause chunking, TTS) whose output is held back; at end of turn it is
committed and released, or it is cancelled if the user resumes. How long
the silence must last depends on whether the pause's transcript reads as a
finished turn (lexical cues and the LLM's end-of-turn probability, `eou.py`).
Reply audio is released paced against real time (`playback_lead_ms` ahead):
speech over it pauses the release at once, and either confirms the
interruption (the rest is flushed and the history keeps only what was heard)
or turns out to be a cough and the reply resumes where it paused.

The call is the orchestrator: it decides when a response starts, is
committed, finishes, is cancelled or fails. How a response's state changes and
which frames that releases is `response.py`; what a reply says (the prompt,
a fact spoken as written, the LLM's clauses through the reply guard) is
`writer.py`; how its clauses are synthesized and its audio released is
`speaker.py`; what the models read ahead while a
reply plays is `readahead.py`; the conversation and what the LLM is sent of it
is `history.py`; every task it starts has an owner (`tasks.py`), and `close()`
cancels them all.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

import numpy as np

from .asr import DEFAULT_ASR_MODEL, Transcript
from .audio import (
    VAD_RATE,
    AudioFormatError,
    StreamResampler,
    check_rate,
    pcm16_to_float,
    to_mono_float,
)
from .chunker import ChunkerSettings, ClauseChunker
from .frames import (
    ErrorFrame,
    Frame,
    ResponseStarted,
    ResponseStatus,
    SpeechStarted,
    SpeechStopped,
    TranscriptFailed,
    TranscriptFinal,
    TranscriptPartial,
)
from .history import History
from .inference import Inference, InferenceError
from .knowledge import Fact
from .llm import LLMOptions, Message
from .prompt import DEFAULT_DECLINE, DEFAULT_REPLY_HINT, MESSAGE_DECLINE, PromptBuilder
from .readahead import ReadAhead, ReadAheadSettings
from .response import Response, ResponseState
from .speaker import ReplySpeaker, SpeakerSettings, Speech
from .tasks import TaskOwner
from .tools import ToolSpec
from .tracing import TurnTrace
from .tts import VoiceSpec
from .turns import (
    BargeInDetector,
    BargeInKind,
    BargeInSettings,
    TurnDetector,
    TurnEvent,
    TurnEventKind,
    TurnSettings,
    TurnState,
    end_of_turn_wait_ms,
    sentence_completeness,
    unfinished_by_words,
)
from .vad import CHUNK_SAMPLES, SileroModel, StreamingVAD
from .writer import ReplyWriter, WriterSettings

log = logging.getLogger(__name__)

RESPECULATE_AFTER_MS = 300  # more silence before an "unfinished" pause is transcribed again
TRANSCRIPT_WAIT_S = 10.0  # how long a requested reply waits for a turn still being transcribed
EOU_WAIT_S = 0.5  # an end-of-turn score later than this is not waited for (lexical hint only)


@dataclass(frozen=True, slots=True)
class CallConfig:
    """Everything a call needs, as plain values (built from a persona by the Django side)."""

    voice: VoiceSpec
    instructions: str = "You are a helpful voice assistant."
    facts: tuple[Fact, ...] = ()  # the persona's knowledge: retrieved per caller turn
    reply_hint: str = DEFAULT_REPLY_HINT
    # Grounded prompting (facts next to the question, worked examples, declines) and
    # the reply guard (loops, language, invented numbers, sentence cap). False gives
    # the plain prompt of earlier versions: the baseline of the quality benchmark.
    grounding: bool = True
    # A caller turn that facts answer gets them as written, without the LLM: a small
    # model (the embedded default) rephrases facts wrongly too often. Off for a
    # persona's own (larger) LLM endpoint, which phrases the retrieved facts itself.
    direct_answers: bool = True
    # The LLM is the embedded one (False: a persona's own endpoint, which bills per
    # request): only it is asked to read ahead (readahead.py).
    embedded_llm: bool = True
    max_sentences: int = 3
    # The persona's own actions (sessions/actions.py): tools the server runs, offered
    # to the LLM beside a client's tools (to_call_config puts both in `llm.tools`).
    actions: tuple[ToolSpec, ...] = ()
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
    barge_in_min_ms: int = 250  # speech over the reply that confirms an interruption
    barge_in_threshold: float = 0.7
    barge_in_onset_ms: int = 64  # speech that pauses the reply until confirmed; 0: no pause
    barge_in_resume_ms: int = 600  # no speech this long after a pause: play on (a cough)
    # History kept for the LLM, in characters (~4 per token). Past the budget the
    # oldest turns are dropped down to half of it at once, so the prompt's prefix (and
    # the LLM's KV cache of it) stays the same for many turns instead of shifting each turn.
    history_budget_chars: int = 2000
    max_utterance_s: float = 30.0
    asr_model: str = DEFAULT_ASR_MODEL  # a packaged Whisper by name (asr.ASR_MODELS)

    @property
    def takes_messages(self) -> bool:
        return any(action.name == "take_message" for action in self.actions)

    @property
    def decline_text(self) -> str:
        """What the agent says when it will not answer: it offers a message only
        when it can take one."""
        return MESSAGE_DECLINE if self.takes_messages else DEFAULT_DECLINE


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
        self._barge = BargeInDetector(_barge_in_settings(config))
        self._paused: Response | None = None  # the reply held by a barge-in onset
        self._resampler: StreamResampler | None = None
        self._out: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._history = History()
        self._tasks = TaskOwner("call")
        self._speaker = ReplySpeaker(
            _speaker_settings(config),
            inference,
            self._out.put_nowait,
            self._tasks,
            fail=self._fail,
            clock=clock,
        )
        self._read_ahead = ReadAhead(
            _read_ahead_settings(config),
            inference,
            self._history,
            lambda: self._writer.messages(None),
            self._tasks,
            call_id=self.call_id,
        )
        self._writer = ReplyWriter(
            _writer_settings(config),
            _prompt_builder(config),
            inference,
            self._history,
            before_llm=self._read_ahead.wait_llm,
            session=self.call_id,
        )
        self._transcribing = TaskOwner("transcribing")  # manual-mode turns in ASR
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
        self._last_sound_chunk = -1  # last chunk that might hold speech (not clearly quiet)
        self._speculated_at_chunk = -1
        self._respeculated = False
        # Responses.
        self._speculative: Response | None = None
        self._active: Response | None = None
        self.stats = {
            "speculative_started": 0,
            "speculative_cancelled": 0,
            "interruptions": 0,
            "barge_in_pauses": 0,
            "false_interruptions": 0,
            "history_trims": 0,
        }

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

    @property
    def history(self) -> list[Message]:
        """The conversation so far: `{"role", "content"}` dicts, oldest first."""
        return self._history.messages

    def add_message(self, role: str, text: str) -> None:
        """Add a conversation item (role user, assistant or system) to the history."""
        # the caller's words go to the LLM with their facts
        sent = self._writer.sent_form(text) if role == "user" else None
        self._history.add(role, text, sent=sent)

    def add_tool_output(self, call_id: str, output: str) -> str | None:
        """The output of a tool call the LLM made (`ToolCallMade`), for the next reply
        to read. Returns the tool's name; None when the history holds no such call."""
        return self._history.add_output(call_id, output)

    def trim_history(self, max_messages: int) -> None:
        """Keep only the latest `max_messages` messages of the history."""
        self._history.keep_last(max_messages)

    def update_config(self, config: CallConfig) -> None:
        """Apply new settings (instructions, voice, turn detection ...) from the next turn on."""
        previous = self.config
        self.config = config
        self._detector.settings = config.turns
        self._writer.settings = _writer_settings(config)
        self._writer.prompt = _prompt_builder(config)
        self._barge.settings = _barge_in_settings(config)
        self._speaker.settings = _speaker_settings(config)
        self._read_ahead.settings = _read_ahead_settings(config)
        prompt_of = attrgetter("instructions", "facts", "grounding", "reply_hint")
        idle = self._active is None and self._speculative is None
        if idle and prompt_of(config) != prompt_of(previous):
            self.prepare()  # the new prompt is read before the caller's next turn

    def prepare(self) -> None:
        """Have the models read the call's prompt before the caller speaks.

        A greeting does this as it plays (`_prepare_next_turn`); without one, the
        caller's first turn would read the whole system prompt (instructions,
        worked examples) on its critical path: 300-700 ms of LLM first token on a
        2-core CPU, against 100-200 ms for later turns. The end-of-turn scorer
        reads its opening prompt too. Only the embedded LLM is warmed: a
        persona's own endpoint would bill the tenant for the read
        (`ReadAhead.opening`).
        """
        self._read_ahead.opening()

    def create_response(
        self,
        *,
        instructions: str | None = None,
        max_output_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> str:
        """Answer the history now (manual turns, `response.create`). Returns the response id."""
        self.cancel_response()
        response = self._new_response(None, speculative=False)
        self._active = response
        response.emit(ResponseStarted(response.id))
        llm = self.config.llm
        if max_output_tokens:
            llm = replace(llm, max_tokens=max_output_tokens)
        if tool_choice is not None:
            llm = replace(llm, tool_choice=tool_choice)
        self._spawn_response(response, self._reply_after_transcripts(response, llm, instructions))
        return response.id

    async def _reply_after_transcripts(
        self, response: Response, options: LLMOptions, instructions: str | None
    ) -> None:
        """Manual mode: a turn still being transcribed belongs in the prompt."""
        pending = self._transcribing.pending()
        if pending:
            await asyncio.wait(pending, timeout=TRANSCRIPT_WAIT_S)
        await self._reply(response, options, instructions)

    def say(self, text: str) -> str:
        """Speak fixed text (a greeting) as a response, without the LLM."""
        self.cancel_response()
        response = self._new_response(None, speculative=False)
        self._active = response
        response.emit(ResponseStarted(response.id))
        self._spawn_response(response, self._speak_text(response, text))
        return response.id

    def cancel_response(self) -> None:
        """Stop the active response now (`response.cancel`); no-op when idle."""
        if self._active is not None and self._active.active:
            self._finish_cancelled(self._active, interrupted=False)

    def truncate(self, audio_end_ms: int) -> str:
        """Cut the last reply in the history to what its first `audio_end_ms` said."""
        response = self._speaker.last_spoken
        if response is None:
            return ""
        heard = response.heard_text(max(0, audio_end_ms))
        self._history.truncate_reply(heard)
        return heard

    async def close(self, wait_s: float = 2.0) -> None:
        """Cancel everything the call started and end `frames()`.

        A reply still going out (the caller hung up over it) is cut off as a
        barge-in cuts it: `Interruption` and a cancelled `ResponseDone` holding
        the words already played go out before `frames()` ends, and the history
        keeps those words.
        """
        if self._closed:
            return
        self._closed = True
        if self._active is not None:
            self._finish_cancelled(self._active, interrupted=True)
        for response in (self._speculative, self._active):
            if response is not None:
                response.tasks.cancel()
        await self._tasks.cancel_all(wait_s)
        self._out.put_nowait(None)

    @property
    def speaking(self) -> bool:
        """True while reply audio is being released."""
        r = self._active
        return r is not None and r.active and r.first_sent_at is not None

    # ----- input side --------------------------------------------------------

    def _on_chunk(self, chunk: np.ndarray) -> None:
        now = self._clock()
        prob = self._vad.process(chunk)[0]
        self._chunks += 1
        detector = self._detector
        if detector.state is not TurnState.IDLE:
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
        if prob >= self.config.turns.threshold:
            self._maybe_partial()

    def _check_barge_in(self, prob: float) -> None:
        """Speech over the reply: pause it on the onset, then cancel it or play on."""
        response = self._active
        if not (self.config.interruptions_enabled and self.speaking) or response is None:
            self._barge.reset()
            if self._paused is not None:
                self._resume(self._paused)
            return
        kind = self._barge.push(prob)
        if kind is BargeInKind.PAUSE:
            self._pause(response)
        elif kind is BargeInKind.RESUME:
            self.stats["false_interruptions"] += 1
            self._resume(response)
        elif kind is BargeInKind.CONFIRM:
            self._paused = None
            # The protocol's order: speech_started, then the cancelled response.
            if self._item_id is not None and not self._speech_announced:
                self._announce_speech()
            self._finish_cancelled(response, interrupted=True)
            self.stats["interruptions"] += 1

    def _pause(self, response: Response) -> None:
        """Hold the reply on a barge-in onset until it is confirmed or turns out a cough."""
        self.stats["barge_in_pauses"] += 1
        self._speaker.pause(response)
        self._paused = response

    def _resume(self, response: Response) -> None:
        """Play the held reply on from where it paused (the speech was a cough, or ended)."""
        self._paused = None
        self._speaker.resume(response)

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
        self._detector.expect_hint()
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
        """Transcribe the turn so far for live captions, every `partial_interval_ms`.

        Called on voiced chunks only: a partial started in the quiet that may be the
        end of the turn would still be running when the pause starts the final
        transcript, and the two would share the worker's cores on its critical path.
        """
        cfg = self.config
        if (
            cfg.partial_interval_ms <= 0
            or self._detector.state is not TurnState.SPEAKING
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

    def _new_response(self, item_id: str | None, *, speculative: bool) -> Response:
        return Response(
            f"resp_{uuid.uuid4().hex[:20]}",
            item_id,
            TurnTrace(clock=self._clock),
            self._out.put_nowait,
            speculative=speculative,
            speak=self.config.speak,
            sample_rate=self.config.output_sample_rate,
            clock=self._clock,
        )

    def _start_turn_response(self, *, speculative: bool) -> Response | None:
        if not self.config.create_response and not speculative:
            # Manual mode: transcribe only; the transport calls create_response().
            task = self._spawn(self._transcribe_only(self._item_id, self._utterance_audio()))
            self._transcribing.add(task)
            return None
        if not self.config.create_response:
            return None
        response = self._new_response(self._item_id, speculative=True)
        audio = self._utterance_audio()
        if speculative:
            self._speculative = response
            self._speculated_at_chunk = self._chunks
            self.stats["speculative_started"] += 1
        self._spawn_response(response, self._turn(response, audio))
        return response

    def _commit(self, response: Response) -> None:
        """Release a speculative response: its held frames go out, audio may start.

        One response at a time: the active one (a greeting, an answer still playing)
        is cancelled, but only once this turn's transcript is known to hold words,
        so a cough or a noise does not silence the agent.
        """
        if response.state is not ResponseState.SPECULATIVE:
            return
        if response.empty:
            response.discard(report=TranscriptFailed)  # a rejected turn is reported
            return
        previous = self._active
        if previous is not None and previous.active:
            if response.user_text:
                self._finish_cancelled(previous, interrupted=False)
            else:
                response.supersedes = previous
        response.commit()
        self._active = response
        if response.user_text:
            self.add_message("user", response.user_text)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._tasks.spawn(coro)

    def _spawn_response(self, response: Response, coro: Coroutine[Any, Any, None]) -> None:
        response.tasks.add(self._spawn(coro))

    async def _transcribe(self, response: Response, audio: np.ndarray) -> Transcript | None:
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
        response.trace.asr_queue_ms = read[0].queue_ms
        response.trace.asr_reads = read[0].reads
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

    async def _turn(self, response: Response, audio: np.ndarray) -> None:
        """Final ASR, then the reply; speculative until committed."""
        # The turn waits for this transcript's verdict (the punctuation rule never did).
        judging = self._speculative is response and self.config.turns.hint_source == "eou"
        if judging:
            self._detector.expect_hint()
        try:
            result = await self._transcribe(response, audio)
        except InferenceError as exc:
            if judging and self._speculative is response:
                self._detector.set_hint(None)
            if response.item_id:
                response.emit(TranscriptFailed(response.item_id, exc.code, str(exc), 0.0))
            self._fail(response, exc)
            return
        assert result is not None
        if response.state is ResponseState.SPECULATIVE and self._speculative is response:
            self._judge_turn(response, result.text)
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
                response.emit(_failed(response.item_id, result))
            if response.active:
                response.discard()
                if self._active is response:
                    # Noise, not words: what was playing before goes on.
                    live = previous is not None and previous.active
                    self._active = previous if live else None
            return
        if previous is not None and previous.active:
            self._finish_cancelled(previous, interrupted=False)
        response.user_text = result.text
        if response.item_id:
            response.emit(TranscriptFinal(response.item_id, result.text, result.audio_seconds))
        response.emit(ResponseStarted(response.id))
        pending_user_text: str | None = result.text
        if response.active:  # committed before the transcript came
            self.add_message("user", result.text)
            pending_user_text = None
        await self._reply(response, self.config.llm, None, user_text=pending_user_text)

    def _judge_turn(self, response: Response, text: str) -> None:
        """Set the end-of-turn hint of the pause `response` speculates on.

        Unfinished by its words: at once. Otherwise the end-of-turn model scores it
        alongside the reply's generation, and the turn waits for the verdict.
        """
        turns = self.config.turns
        if turns.hint_source == "punctuation":
            self._set_hint(response, turns.wait_ms(sentence_completeness(text)))
        elif not text.strip() or unfinished_by_words(text):
            self._set_hint(response, end_of_turn_wait_ms(text, None, turns))
        else:
            self._spawn_response(response, self._score_turn(response, text))

    async def _score_turn(self, response: Response, text: str) -> None:
        previous = self._history.last("assistant") or ""
        response.trace.mark("eou_start")
        probability: float | None = None
        try:
            probability = await asyncio.wait_for(
                self._inference.end_of_turn(text, previous), EOU_WAIT_S
            )
        except (InferenceError, TimeoutError) as exc:
            log.info("end-of-turn score unavailable (%s): lexical hint only", exc or "timeout")
        response.trace.mark("eou_end")
        response.eou_probability = probability
        if response.state is ResponseState.SPECULATIVE and self._speculative is response:
            wait_ms = end_of_turn_wait_ms(text, probability, self.config.turns)
            self._set_hint(response, wait_ms)

    def _set_hint(self, response: Response, wait_ms: int) -> None:
        # Waiting longer than the plain wait: the transcript is read again (_maybe_respeculate).
        response.incomplete = wait_ms > self.config.turns.end_of_turn_ms
        self._detector.set_hint(wait_ms)
        event = self._detector.check_end_of_turn()
        if event is not None:
            self._end_of_turn(event)

    async def _reply(
        self,
        response: Response,
        options: LLMOptions,
        instructions: str | None,
        user_text: str | None = None,
    ) -> None:
        """LLM -> clause chunker -> TTS -> paced playout, in parallel."""
        speech = self._speaker.start(response)
        try:
            direct = await self._writer.write(response, speech, options, instructions, user_text)
        except InferenceError as exc:
            speech.end()
            self._fail(response, exc)
            return
        speech.end()
        await self._play_to_end(response, speech, direct=direct)

    async def _play_to_end(self, response: Response, speech: Speech, *, direct: bool) -> None:
        """Let a reply whose clauses are all said finish, then complete it."""
        # Once the reply is synthesized (so as not to compete with it), the models read
        # what the next turn will need while the caller listens.
        await speech.synthesized()
        self._prepare_next_turn(response, direct=direct)
        await speech.finished()
        self._finish(response, "completed")

    def _prepare_next_turn(self, response: Response, *, direct: bool) -> None:
        """While a reply plays, have the models read what the caller's next turn needs.

        Only for a reply still going out with words in it (`ReadAhead.next_turn`:
        the scorer reads the reply, a history near its budget is trimmed, the LLM
        reads the prompt when it changed or the reply never went through it).
        """
        reply = response.text.strip()
        if not reply or response.state is not ResponseState.ACTIVE:
            return
        if self._read_ahead.next_turn(reply, direct=direct):
            self.stats["history_trims"] += 1

    async def _speak_text(self, response: Response, text: str) -> None:
        """Speak fixed text (a greeting) clause by clause, as a reply that needs no LLM."""
        speech = self._speaker.start(response)
        chunker = ClauseChunker(self.config.chunker)
        for clause in [*chunker.push(text + " "), *chunker.flush()]:
            speech.say(clause)
        speech.end()
        response.text = text
        await self._play_to_end(response, speech, direct=True)

    def _finish_cancelled(
        self, response: Response, *, interrupted: bool, silent: bool = False
    ) -> None:
        """Cancel a response; an announced one keeps what was heard in the history."""
        cancelled = response.cancel(interrupted=interrupted, announce=not silent)
        if self._active is response:
            self._active = None
        if cancelled is None:
            return
        if response.user_text is not None or cancelled.heard:
            self.add_message("assistant", cancelled.heard)
        self._keep_calls(response)

    def _finish(self, response: Response, status: ResponseStatus) -> None:
        if response.done(status) is None:
            return
        if self._active is response:
            self._active = None
        if response.text:
            reply = response.text.strip()
            self.add_message("assistant", reply)
            self._read_ahead.reply_kept(reply)
        self._keep_calls(response)

    def _keep_calls(self, response: Response) -> None:
        """The tool calls a reply made go into the history after its words."""
        for call in response.tool_calls:
            self._history.add_call(call)

    def _fail(self, response: Response, exc: InferenceError) -> None:
        """End a response on an error (silently while it is still speculative)."""
        response.fail(exc)
        if self._speculative is response:
            self._speculative = None
        if self._active is response:
            self._active = None


def _barge_in_settings(config: CallConfig) -> BargeInSettings:
    return BargeInSettings(
        threshold=config.barge_in_threshold,
        onset_ms=config.barge_in_onset_ms,
        confirm_ms=config.barge_in_min_ms,
        resume_ms=config.barge_in_resume_ms,
    )


def _speaker_settings(config: CallConfig) -> SpeakerSettings:
    return SpeakerSettings(
        voice=config.voice,
        sample_rate=config.output_sample_rate,
        chunk_ms=config.output_chunk_ms,
        lead_ms=config.playback_lead_ms,
        sequential=config.sequential,
    )


def _read_ahead_settings(config: CallConfig) -> ReadAheadSettings:
    return ReadAheadSettings(
        llm=config.llm,
        end_of_turn_model=config.turns.hint_source == "eou",
        embedded_llm=config.embedded_llm,
        history_budget_chars=config.history_budget_chars,
        direct_answers=config.grounding and config.direct_answers,
    )


def _prompt_builder(config: CallConfig) -> PromptBuilder:
    return PromptBuilder(
        instructions=config.instructions,
        facts=config.facts if config.grounding else (),
        reply_hint=config.reply_hint,
        language=config.language,
        derive_facts=config.grounding,
        direct_min_score=0.0 if config.grounding and config.direct_answers else None,
        decline=config.decline_text,
        takes_messages=config.takes_messages,
    )


def _writer_settings(config: CallConfig) -> WriterSettings:
    return WriterSettings(
        chunker=config.chunker,
        history_budget_chars=config.history_budget_chars,
        grounding=config.grounding,
        max_sentences=config.max_sentences,
        language=config.language,
        decline=config.decline_text,
        sequential=config.sequential,
        rule_actions=config.actions if config.direct_answers else (),
    )


def _failed(item_id: str, result: Transcript) -> TranscriptFailed:
    reason = result.rejected or "empty"
    message = f"The speech could not be transcribed ({reason.replace('_', ' ')})."
    return TranscriptFailed(item_id, reason, message, result.audio_seconds)


__all__ = ["AudioFormatError", "CallConfig", "VoiceCall"]
