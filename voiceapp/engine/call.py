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
committed, finishes, is cancelled or fails. The caller's side (VAD, turn
detection, the utterance, partials, final and manual transcripts, when a
speculation is read again) is `listener.py`, which calls back through its
hooks; which reply is speculative, active or paused is `slots.py`. How a
response's state changes and which frames that releases is `response.py`;
what a reply says (the prompt, a fact spoken as written, the LLM's clauses
through the reply guard) is `writer.py`; how its clauses are synthesized and
its audio released is `speaker.py`; what the models read ahead while a reply
plays is `readahead.py`; the conversation and what the LLM is sent of it is
`history.py`; every task it starts has an owner (`tasks.py`), and `close()`
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
from .audio import AudioFormatError, pcm16_to_float
from .chunker import ChunkerSettings, ClauseChunker
from .embedder import shared_encoder
from .frames import Frame, ResponseStarted, ResponseStatus, TranscriptFailed, TranscriptFinal
from .history import History
from .inference import Inference, InferenceError
from .knowledge import Fact
from .listener import PAUSE_READ_MS, Listener, ListenerSettings, failed_transcript
from .llm import LLMOptions, Message
from .prompt import DEFAULT_DECLINE, DEFAULT_REPLY_HINT, MESSAGE_DECLINE, PromptBuilder
from .readahead import ReadAhead, ReadAheadSettings
from .response import Response, ResponseState
from .slots import ReplySlots
from .speaker import ReplySpeaker, SpeakerSettings, Speech
from .tasks import TaskOwner
from .tools import ToolSpec
from .tracing import TurnTrace
from .tts import VoiceSpec
from .turns import (
    BargeInDetector,
    BargeInKind,
    BargeInSettings,
    TurnEvent,
    TurnSettings,
    end_of_turn_wait_ms,
    same_words,
    sentence_completeness,
    unfinished_by_words,
)
from .vad import SileroModel
from .writer import ReplyWriter, WriterSettings

