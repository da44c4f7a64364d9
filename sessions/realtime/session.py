"""The OpenAI Realtime protocol over any transport, around one engine `VoiceCall`.

`RealtimeSession` keeps dispatch and lifecycle: a transport (the WebSocket
consumer, the WebRTC peer) hands it client JSON (`handle_text`) and microphone
audio (`push_audio`) and sends what it gives back. Parsing is `protocol`,
settings are `settings`, frames become events in `translator`, audio formats
are `codecs`, bounds are `limits`. Every task the session starts is its own
and is cancelled in `close()`. An unexpected error while handling an event
ends the call at once (an `error` event, the transport closed, the slot freed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sessions.realtime import events, protocol
from sessions.realtime.actions import SILENT, ActionResult, Actions
from sessions.realtime.codecs import PCM_RATE, decode_append, to_pcm24_mono
from sessions.realtime.errors import ClientError
from sessions.realtime.limits import MAX_CLIENT_ITEMS, MAX_HISTORY_ITEMS, MAX_MANUAL_BUFFER_SECONDS
from sessions.realtime.recorder import CappedRecorder, Recorder, Usage
from sessions.realtime.recording import CallAudioCapture
from sessions.realtime.settings import (
    FULL,
    Policy,
    SessionSettings,
    parse_session_update,
    public_policy,
    response_tokens,
    to_call_config,
)
from sessions.realtime.translator import Reply, Translator
from voiceapp.engine.audio import AudioFormatError
from voiceapp.engine.call import VoiceCall
from voiceapp.engine.frames import ResponseDone, ToolCallMade, TTSAudio
from voiceapp.engine.inference import Inference
from voiceapp.engine.tasks import TaskOwner
from voiceapp.engine.tts import VoiceSpec

log = logging.getLogger(__name__)

HEARTBEAT_S = 10
# A close's budget (see RealtimeSession.close): freeing the slots may take up to
# CLOSE_RELEASE_S of it, and CLOSE_RECORD_S is kept for the call's end record and
# its recording; a record not written by then is left to the record buffer.
CLOSE_BUDGET_S = 4.0
CLOSE_RELEASE_S = 1.0
CLOSE_RECORD_S = 2.0
MANUAL_BUFFER_BYTES = MAX_MANUAL_BUFFER_SECONDS * PCM_RATE * 2
GOODBYES = {
    "max_duration": "I'm sorry, we have reached the time limit for this call. Goodbye!",
    "idle_timeout": "It seems you have stepped away, so I will end the call now. Goodbye!",
    "quota_exhausted": "I'm sorry, this account has used up its call minutes. Goodbye!",
    "agent_hangup": "Thank you for calling. Goodbye!",
}
# A persona's action (sessions/actions.py) that takes longer than this gets a short
# filler line, once; one that takes longer than the timeout, or fails, an apology.
ACTION_FILLER_AFTER_S = 1.0
ACTION_TIMEOUT_S = 8.0
ACTION_SAY_WAIT_S = 20.0  # for the caller's own turn to be answered before the result
ACTION_FILLER = "One moment, please."
ACTION_APOLOGY = "I'm sorry, something went wrong on my side and I couldn't do that just now."
# Sent as an `error` event before the server closes the call (daphne does not
# carry WebSocket close reasons, so the event is how a client learns why).
END_NOTICES = {
    "max_duration": ("session_expired", "The call reached its maximum duration."),
    "idle_timeout": ("idle_timeout", "The call ended after a period of silence."),
    "quota_exhausted": (
        "insufficient_quota",
        "The organization has used its included call time; the call has ended.",
    ),
    "error": ("server_error", "The server failed while handling the call; it has ended."),
}


class Transport(Protocol):
    name: str
    audio_as_events: bool

    async def send_event(self, event: dict[str, Any]) -> None: ...

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None: ...

    async def close(self, code: int, reason: str) -> None: ...


@dataclass
class Limits:
    """The persona's bounds on the call (the client's idle timeout, when set, wins)."""

    max_duration_s: float
    idle_timeout_s: float
    max_message_bytes: int


class RealtimeSession:
    def __init__(
        self,
        *,
        session_id: str,
        persona_slug: str,
        call: VoiceCall,
        inference: Inference,
        transport: Transport,
        limits: Limits,
        recorder: Recorder,
        resolve_voice: Callable[[str], Awaitable[VoiceSpec | None]],
        clock: Callable[[], float] = time.monotonic,
        elapsed_offset_s: float = 0.0,
        public: bool = False,
        capture: CallAudioCapture | None = None,
        actions: Actions | None = None,
    ) -> None:
        self.id = session_id
        self._actions = actions
        self.persona_slug = persona_slug
        self.call = call
        self._inference = inference
        self.transport = transport
        self.limits = limits
        self._recorder = CappedRecorder(recorder)
        self._capture = capture  # the call's audio, when the persona records calls
        self._resolve_voice = resolve_voice
        self._clock = clock
        self._started = clock()
        self._elapsed_offset = elapsed_offset_s  # a resumed call goes on from its first start
        self._last_activity = clock()
        self._tasks = TaskOwner(f"session {session_id}")
        self._writes: set[asyncio.Task[Any]] = set()  # record writes: finished, not cancelled
        self._last_write: asyncio.Task[Any] | None = None
        self._closed = False
        self.end_reason: str | None = None
        self.ended = asyncio.Event()
        self.settings = SessionSettings.from_config(call.config)
        self.policy: Policy = (
            FULL
            if not public
            else public_policy(
                max_reply_tokens=call.config.llm.max_tokens, idle_timeout_s=limits.idle_timeout_s
            )
        )
        self._manual_audio = bytearray()
        self._buffer_full_told = False
        self._client_items = 0
        call.trim_history(MAX_HISTORY_ITEMS)
        self.translator = Translator(
            conversation_id=session_id,
            send=self._send,
            audio_out=transport,
            flush_audio=self._flush_output,
            settings=lambda: self.settings,
            host=self,
        )

    # ----- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        await self._send({"type": "session.created", "session": self.session_object()})
        self._spawn(self._pump())
        self._spawn(self._watchdog())

    def greet(self, notice: str = "") -> None:
        """Speak the recording `notice` (when given) and the persona's greeting
        (when it is set to speak first), as one utterance; with neither, have the
        models read the prompt before the caller's first words."""
        text = " ".join(t.strip() for t in (notice, self.call.config.greeting) if t.strip())
        if text:
            self.call.say(text)
        else:
            self.call.prepare()

    async def run(self) -> None:
        """Wait until the session ends."""
        await self.ended.wait()

    async def close(self, reason: str = "hangup") -> None:
        """Stop the call and every task of the session. Idempotent.

        The call's slots are freed first, so the next caller gets in at once; the
        rest (the call's last frames, its records, the recording) then shares one
        budget, CLOSE_BUDGET_S, which fits inside what the transports give a close
        (webrtc.py waits 5 s; daphne kills an application 10 s after a disconnect)."""
        if self._closed:
            return
        self._closed = True
        self.end_reason = self.end_reason or reason
        hangup_s = self._elapsed()
        deadline = asyncio.get_running_loop().time() + CLOSE_BUDGET_S

        def left(keep_s: float = 0.0) -> float:
            """The budget left to a stage when `keep_s` is kept for the stages after it."""
            return max(0.05, deadline - keep_s - asyncio.get_running_loop().time())

        self._tasks.cancel()  # the watchdog's heartbeat must not put a freed slot back
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_RELEASE_S):
                await self._recorder.release()
        await self.call.close(wait_s=min(1.0, left(CLOSE_RECORD_S)))
        close_inference = getattr(self._inference, "close", None)
        if close_inference is not None:  # the Channels client: end its reply readers
            with contextlib.suppress(Exception):
                async with asyncio.timeout(left(CLOSE_RECORD_S)):
                    await close_inference()
        await self._tasks.cancel_all(min(1.0, left(CLOSE_RECORD_S)))
        await self._record_last_frames(left(CLOSE_RECORD_S))
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=left(CLOSE_RECORD_S / 2))
        with contextlib.suppress(Exception):
            async with asyncio.timeout(left()):
                await self._recorder.ended(self.end_reason)
        if self._capture is not None:
            try:
                captured = self._capture.close(hangup_s)
                if captured is not None:
                    async with asyncio.timeout(left()):
                        await self._recorder.recording(captured)
            except Exception:
                log.exception("session %s: the call's audio could not be kept", self.id)
        self.ended.set()

    async def _record_last_frames(self, wait_s: float) -> None:
        """What the call left unsent as it closed goes to the record: a reply cut
        off by the hang-up ends there with the words already played, marked
        interrupted, and its turn's spans. Nothing reaches the client any more
        (`_send` drops events once closed; audio is skipped)."""
        try:
            async with asyncio.timeout(wait_s):  # the closed call's frames end with its sentinel
                async for frame in self.call.frames():
                    if not isinstance(frame, TTSAudio):
                        await self.translator.on_frame(frame)
        except Exception:
            log.exception("session %s: recording the call's last frames failed", self.id)

    async def end(self, reason: str, *, goodbye: bool = True) -> None:
        """End the call from the server side: say goodbye, then close the transport."""
        if self._closed or self.end_reason:
            return
        self.end_reason = reason
        text = GOODBYES.get(reason)
        if goodbye and text:
            reply = self.translator.reply_for(self.call.say(text))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(15.0):
                    await reply.done.wait()
                    await asyncio.sleep(reply.audio_ms / 1000.0 + 0.3)  # let it play out
        if reason in END_NOTICES:
            code, message = END_NOTICES[reason]
            with contextlib.suppress(Exception):
                kind = "server_error" if reason == "error" else "invalid_request_error"
                await self.send_error(code, message, kind=kind)
        with contextlib.suppress(Exception):
            await self.transport.close(1011 if reason == "error" else 1000, reason)
        await self.close(reason)

    async def fail(self, what: str) -> None:
        """An unexpected error (call from its `except` block): end the call now
        rather than go on in an unknown state."""
        log.exception("session %s: %s failed; ending the call", self.id, what)
        await self.end("error", goodbye=False)

    def _record(self, coro: Awaitable[Any]) -> None:
        """Write to the call record without holding up events; `close()` lets
        every write finish (a hang-up right after `response.done` loses nothing)."""

        previous = self._last_write

        async def write() -> None:
            if previous is not None:  # one at a time, in order
                await asyncio.wait([previous])
            try:
                await coro
            except Exception:
                log.exception("session %s: recording failed", self.id)

        task = asyncio.ensure_future(write())
        self._last_write = task
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run `coro` as a task the session owns: it is cancelled when the session closes."""
        return self._spawn(coro)

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        return task

    def _idle_timeout_s(self) -> float:
        return self.settings.idle_timeout_s or self.limits.idle_timeout_s

    async def _watchdog(self) -> None:
        beat_at = self._clock()
        while not self._closed:
            await asyncio.sleep(0.25)
            now = self._clock()
            if now - beat_at >= HEARTBEAT_S:
                beat_at = now
                with contextlib.suppress(Exception):
                    await self._recorder.heartbeat()
            if now - self._started >= self.limits.max_duration_s:
                self._spawn(self.end("max_duration"))
                return
            if self.call.speaking or self.translator.in_flight():
                self._last_activity = now
            elif now - self._last_activity >= self._idle_timeout_s():
                self._spawn(self.end("idle_timeout"))
                return

    async def _pump(self) -> None:
        try:
            async for frame in self.call.frames():
                await self.translator.on_frame(frame)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("session %s: output failed; ending the call", self.id)
            self._spawn(self.end("error", goodbye=False))

    # ----- translator host ---------------------------------------------------

    def touch(self) -> None:
        self._last_activity = self._clock()

    def user_turn_done(self, item_id: str, text: str, asr_seconds: float) -> None:
        if asr_seconds > 0:
            self._record(self._recorder.usage(Usage(asr_seconds=asr_seconds)))
        if text:
            self._record(self._recorder.user_item(item_id, text, self._elapsed()))
        self._remember_history()

    def reply_done(self, reply: Reply, frame: ResponseDone, text: str) -> None:
        if text:
            interrupted = frame.status == "cancelled"
            self._record(
                self._recorder.assistant_item(reply.item_id, text, self._elapsed(), interrupted)
            )
        self._record(
            self._recorder.turn(reply.response_id, frame.status, self._elapsed(), frame.latency)
        )
        usage = Usage(
            llm_input_tokens=int(frame.usage.get("input_tokens", 0)),
            llm_output_tokens=int(frame.usage.get("output_tokens", 0)),
            tts_characters=len("".join(reply.transcript)) if self.settings.speaks else 0,
        )
        if usage:
            self._record(self._recorder.usage(usage))
        self._remember_history()

    def caller_speech(self, item_id: str, audio_start_ms: int) -> None:
        if self._capture is not None:
            self._capture.caller_speech(item_id, audio_start_ms)

    def reply_audio(self, item_id: str, pcm: bytes, sample_rate: int) -> None:
        if self._capture is not None:
            self._capture.agent_audio(item_id, pcm, sample_rate, self._elapsed())

    def runs_tool(self, name: str) -> bool:
        return name in self.settings.action_names and all(
            t.name != name for t in self.settings.tools
        )

    def run_tool(self, reply: Reply, frame: ToolCallMade) -> None:
        async def run() -> None:
            try:
                await self._run_action(reply, frame)
            except asyncio.CancelledError:
                raise
            except Exception:
                await self.fail(f"the action {frame.name}")

        self._spawn(run())

    # ----- the persona's actions ---------------------------------------------

    async def _run_action(self, reply: Reply, frame: ToolCallMade) -> None:
        """Run an action the model called, once its reply is done; keep the output
        in the history and the call record, then speak the result (or hang up). A
        reply the caller cut off does not act: its call is answered as cancelled."""
        await reply.done.wait()
        if self._actions is None:
            return
        started = self._clock()
        if reply.status == "cancelled":
            result = ActionResult.failed("cancelled: the caller spoke first", "")
        else:
            result = await self._act(frame)
        ms = round(1000.0 * (self._clock() - started))
        self.call.add_tool_output(frame.call_id, result.output)
        self._record(
            self._recorder.tool_item(
                events.new_id("item"),
                self._elapsed(),
                {
                    "name": frame.name,
                    "arguments": frame.arguments,
                    "output": result.output,
                    "ok": result.ok,
                    "ms": ms,
                },
                f"{frame.name} {frame.arguments}",
            )
        )
        self._remember_history()
        if result.hang_up:
            await self.end("agent_hangup", goodbye=not reply.transcript)
        elif result.say and await self._quiet(ACTION_SAY_WAIT_S):
            said = self.translator.reply_for(self.call.say(result.say))
            said.handoff = result.handoff
        elif result.respond and await self._quiet(ACTION_SAY_WAIT_S):
            # the model answers from the output; a forced choice would call again
            self.call.create_response(tool_choice="none")

    async def _quiet(self, wait_s: float) -> bool:
        """Wait until no reply is in flight or playing (a caller who spoke while an
        action ran gets their answer first); False if that took longer than `wait_s`."""
        for _ in range(int(wait_s / 0.05)):
            if self._closed:
                return False
            if not (self.translator.in_flight() or self.call.speaking):
                return True
            await asyncio.sleep(0.05)
        return False

    async def _act(self, frame: ToolCallMade) -> ActionResult:
        assert self._actions is not None
        filler: Reply | None = None

        async def fill() -> None:
            nonlocal filler
            await asyncio.sleep(ACTION_FILLER_AFTER_S)
            if self.translator.in_flight() or self.call.speaking:
                return  # the caller spoke since, and is being answered: no filler over it
            filler = self.translator.reply_for(self.call.say(ACTION_FILLER))

        waiting = self._spawn(fill() if frame.name not in SILENT else asyncio.sleep(0))
        try:
            async with asyncio.timeout(ACTION_TIMEOUT_S):
                result = await self._actions.run(frame.name, frame.arguments)
        except TimeoutError:
            log.warning("session %s: action %s timed out", self.id, frame.name)
            result = ActionResult.failed("timed out", ACTION_APOLOGY)
        except Exception:
            log.exception("session %s: action %s failed", self.id, frame.name)
            result = ActionResult.failed("failed", ACTION_APOLOGY)
        finally:
            waiting.cancel()
        if filler is not None:  # let the filler end before the result is spoken
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10.0):
                    await filler.done.wait()
        return result

    def _remember_history(self) -> None:
        self.call.trim_history(MAX_HISTORY_ITEMS)
        self._record(self._recorder.alive([dict(m) for m in self.call.history]))

    # ----- the effective session ---------------------------------------------

    def session_object(self) -> dict[str, Any]:
        return events.session_object(
            self.settings,
            session_id=self.id,
            model=self.persona_slug,
            show_instructions=self.policy.shows_instructions,
        )

    # ----- client events -----------------------------------------------------

    async def handle_text(self, raw: str | bytes) -> None:
        """One client event as it arrived. Bad events are answered with one
        `error` event; anything else that goes wrong ends the call. Never raises."""
        event_id = None
        try:
            event = protocol.parse_client_event(raw, max_bytes=self.limits.max_message_bytes)
            event_id = event.event_id
            if event.type != "input_audio_buffer.append":
                self._last_activity = self._clock()
            await self._dispatch(event)
        except ClientError as exc:
            await self.send_error(
                exc.code, exc.message, param=exc.param, event_id=exc.event_id or event_id
            )
        except AudioFormatError as exc:
            await self.send_error("invalid_audio", str(exc), event_id=event_id)
        except Exception:
            await self.fail("handling a client event")

    async def _dispatch(self, event: protocol.AnyClientEvent) -> None:
        match event:
            case protocol.SessionUpdate():
                await self._session_update(event)
            case protocol.InputAudioBufferAppend():
                self._append(event)
            case protocol.InputAudioBufferCommit():
                await self._commit()
            case protocol.InputAudioBufferClear():
                self._manual_audio.clear()
                self._buffer_full_told = False
                await self._send({"type": "input_audio_buffer.cleared"})
            case protocol.ConversationItemCreate():
                await self._item_create(event)
            case protocol.ConversationItemTruncate():
                await self._truncate(event)
            case protocol.ResponseCreate():
                self._response_create(event)
            case protocol.ResponseCancel():
                self._response_cancel(event)

    async def _session_update(self, event: protocol.SessionUpdate) -> None:
        parsed = parse_session_update(event.session, self.settings, allowed=self.policy)
        if isinstance(parsed, ClientError):
            raise parsed
        voice = None
        if parsed.voice_id != self.settings.voice_id:
            voice = await self._resolve_voice(parsed.voice_id)
            if voice is None:
                raise ClientError(
                    "invalid_value",
                    f"Unknown voice “{parsed.voice_id}”; list them at /api/v1/voices/.",
                    "session.audio.output.voice",
                )
        # Everything checked: apply at once.
        self.call.update_config(to_call_config(parsed, self.call.config, voice))
        self.settings = parsed
        await self._send({"type": "session.updated", "session": self.session_object()})

    def _append(self, event: protocol.InputAudioBufferAppend) -> None:
        pcm, rate = decode_append(event.audio, self.settings.input_format)
        if not self.settings.turn_detection_on and (
            len(self._manual_audio) + len(pcm) * PCM_RATE // rate > MANUAL_BUFFER_BYTES
        ):
            raise ClientError(
                "input_audio_buffer_full",
                f"The input audio buffer holds at most {MAX_MANUAL_BUFFER_SECONDS} s; "
                "commit or clear it first. This audio was dropped.",
                "audio",
            )
        self.push_audio(pcm, rate, 1)

    def push_audio(self, pcm: bytes, sample_rate: int, channels: int = 1) -> None:
        """Microphone audio from the transport (PCM16, interleaved when stereo)."""
        if self._closed:
            return
        if self._capture is not None:
            self._capture.caller_audio(pcm, sample_rate, channels, self._elapsed())
        if self.settings.turn_detection_on:
            self.call.push_audio(pcm, sample_rate, channels)
            return
        pcm24 = to_pcm24_mono(pcm, sample_rate, channels)
        if len(self._manual_audio) + len(pcm24) > MANUAL_BUFFER_BYTES:
            if not self._buffer_full_told:  # WebRTC audio has no event to answer: say it once
                self._buffer_full_told = True
                self._spawn(
                    self.send_error(
                        "input_audio_buffer_full",
                        f"The input audio buffer holds at most {MAX_MANUAL_BUFFER_SECONDS} s; "
                        "later audio is dropped until it is committed or cleared.",
                    )
                )
            return
        self._manual_audio.extend(pcm24)

    async def _commit(self) -> None:
        if self.settings.turn_detection_on:
            return  # with turn detection the server commits at end of turn
        if len(self._manual_audio) < PCM_RATE * 2 // 10:
            raise ClientError(
                "input_audio_buffer_commit_empty", "Commit needs at least 100 ms of appended audio."
            )
        pcm = bytes(self._manual_audio)
        self._manual_audio.clear()
        self._buffer_full_told = False
        item_id = events.new_id("item")
        await self._send(
            {
                "type": "input_audio_buffer.committed",
                "item_id": item_id,
                "previous_item_id": self.translator.last_item_id,
            }
        )
        await self.translator.announce_user_item(item_id)
        # Transcribed by the call's listener: its TranscriptFinal (or TranscriptFailed)
        # comes out with the call's frames, and a response.create waits for it.
        self.call.commit_audio(pcm, PCM_RATE, item_id)

    async def _item_create(self, event: protocol.ConversationItemCreate) -> None:
        item = event.item
        if self._client_items >= MAX_CLIENT_ITEMS:
            raise ClientError(
                "conversation_item_limit",
                f"A call takes at most {MAX_CLIENT_ITEMS} conversation items from the client.",
                "item",
            )
        if isinstance(item, protocol.FunctionCallOutputItem):
            await self._tool_output(item)
            return
        text = item.text()
        if not text.strip():
            raise ClientError("invalid_value", "The message is empty.", "item.content")
        self._client_items += 1
        item_id = item.id or events.new_id("item")
        self.call.add_message(item.role, text)
        full = events.text_item(item_id, item.role, text)
        await self._echo_item(item_id, full)
        if item.role == "user":
            self._record(self._recorder.user_item(item_id, text, self._elapsed()))
        self._remember_history()

    async def _echo_item(self, item_id: str, full: dict[str, Any]) -> None:
        """A client's item, as the conversation now holds it, after the latest one."""
        previous = self.translator.chain(item_id)
        for kind in (
            "conversation.item.created",
            "conversation.item.added",
            "conversation.item.done",
        ):
            await self._send({"type": kind, "previous_item_id": previous, "item": full})

    async def _tool_output(self, item: protocol.FunctionCallOutputItem) -> None:
        """A client tool's output: the next reply reads it (`response.create` asks
        for that reply, as the Realtime API has it)."""
        name = self.call.add_tool_output(item.call_id, item.output)
        if name is None:
            raise ClientError(
                "item_not_found",
                f"No function call “{item.call_id}” was made in this conversation.",
                "item.call_id",
            )
        self._client_items += 1
        item_id = item.id or events.new_id("item")
        full = events.tool_output_item(item_id, item.call_id, item.output)
        await self._echo_item(item_id, full)
        self._remember_history()

    async def _truncate(self, event: protocol.ConversationItemTruncate) -> None:
        reply = self.translator.last_assistant
        if reply is None or reply.item_id != event.item_id:
            raise ClientError(
                "item_not_found",
                f"No assistant audio item “{event.item_id}” to truncate.",
                "item_id",
            )
        if event.audio_end_ms > reply.audio_ms + 1:
            raise ClientError(
                "invalid_value",
                f"audio_end_ms must be between 0 and {int(reply.audio_ms)}.",
                "audio_end_ms",
            )
        heard = self.call.truncate(event.audio_end_ms)
        reply.heard = heard
        self._record(self._recorder.truncate(event.item_id, heard))
        await self._send(
            {
                "type": "conversation.item.truncated",
                "item_id": event.item_id,
                "content_index": event.content_index,
                "audio_end_ms": event.audio_end_ms,
            }
        )

    def _response_create(self, event: protocol.ResponseCreate) -> None:
        params = event.response or protocol.ResponseParams()
        if params.instructions is not None and not self.policy.instructs_responses:
            raise ClientError(
                "field_not_allowed",
                "response.instructions cannot be set with a publishable key.",
                "response.instructions",
            )
        tokens = response_tokens(params.max_output_tokens, self.policy)
        if isinstance(tokens, ClientError):
            raise tokens
        self.call.create_response(instructions=params.instructions, max_output_tokens=tokens)

    def _response_cancel(self, event: protocol.ResponseCancel) -> None:
        active = self.translator.in_flight()
        wanted = event.response_id
        if not active or (wanted and all(r.response_id != wanted for r in active)):
            raise ClientError(
                "response_cancel_not_active", "There is no response in progress to cancel."
            )
        self.call.cancel_response()

    # ----- server events -----------------------------------------------------

    def _elapsed(self) -> float:
        return self._elapsed_offset + self._clock() - self._started

    def _flush_output(self) -> None:
        if self._capture is not None:  # the client drops its queued audio: so does the recording
            self._capture.cut_agent(self._elapsed())
        flush = getattr(self.transport, "flush_audio", None)
        if callable(flush):
            flush()

    async def _send(self, event: dict[str, Any]) -> None:
        event.setdefault("event_id", events.new_id("event"))
        if self._closed and event["type"] != "error":
            return
        await self.transport.send_event(event)

    async def send_error(
        self,
        code: str,
        message: str,
        *,
        param: str | None = None,
        event_id: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        await self.transport.send_event(
            events.error(code, message, param=param, event_id=event_id, kind=kind)
        )