log = logging.getLogger(__name__)

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
    # The embedded model answers general knowledge (sums, history, science); False:
    # it is declined as written (acts.py; the persona's `general_questions`).
    general_questions: bool = True
    # The embedded model's tool choice is made by the router (router.py); False leaves
    # it to the model (the baseline of bench/tool_choice.py).
    route_tools: bool = True
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
    # A pause inside a turn is read by the ASR as this long at most; 0 reads it whole.
    pause_read_ms: int = PAUSE_READ_MS
    # The embedded LLM reads the caller's words as live captions bring them, so the
    # turn's request reads only the rest (readahead.py).
    read_words_so_far: bool = True
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
    """One conversation: audio in, frames out. Use inside a running event loop.

    It is the `ListenerHooks` of its own `Listener`: the caller's side tells it
    when a turn paused, went on or ended, and it decides what the replies do."""

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
        self._barge = BargeInDetector(_barge_in_settings(config))
        self._out: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._history = History()
        self._tasks = TaskOwner("call")
        self._slots = ReplySlots()
        self._listener = Listener(
            _listener_settings(config),
            inference,
            vad_model,
            self._out.put_nowait,
            self._tasks,
            self,
            clock=clock,
        )
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
            lambda words: self._writer.messages(words),
            self._tasks,
            call_id=self.call_id,
        )
        self._writer = ReplyWriter(
            _writer_settings(config),
            prompt_builder(config),
            inference,
            self._history,
            before_llm=self._read_ahead.wait_llm,
            session=self.call_id,
        )
        self._closed = False
        self.stats = {
            "speculative_started": 0,
            "speculative_cancelled": 0,
            "speculative_kept": 0,  # read again in a longer pause, with the same words
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
        self._listener.push_samples(samples, sample_rate)

    def commit_audio(self, pcm: bytes, sample_rate: int, item_id: str | None = None) -> str:
        """A manual turn: a client's committed buffer (PCM16 mono) is transcribed and
        added to the history (`TranscriptFinal` or `TranscriptFailed` reports it);
        a `create_response()` made meanwhile waits for it. Returns the item id."""
        if self._closed:
            raise RuntimeError("call is closed")
        return self._listener.commit_audio(pcm, sample_rate, item_id)

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
        self._listener.update(_listener_settings(config))
        self._writer.settings = _writer_settings(config)
        self._writer.prompt = prompt_builder(config)
        self._barge.settings = _barge_in_settings(config)
        self._speaker.settings = _speaker_settings(config)
        self._read_ahead.settings = _read_ahead_settings(config)
        prompt_of = attrgetter("instructions", "facts", "grounding", "reply_hint")
        if self._slots.idle and prompt_of(config) != prompt_of(previous):
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
        self._slots.activate(response)
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
        pending = self._listener.pending()
        if pending:
            await asyncio.wait(pending, timeout=TRANSCRIPT_WAIT_S)
        await self._reply(response, options, instructions)

    def say(self, text: str) -> str:
        """Speak fixed text (a greeting) as a response, without the LLM."""
        self.cancel_response()
        response = self._new_response(None, speculative=False)
        self._slots.activate(response)
        response.emit(ResponseStarted(response.id))
        self._spawn_response(response, self._speak_text(response, text))
        return response.id

    def cancel_response(self) -> None:
        """Stop the active response now (`response.cancel`); no-op when idle."""
        active = self._slots.active
        if active is not None and active.active:
            self._finish_cancelled(active, interrupted=False)

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
        self._listener.closed = True
        if self._slots.active is not None:
            self._finish_cancelled(self._slots.active, interrupted=True)
        for response in self._slots.in_hand():
            response.tasks.cancel()
        await self._tasks.cancel_all(wait_s)
        self._out.put_nowait(None)

    @property
    def speaking(self) -> bool:
        """True while reply audio is being released."""
        return self._slots.speaking

    # ----- the listener's hooks ----------------------------------------------

    def heard(self, probability: float) -> None:
        """Speech over the reply: pause it on the onset, then cancel it or play on."""
        response = self._slots.active
        if not (self.config.interruptions_enabled and self.speaking) or response is None:
            self._barge.reset()
            paused = self._slots.take_paused()
            if paused is not None:
                self._speaker.resume(paused)
            return
        kind = self._barge.push(probability)
        if kind is BargeInKind.PAUSE:
            self.stats["barge_in_pauses"] += 1
            self._speaker.pause(response)
            self._slots.hold(response)
        elif kind is BargeInKind.RESUME:
            self.stats["false_interruptions"] += 1
            self._slots.take_paused()
            self._speaker.resume(response)
        elif kind is BargeInKind.CONFIRM:
            self._slots.take_paused()
            # The protocol's order: speech_started, then the cancelled response.
            self._listener.announce()
            self._finish_cancelled(response, interrupted=True)
            self.stats["interruptions"] += 1

    def heard_so_far(self, text: str) -> None:
        """A live caption of the turn: with no reply in hand, the LLM reads its words."""
        if self._slots.idle and self.config.create_response and not self.config.sequential:
            self._read_ahead.words_so_far(text)

    def turn_paused(self) -> None:
        if self.config.speculative and not self.config.sequential:
            self._start_turn_response(speculative=True)

    def turn_resumed(self) -> None:
        speculative = self._slots.take_speculative()
        if speculative is not None:
            self._finish_cancelled(speculative, interrupted=False, silent=True)
            self.stats["speculative_cancelled"] += 1

    def pause_lengthened(self) -> None:
        """Transcribe the turn again: its transcript looked unfinished (`Listener`).

        The reply speculated on the first reading goes on while the turn is read
        again, and is kept when the second reading has the same words (`_reread`).
        """
        speculative = self._slots.speculative
        if speculative is None:
            return
        if speculative.user_text and self.config.turns.hint_source == "eou":
            audio = self._listener.utterance_audio()
            self._listener.speculation_started()
            self._listener.expect_hint()
            self._spawn_response(speculative, self._reread(speculative, audio))
            return
        self._slots.take_speculative()
        self._finish_cancelled(speculative, interrupted=False, silent=True)
        self.stats["speculative_cancelled"] += 1
        self._listener.expect_hint()
        self._start_turn_response(speculative=True)

    async def _reread(self, response: Response, audio: np.ndarray) -> None:
        """The second reading of a paused turn that `response` speculates on: the same
        words keep it (its first audio may be ready); other words replace it with a
        reply to them."""
        trace = TurnTrace(clock=self._clock)
        try:
            result = await self._listener.transcribe(
                audio, trace, item_id=None, keep_if_cancelled=lambda: False
            )
        except InferenceError as exc:
            log.info("turn read again failed (%s): the first reading stands", exc.code)
            if self._slots.speculative is response:
                self._listener.clear_hint()
            return
        if self._slots.speculative is not response:
            return  # the caller went on, or the turn ended
        turns = self.config.turns
        if same_words(result.text, response.user_text or ""):
            self.stats["speculative_kept"] += 1
            marks = response.trace.marks
            if "eou_start" in marks and "eou_end" not in marks:
                return  # its end-of-turn score is on its way and sets the wait
            if response.eou_probability is None and not unfinished_by_words(result.text):
                self._spawn_response(response, self._score_turn(response, result.text))
                return
            wait = end_of_turn_wait_ms(result.text, response.eou_probability, turns)
            self._listener.set_hint(wait)
            return
        replacement = self._new_response(response.item_id, speculative=True)
        replacement.trace.take_reading(trace)
        self._slots.take_speculative()
        self._slots.speculate(replacement)
        self.stats["speculative_started"] += 1
        self._spawn_response(replacement, self._turn(replacement, audio, result))
        self._finish_cancelled(response, interrupted=False, silent=True)
        self.stats["speculative_cancelled"] += 1

    def turn_ended(self, item_id: str, event: TurnEvent) -> None:
        response = self._slots.take_speculative()
        if response is not None and self._listener.sound_since_speculation():
            # Faint speech after the speculation started: its transcript may miss words.
            self._finish_cancelled(response, interrupted=False, silent=True)
            self.stats["speculative_cancelled"] += 1
            response = None
        if response is None:
            response = self._start_turn_response(speculative=False)
        if response is not None:
            response.trace.mark("speech_end", self._listener.last_voiced_at)
            response.trace.mark("end_of_turn")
            self._commit(response)

    def user_said(self, text: str) -> None:
        self.add_message("user", text)

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
            self._listener.transcribe_turn()
            return None
        if not self.config.create_response:
            return None
        response = self._new_response(self._listener.item_id, speculative=True)
        audio = self._listener.utterance_audio()
        if speculative:
            self._slots.speculate(response)
            self._listener.speculation_started()
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
        previous = self._slots.active
        if previous is not None and previous.active:
            if response.user_text:
                self._finish_cancelled(previous, interrupted=False)
            else:
                response.supersedes = previous
        response.commit()
        self._slots.activate(response)
        if response.user_text:
            self.add_message("user", response.user_text)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._tasks.spawn(coro)

    def _spawn_response(self, response: Response, coro: Coroutine[Any, Any, None]) -> None:
        response.tasks.add(self._spawn(coro))

    async def _turn(
        self, response: Response, audio: np.ndarray, read: Transcript | None = None
    ) -> None:
        """Final ASR (unless `read` already), then the reply; speculative until committed."""
        # The turn waits for this transcript's verdict (the punctuation rule never did).
        judging = self._slots.speculative is response and self.config.turns.hint_source == "eou"
        if judging:
            self._listener.expect_hint()
        try:
            result = read or await self._listener.transcribe(
                audio,
                response.trace,
                item_id=response.item_id,
                keep_if_cancelled=response.committed.is_set,
            )
        except InferenceError as exc:
            if judging and self._slots.speculative is response:
                self._listener.clear_hint()
            if response.item_id:
                response.emit(TranscriptFailed(response.item_id, exc.code, str(exc), 0.0))
            self._fail(response, exc)
            return
        if response.state is ResponseState.SPECULATIVE and self._slots.speculative is response:
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
                response.emit(failed_transcript(response.item_id, result))
            if response.active:
                response.discard()
                if self._slots.active is response:
                    # Noise, not words: what was playing before goes on.
                    live = previous is not None and previous.active
                    self._slots.activate(previous if live else None)
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
            self._listener.set_hint(turns.wait_ms(sentence_completeness(text)))
        elif not text.strip() or unfinished_by_words(text):
            self._listener.set_hint(end_of_turn_wait_ms(text, None, turns))
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
        if response.state is ResponseState.SPECULATIVE and self._slots.speculative is response:
            self._listener.set_hint(end_of_turn_wait_ms(text, probability, self.config.turns))

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
        if response.aside:
            # a line of the rules: the LLM will not read it, nor the turn it answered
            self._history.hide_last("user")
            direct = False
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
        self._slots.leave(response)
        if cancelled is None:
            return
        if response.user_text is not None or cancelled.heard:
            self.add_message("assistant", cancelled.heard)
        self._keep_calls(response)

    def _finish(self, response: Response, status: ResponseStatus) -> None:
        if response.done(status) is None:
            return
        self._slots.leave(response)
        if response.text:
            reply = response.text.strip()
            if response.aside:
                self._history.hide_last("user")  # again, for a reply that never played
            self._history.add("assistant", reply, hidden=response.aside)
            self._read_ahead.reply_kept(reply)
        self._keep_calls(response)

    def _keep_calls(self, response: Response) -> None:
        """The tool calls a reply made go into the history after its words."""
        for call in response.tool_calls:
            self._history.add_call(call)

    def _fail(self, response: Response, exc: InferenceError) -> None:
        """End a response on an error (silently while it is still speculative)."""
        response.fail(exc)
        self._slots.leave(response, speculative=True)


def _listener_settings(config: CallConfig) -> ListenerSettings:
    return ListenerSettings(
        turns=config.turns,
        language=config.language,
        asr_model=config.asr_model,
        partial_interval_ms=config.partial_interval_ms,
        prefix_padding_ms=config.prefix_padding_ms,
        max_utterance_s=config.max_utterance_s,
        pause_read_ms=config.pause_read_ms,
    )


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
    # With the router choosing tools, a reply in words is sent without them (and a
    # call with only the one routed): the prompt read ahead is the words' prompt, or
    # the reply would read its whole prompt again from where the two part.
    routed = config.embedded_llm and config.route_tools
    return ReadAheadSettings(
        llm=replace(config.llm, tool_choice="none") if routed else config.llm,
        end_of_turn_model=config.turns.hint_source == "eou",
        embedded_llm=config.embedded_llm,
        history_budget_chars=config.history_budget_chars,
        direct_answers=config.grounding and config.direct_answers,
        words_so_far=config.read_words_so_far,
    )


def prompt_builder(config: CallConfig) -> PromptBuilder:
    """What writes the prompts of a call made with `config`."""
    return PromptBuilder(
        instructions=config.instructions,
        facts=config.facts if config.grounding else (),
        reply_hint=config.reply_hint,
        language=config.language,
        derive_facts=config.grounding,
        direct_min_score=0.0 if config.grounding and config.direct_answers else None,
        decline=config.decline_text,
        takes_messages=config.takes_messages,
        # facts found by meaning as well as by their words (loaded once a process)
        encoder=shared_encoder() if config.grounding else None,
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
        route_tools=config.embedded_llm and config.route_tools,
        turn_acts=config.embedded_llm and config.grounding and config.direct_answers,
        general_questions=config.general_questions,
    )


__all__ = ["AudioFormatError", "CallConfig", "VoiceCall"]
