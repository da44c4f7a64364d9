"""The OpenAI Realtime protocol over any transport, around one engine `VoiceCall`.

`RealtimeSession` validates client events, applies them to the call, and turns
the call's frames into server events in the order REALTIME_PROTOCOL.md lists.
A transport (the WebSocket consumer, the WebRTC peer) only moves bytes: it
hands client JSON to `handle_text`, microphone audio to `push_audio`, and
sends what the session gives it. Every task the session starts is its own and
is cancelled in `close()`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from voiceapp.engine import g711
from voiceapp.engine.audio import AudioFormatError, float_to_pcm16, pcm16_to_float, resample
from voiceapp.engine.call import CallConfig, VoiceCall
from voiceapp.engine.frames import (
    ErrorFrame,
    Frame,
    Interruption,
    LLMToken,
    ResponseDone,
    ResponseStarted,
    SpeechStarted,
    SpeechStopped,
    TextClause,
    TranscriptFailed,
    TranscriptFinal,
    TranscriptPartial,
    TTSAudio,
)
from voiceapp.engine.inference import Inference, InferenceError
from voiceapp.engine.tts import VoiceSpec

log = logging.getLogger(__name__)

PCM_RATE = 24000
G711_FORMATS = ("audio/pcmu", "audio/pcma")


def format_object(kind: str) -> dict[str, Any]:
    """The session's audio format as the API shows it."""
    return {"type": kind, "rate": PCM_RATE} if kind == "audio/pcm" else {"type": kind}


def g711_decode(kind: str, data: bytes) -> bytes:
    return g711.DECODERS[kind](data).astype("<i2").tobytes()


def g711_encode(kind: str, samples: np.ndarray) -> bytes:
    pcm = np.frombuffer(float_to_pcm16(samples), dtype="<i2")
    return g711.ENCODERS[kind](pcm)


MAX_APPEND_SECONDS = 15
HEARTBEAT_S = 10
GOODBYES = {
    "max_duration": "I'm sorry, we have reached the time limit for this call. Goodbye!",
    "idle_timeout": "It seems you have stepped away, so I will end the call now. Goodbye!",
}
# Sent as an `error` event before the server closes the call (daphne does not
# carry WebSocket close reasons, so the event is how a client learns why).
END_NOTICES = {
    "max_duration": ("session_expired", "The call reached its maximum duration."),
    "idle_timeout": ("idle_timeout", "The call ended after a period of silence."),
}
SEMANTIC_EAGERNESS_MS = {"low": 1200, "medium": 600, "auto": 600, "high": 300}


class Transport(Protocol):
    name: str
    audio_as_events: bool

    async def send_event(self, event: dict[str, Any]) -> None: ...

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None: ...

    async def close(self, code: int, reason: str) -> None: ...


class Recorder(Protocol):
    """Where the session writes the call record as it goes."""

    async def user_item(self, item_id: str, text: str, at_s: float) -> None: ...

    async def assistant_item(
        self, item_id: str, text: str, at_s: float, interrupted: bool
    ) -> None: ...

    async def truncate(self, item_id: str, text: str) -> None: ...

    async def turn(
        self, response_id: str, status: str, at_s: float, spans: dict[str, Any]
    ) -> None: ...

    async def alive(self, history: list[dict[str, str]]) -> None: ...

    async def heartbeat(self) -> None: ...

    async def ended(self, reason: str) -> None: ...


class ClientError(Exception):
    """A bad client event: answered with an `error` event; the session goes on."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.param = code, message, param


@dataclass
class Limits:
    max_duration_s: float
    idle_timeout_s: float
    max_message_bytes: int


@dataclass
class _Reply:
    response_id: str
    item_id: str
    transcript: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    audio_ms: float = 0.0
    heard: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:22]}"


def _require(obj: Any, key: str, kind: type | tuple[type, ...], param: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ClientError("invalid_value", f"{param} is missing or has the wrong type.", param)
    return value


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
    ) -> None:
        self.id = session_id
        self.persona_slug = persona_slug
        self.call = call
        self._inference = inference
        self.transport = transport
        self.limits = limits
        self._recorder = recorder
        self._resolve_voice = resolve_voice
        self._clock = clock
        self._started = clock()
        self._elapsed_offset = elapsed_offset_s  # a resumed call goes on from its first start
        self._last_activity = clock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writes: set[asyncio.Task[Any]] = set()  # record writes: finished, not cancelled
        self._last_write: asyncio.Task[Any] | None = None
        self._closed = False
        self.end_reason: str | None = None
        self.ended = asyncio.Event()
        self._replies: dict[str, _Reply] = {}
        self._last_assistant: _Reply | None = None
        self._last_item_id: str | None = None
        self._partials: dict[str, str] = {}
        self._turn_detection: dict[str, Any] | None = {
            "type": "server_vad",
            "threshold": call.config.turns.threshold,
            "prefix_padding_ms": call.config.prefix_padding_ms,
            "silence_duration_ms": call.config.turns.end_of_turn_ms,
            "idle_timeout_ms": None,
            "create_response": call.config.create_response,
            "interrupt_response": call.config.interruptions_enabled,
        }
        self._manual_audio = bytearray()
        self._input_format = "audio/pcm"
        self._output_format = "audio/pcm"
        self._output_modalities = ["audio"]
        self._max_output_tokens: int | str = call.config.llm.max_tokens
        self._transcription: dict[str, Any] = {
            "model": "whisper-1",
            "language": call.config.language,
        }
        self._speed = call.config.voice.speed

    # ----- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        await self._send({"type": "session.created", "session": self.session_object()})
        self._spawn(self._pump())
        self._spawn(self._watchdog())

    def greet(self) -> None:
        """Speak the persona's greeting, when it is set to speak first."""
        if self.call.config.greeting:
            self.call.say(self.call.config.greeting)

    async def run(self) -> None:
        """Wait until the session ends."""
        await self.ended.wait()

    async def close(self, reason: str = "hangup") -> None:
        """Stop the call and every task of the session. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.end_reason = self.end_reason or reason
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()
        await self.call.close()
        close_inference = getattr(self._inference, "close", None)
        if close_inference is not None:  # the Channels client: end its reply readers
            with contextlib.suppress(Exception):
                await close_inference()
        pending = [t for t in self._tasks if t is not current]
        if pending:
            await asyncio.wait(pending, timeout=2.0)
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=10.0)
        with contextlib.suppress(Exception):
            await self._recorder.ended(self.end_reason)
        self.ended.set()

    async def end(self, reason: str, *, goodbye: bool = True) -> None:
        """End the call from the server side: say goodbye, then close the transport."""
        if self._closed or self.end_reason:
            return
        self.end_reason = reason
        text = GOODBYES.get(reason)
        if goodbye and text:
            response_id = self.call.say(text)
            reply = self._replies.setdefault(
                response_id, _Reply(response_id=response_id, item_id=new_id("item"))
            )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(15.0):
                    await reply.done.wait()
                    await asyncio.sleep(reply.audio_ms / 1000.0 + 0.3)  # let it play out
        if reason in END_NOTICES:
            code, message = END_NOTICES[reason]
            with contextlib.suppress(Exception):
                await self.send_error(code, message)
        with contextlib.suppress(Exception):
            await self.transport.close(1000, reason)
        await self.close(reason)

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

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

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
            idle = self.limits.idle_timeout_s
            if self.call.speaking or self._replies_in_flight():
                self._last_activity = now
            elif now - self._last_activity >= idle:
                self._spawn(self.end("idle_timeout"))
                return

    def _replies_in_flight(self) -> bool:
        return any(not r.done.is_set() for r in self._replies.values())

    # ----- the effective session ---------------------------------------------

    def session_object(self) -> dict[str, Any]:
        cfg = self.call.config
        return {
            "type": "realtime",
            "object": "realtime.session",
            "id": self.id,
            "model": self.persona_slug,
            "output_modalities": list(self._output_modalities),
            "instructions": cfg.instructions,
            "tools": [],
            "tool_choice": "auto",
            "max_output_tokens": self._max_output_tokens,
            "tracing": None,
            "prompt": None,
            "include": None,
            "audio": {
                "input": {
                    "format": format_object(self._input_format),
                    "transcription": dict(self._transcription),
                    "noise_reduction": None,
                    "turn_detection": dict(self._turn_detection) if self._turn_detection else None,
                },
                "output": {
                    "format": format_object(self._output_format),
                    "voice": cfg.voice.voice_id,
                    "speed": self._speed,
                },
            },
        }

    # ----- client events -----------------------------------------------------

    async def handle_text(self, raw: str | bytes) -> None:
        """One client event as it arrived; errors are answered, never raised."""
        event_id = None
        try:
            if len(raw) > self.limits.max_message_bytes:
                raise ClientError(
                    "message_too_large",
                    f"Messages may be at most {self.limits.max_message_bytes} bytes; "
                    f"this one has {len(raw)}. Send audio in smaller chunks.",
                )
            try:
                event = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ClientError("invalid_json", f"The message is not valid JSON: {exc}.") from exc
            if not isinstance(event, dict):
                raise ClientError("invalid_event", "An event must be a JSON object.")
            event_id = event.get("event_id") if isinstance(event.get("event_id"), str) else None
            kind = event.get("type")
            if not isinstance(kind, str):
                raise ClientError("invalid_event", "The event has no “type”.", "type")
            handler = self._handlers().get(kind)
            if handler is None:
                raise ClientError(
                    "unknown_event", f"Unknown or unsupported event type “{kind}”.", "type"
                )
            if kind != "input_audio_buffer.append":
                self._last_activity = self._clock()
            await handler(event)
        except ClientError as exc:
            await self.send_error(exc.code, exc.message, param=exc.param, event_id=event_id)
        except AudioFormatError as exc:
            await self.send_error("invalid_audio", str(exc), event_id=event_id)

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], Awaitable[None]]]:
        return {
            "session.update": self._session_update,
            "input_audio_buffer.append": self._append,
            "input_audio_buffer.commit": self._commit,
            "input_audio_buffer.clear": self._clear,
            "conversation.item.create": self._item_create,
            "conversation.item.truncate": self._truncate,
            "response.create": self._response_create,
            "response.cancel": self._response_cancel,
        }

    async def _session_update(self, event: dict[str, Any]) -> None:
        session = _require(event, "session", dict, "session")
        if session.get("type", "realtime") != "realtime":
            raise ClientError(
                "invalid_value", "Only session.type “realtime” is served.", "session.type"
            )
        cfg = self.call.config
        turn_detection = self._turn_detection
        modalities = self._output_modalities
        max_tokens: int | str = self._max_output_tokens
        transcription = dict(self._transcription)
        speed = self._speed
        if "instructions" in session:
            instructions = _require(session, "instructions", str, "session.instructions")
            cfg = replace(cfg, instructions=instructions)
        if "output_modalities" in session:
            modalities = _require(session, "output_modalities", list, "session.output_modalities")
            if modalities not in (["audio"], ["text"]):
                raise ClientError(
                    "invalid_value",
                    'output_modalities must be ["audio"] or ["text"].',
                    "session.output_modalities",
                )
            cfg = replace(cfg, speak=modalities == ["audio"])
        if "max_output_tokens" in session:
            max_tokens = session["max_output_tokens"]
            if max_tokens == "inf":
                cfg = replace(cfg, llm=replace(cfg.llm, max_tokens=1024))
            elif (
                isinstance(max_tokens, int)
                and not isinstance(max_tokens, bool)
                and 1 <= max_tokens <= 4096
            ):
                cfg = replace(cfg, llm=replace(cfg.llm, max_tokens=max_tokens))
            else:
                raise ClientError(
                    "invalid_value",
                    'max_output_tokens must be 1..4096 or "inf".',
                    "session.max_output_tokens",
                )
        audio = session.get("audio", {})
        if not isinstance(audio, dict):
            raise ClientError("invalid_value", "session.audio must be an object.", "session.audio")
        audio_in = audio.get("input", {}) or {}
        audio_out = audio.get("output", {}) or {}
        input_format, output_format = self._input_format, self._output_format
        if audio_in.get("format") is not None:
            input_format = self._check_format(audio_in["format"], "session.audio.input.format")
        if audio_out.get("format") is not None:
            output_format = self._check_format(audio_out["format"], "session.audio.output.format")
        if "transcription" in audio_in:
            value = audio_in["transcription"]
            if value is not None and not isinstance(value, dict):
                raise ClientError(
                    "invalid_value",
                    "transcription must be an object or null.",
                    "session.audio.input.transcription",
                )
            if value:
                transcription.update(
                    {k: v for k, v in value.items() if k in ("model", "language", "prompt")}
                )
                language = transcription.get("language")
                if language is not None:
                    if not isinstance(language, str) or not 2 <= len(language) <= 5:
                        raise ClientError(
                            "invalid_value",
                            "language must be a code like “en”.",
                            "session.audio.input.transcription.language",
                        )
                    cfg = replace(cfg, language=language)
        if "turn_detection" in audio_in:
            turn_detection, cfg = self._turn_detection_from(audio_in["turn_detection"], cfg)
        if "voice" in audio_out:
            voice_id = _require(audio_out, "voice", str, "session.audio.output.voice")
            voice = await self._resolve_voice(voice_id)
            if voice is None:
                raise ClientError(
                    "invalid_value",
                    f"Unknown voice “{voice_id}”; list them at /api/v1/voices/.",
                    "session.audio.output.voice",
                )
            cfg = replace(cfg, voice=replace(voice, speed=cfg.voice.speed))
        if "speed" in audio_out:
            speed = audio_out["speed"]
            if (
                not isinstance(speed, int | float)
                or isinstance(speed, bool)
                or not 0.25 <= speed <= 1.5
            ):
                raise ClientError(
                    "invalid_value",
                    "speed must be between 0.25 and 1.5.",
                    "session.audio.output.speed",
                )
            cfg = replace(cfg, voice=replace(cfg.voice, speed=float(speed)))
        # Everything validated: apply at once.
        self._turn_detection = turn_detection
        self._input_format, self._output_format = input_format, output_format
        self._output_modalities = list(modalities)
        self._max_output_tokens = max_tokens
        self._transcription = transcription
        self._speed = float(speed)
        self.call.update_config(cfg)
        await self._send({"type": "session.updated", "session": self.session_object()})

    def _check_format(self, fmt: Any, param: str) -> str:
        """The format's type, when it is one we serve."""
        if isinstance(fmt, dict) and fmt.get("type") in G711_FORMATS:
            return str(fmt["type"])
        if (
            not isinstance(fmt, dict)
            or fmt.get("type") != "audio/pcm"
            or fmt.get("rate", PCM_RATE) != PCM_RATE
        ):
            raise ClientError(
                "unsupported_audio_format",
                'Audio formats served: {"type": "audio/pcm", "rate": 24000}, '
                '{"type": "audio/pcmu"} and {"type": "audio/pcma"} (8 kHz G.711).',
                param,
            )
        return "audio/pcm"

    def _turn_detection_from(
        self, value: Any, cfg: CallConfig
    ) -> tuple[dict[str, Any] | None, CallConfig]:
        param = "session.audio.input.turn_detection"
        if value is None:
            return None, replace(cfg, create_response=False)
        if not isinstance(value, dict) or value.get("type") not in ("server_vad", "semantic_vad"):
            raise ClientError(
                "invalid_value", "turn_detection.type must be server_vad or semantic_vad.", param
            )
        current = dict(self._turn_detection or {})
        merged = {**current, **value}
        turns = cfg.turns
        if value["type"] == "semantic_vad":
            eagerness = merged.get("eagerness", "auto")
            if eagerness not in SEMANTIC_EAGERNESS_MS:
                raise ClientError(
                    "invalid_value",
                    "eagerness must be low, medium, high or auto.",
                    param + ".eagerness",
                )
            eot = SEMANTIC_EAGERNESS_MS[eagerness]
            merged = {
                "type": "semantic_vad",
                "eagerness": eagerness,
                "create_response": merged.get("create_response", True),
                "interrupt_response": merged.get("interrupt_response", True),
            }
        else:
            threshold = merged.get("threshold", turns.threshold)
            if not isinstance(threshold, int | float) or not 0.0 < threshold < 1.0:
                raise ClientError(
                    "invalid_value", "threshold must be between 0 and 1.", param + ".threshold"
                )
            eot = merged.get("silence_duration_ms", turns.end_of_turn_ms)
            if not isinstance(eot, int) or not 100 <= eot <= 3000:
                raise ClientError(
                    "invalid_value",
                    "silence_duration_ms must be 100..3000.",
                    param + ".silence_duration_ms",
                )
            padding = merged.get("prefix_padding_ms", cfg.prefix_padding_ms)
            if not isinstance(padding, int) or not 0 <= padding <= 1000:
                raise ClientError(
                    "invalid_value",
                    "prefix_padding_ms must be 0..1000.",
                    param + ".prefix_padding_ms",
                )
            idle_ms = merged.get("idle_timeout_ms")
            if idle_ms is not None:
                if not isinstance(idle_ms, int) or not 5000 <= idle_ms <= 30 * 60_000:
                    raise ClientError(
                        "invalid_value",
                        "idle_timeout_ms must be 5000..1800000.",
                        param + ".idle_timeout_ms",
                    )
                self.limits.idle_timeout_s = idle_ms / 1000
            turns = replace(turns, threshold=float(threshold))
            cfg = replace(cfg, prefix_padding_ms=padding)
        turns = replace(
            turns,
            end_of_turn_ms=eot,
            complete_end_of_turn_ms=min(eot, max(160, eot // 2)),
            incomplete_end_of_turn_ms=min(3000, max(eot, eot * 2)),
        )
        for flag in ("create_response", "interrupt_response"):
            if not isinstance(merged.get(flag, True), bool):
                raise ClientError(
                    "invalid_value", f"{flag} must be true or false.", f"{param}.{flag}"
                )
        cfg = replace(
            cfg,
            turns=turns,
            create_response=merged.get("create_response", True),
            interruptions_enabled=merged.get("interrupt_response", True),
        )
        return merged, cfg

    def _decode_audio(self, event: dict[str, Any]) -> tuple[bytes, int]:
        """The appended audio as PCM16 and its sample rate, in the session's input format."""
        audio = _require(event, "audio", str, "audio")
        try:
            data = base64.b64decode(audio, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ClientError("invalid_audio", "audio is not valid base64.", "audio") from exc
        telephone = self._input_format in G711_FORMATS
        rate, width = (g711.RATE, 1) if telephone else (PCM_RATE, 2)
        if len(data) % width:
            raise ClientError(
                "invalid_audio", "audio/pcm must be 16-bit samples (an even byte count).", "audio"
            )
        if len(data) > MAX_APPEND_SECONDS * rate * width:
            raise ClientError(
                "invalid_audio", f"Append at most {MAX_APPEND_SECONDS} s of audio at once.", "audio"
            )
        if telephone:
            return g711_decode(self._input_format, data), rate
        return data, rate

    async def _append(self, event: dict[str, Any]) -> None:
        pcm, rate = self._decode_audio(event)
        self.push_audio(pcm, rate, 1)

    def push_audio(self, pcm: bytes, sample_rate: int, channels: int = 1) -> None:
        """Microphone audio from the transport (PCM16, interleaved when stereo)."""
        if self._closed:
            return
        if self._turn_detection is None:
            if sample_rate == PCM_RATE and channels == 1:
                self._manual_audio.extend(pcm)
                return
            mono = pcm16_to_float(pcm, channels)
            if mono.ndim > 1:
                mono = mono.mean(axis=1)
            if sample_rate != PCM_RATE:
                mono = resample(mono, sample_rate, PCM_RATE)
            self._manual_audio.extend(float_to_pcm16(mono))
            return
        self.call.push_audio(pcm, sample_rate, channels)

    async def _commit(self, event: dict[str, Any]) -> None:
        if self._turn_detection is not None:
            return  # with turn detection the server commits at end of turn
        if len(self._manual_audio) < PCM_RATE * 2 // 10:
            raise ClientError(
                "input_audio_buffer_commit_empty", "Commit needs at least 100 ms of appended audio."
            )
        pcm = bytes(self._manual_audio)
        self._manual_audio.clear()
        item_id = new_id("item")
        await self._send(
            {
                "type": "input_audio_buffer.committed",
                "item_id": item_id,
                "previous_item_id": self._last_item_id,
            }
        )
        await self._announce_user_item(item_id)
        audio16 = resample(pcm16_to_float(pcm, 1), PCM_RATE, 16000)
        try:
            config = self.call.config
            transcript = await self._inference.transcribe(
                audio16, config.language, config.asr_model
            )
        except InferenceError as exc:
            await self._send(
                {
                    "type": "conversation.item.input_audio_transcription.failed",
                    "item_id": item_id,
                    "content_index": 0,
                    "error": {"type": "server_error", "code": exc.code, "message": str(exc)},
                }
            )
            return
        text = "" if transcript.rejected else transcript.text
        self.call.add_message("user", text)
        await self._user_transcript(item_id, text, transcript.audio_seconds)

    async def _clear(self, event: dict[str, Any]) -> None:
        self._manual_audio.clear()
        await self._send({"type": "input_audio_buffer.cleared"})

    async def _item_create(self, event: dict[str, Any]) -> None:
        item = _require(event, "item", dict, "item")
        if item.get("type", "message") != "message":
            raise ClientError(
                "invalid_value", "Only items of type “message” are served.", "item.type"
            )
        role = item.get("role")
        if role not in ("user", "system"):
            raise ClientError("invalid_value", "item.role must be “user” or “system”.", "item.role")
        content = _require(item, "content", list, "item.content")
        texts = []
        for index, part in enumerate(content):
            if (
                not isinstance(part, dict)
                or part.get("type") != "input_text"
                or not isinstance(part.get("text"), str)
            ):
                raise ClientError(
                    "invalid_value",
                    'Each content part must be {"type": "input_text", "text": ...}.',
                    f"item.content[{index}]",
                )
            texts.append(part["text"])
        text = "\n".join(texts)
        if not text.strip():
            raise ClientError("invalid_value", "The message is empty.", "item.content")
        item_id = item.get("id") if isinstance(item.get("id"), str) else new_id("item")
        self.call.add_message(role, text)
        full = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": role,
            "status": "completed",
            "content": [{"type": "input_text", "text": text}],
        }
        previous, self._last_item_id = self._last_item_id, item_id
        for kind in (
            "conversation.item.created",
            "conversation.item.added",
            "conversation.item.done",
        ):
            await self._send({"type": kind, "previous_item_id": previous, "item": full})
        if role == "user":
            self._record(self._recorder.user_item(item_id, text, self._elapsed()))
        self._record(self._recorder.alive([dict(m) for m in self.call.history]))

    async def _truncate(self, event: dict[str, Any]) -> None:
        item_id = _require(event, "item_id", str, "item_id")
        audio_end_ms = _require(event, "audio_end_ms", int, "audio_end_ms")
        content_index = event.get("content_index", 0)
        reply = self._last_assistant
        if reply is None or reply.item_id != item_id:
            raise ClientError(
                "item_not_found", f"No assistant audio item “{item_id}” to truncate.", "item_id"
            )
        if audio_end_ms < 0 or audio_end_ms > reply.audio_ms + 1:
            raise ClientError(
                "invalid_value",
                f"audio_end_ms must be between 0 and {int(reply.audio_ms)}.",
                "audio_end_ms",
            )
        heard = self.call.truncate(audio_end_ms)
        reply.heard = heard
        self._record(self._recorder.truncate(item_id, heard))
        await self._send(
            {
                "type": "conversation.item.truncated",
                "item_id": item_id,
                "content_index": content_index,
                "audio_end_ms": audio_end_ms,
            }
        )

    async def _response_create(self, event: dict[str, Any]) -> None:
        response = event.get("response") or {}
        if not isinstance(response, dict):
            raise ClientError("invalid_value", "response must be an object.", "response")
        instructions = response.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise ClientError(
                "invalid_value", "response.instructions must be a string.", "response.instructions"
            )
        max_tokens = response.get("max_output_tokens")
        if max_tokens == "inf":
            max_tokens = None
        elif max_tokens is not None and (
            not isinstance(max_tokens, int)
            or isinstance(max_tokens, bool)
            or not 1 <= max_tokens <= 4096
        ):
            raise ClientError(
                "invalid_value",
                'max_output_tokens must be 1..4096 or "inf".',
                "response.max_output_tokens",
            )
        self.call.create_response(instructions=instructions, max_output_tokens=max_tokens)

    async def _response_cancel(self, event: dict[str, Any]) -> None:
        wanted = event.get("response_id")
        active = [r for r in self._replies.values() if not r.done.is_set()]
        if not active or (wanted and all(r.response_id != wanted for r in active)):
            raise ClientError(
                "response_cancel_not_active", "There is no response in progress to cancel."
            )
        self.call.cancel_response()

    # ----- server events -----------------------------------------------------

    def _elapsed(self) -> float:
        return self._elapsed_offset + self._clock() - self._started

    async def _send(self, event: dict[str, Any]) -> None:
        event.setdefault("event_id", new_id("event"))
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
            {
                "type": "error",
                "event_id": new_id("event"),
                "error": {
                    "type": kind,
                    "code": code,
                    "message": message,
                    "param": param,
                    "event_id": event_id,
                },
            }
        )

    async def _announce_user_item(self, item_id: str) -> None:
        item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "user",
            "status": "in_progress",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        previous, self._last_item_id = self._last_item_id, item_id
        for kind in ("conversation.item.created", "conversation.item.added"):
            await self._send({"type": kind, "previous_item_id": previous, "item": item})

    async def _user_transcript(self, item_id: str, text: str, seconds: float) -> None:
        await self._send(
            {
                "type": "conversation.item.input_audio_transcription.completed",
                "item_id": item_id,
                "content_index": 0,
                "transcript": text,
                "usage": {"type": "duration", "seconds": round(seconds, 3)},
            }
        )
        await self._send(
            {
                "type": "conversation.item.done",
                "previous_item_id": None,
                "item": {
                    "id": item_id,
                    "object": "realtime.item",
                    "type": "message",
                    "role": "user",
                    "status": "completed",
                    "content": [{"type": "input_audio", "transcript": text}],
                },
            }
        )
        if text:
            self._record(self._recorder.user_item(item_id, text, self._elapsed()))
        self._record(self._recorder.alive([dict(m) for m in self.call.history]))

    async def _pump(self) -> None:
        try:
            async for frame in self.call.frames():
                await self._on_frame(frame)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("session %s: output failed", self.id)
            self._spawn(self.close("error"))

    async def _on_frame(self, frame: Frame) -> None:
        if isinstance(frame, TTSAudio):
            await self._on_audio(frame)
        elif isinstance(frame, TextClause):
            reply = self._replies.get(frame.response_id)
            if reply is not None:
                delta = (" " if reply.transcript else "") + frame.text.strip()
                reply.transcript.append(delta)
                if "audio" in self._output_modalities:
                    await self._send(
                        {
                            "type": "response.output_audio_transcript.delta",
                            "response_id": reply.response_id,
                            "item_id": reply.item_id,
                            "output_index": 0,
                            "content_index": 0,
                            "delta": delta,
                        }
                    )
        elif isinstance(frame, LLMToken):
            reply = self._replies.get(frame.response_id)
            if reply is not None and "text" in self._output_modalities:
                reply.text.append(frame.text)
                await self._send(
                    {
                        "type": "response.output_text.delta",
                        "response_id": reply.response_id,
                        "item_id": reply.item_id,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": frame.text,
                    }
                )
        elif isinstance(frame, SpeechStarted):
            self._last_activity = self._clock()
            self._flush_output()
            await self._send(
                {
                    "type": "input_audio_buffer.speech_started",
                    "audio_start_ms": frame.audio_start_ms,
                    "item_id": frame.item_id,
                }
            )
        elif isinstance(frame, SpeechStopped):
            self._last_activity = self._clock()
            await self._send(
                {
                    "type": "input_audio_buffer.speech_stopped",
                    "audio_end_ms": frame.audio_end_ms,
                    "item_id": frame.item_id,
                }
            )
            await self._send(
                {
                    "type": "input_audio_buffer.committed",
                    "item_id": frame.item_id,
                    "previous_item_id": self._last_item_id,
                }
            )
            await self._announce_user_item(frame.item_id)
        elif isinstance(frame, TranscriptPartial):
            before = self._partials.get(frame.item_id, "")
            if frame.text.startswith(before) and len(frame.text) > len(before):
                self._partials[frame.item_id] = frame.text
                await self._send(
                    {
                        "type": "conversation.item.input_audio_transcription.delta",
                        "item_id": frame.item_id,
                        "content_index": 0,
                        "delta": frame.text[len(before) :],
                    }
                )
        elif isinstance(frame, TranscriptFinal):
            self._partials.pop(frame.item_id, None)
            await self._user_transcript(frame.item_id, frame.text, frame.audio_seconds)
        elif isinstance(frame, TranscriptFailed):
            self._partials.pop(frame.item_id, None)
            await self._send(
                {
                    "type": "conversation.item.input_audio_transcription.failed",
                    "item_id": frame.item_id,
                    "content_index": 0,
                    "error": {
                        "type": "transcription_error",
                        "code": frame.reason,
                        "message": frame.message,
                        "param": None,
                    },
                }
            )
        elif isinstance(frame, ResponseStarted):
            await self._on_response_started(frame)
        elif isinstance(frame, Interruption):
            reply = self._replies.get(frame.response_id)
            if reply is not None:
                reply.heard = frame.heard_text
            self._flush_output()
        elif isinstance(frame, ResponseDone):
            await self._on_response_done(frame)
        elif isinstance(frame, ErrorFrame):
            await self.send_error(frame.code, frame.message, kind="server_error")

    def _flush_output(self) -> None:
        flush = getattr(self.transport, "flush_audio", None)
        if callable(flush):
            flush()

    async def _on_audio(self, frame: TTSAudio) -> None:
        reply = self._replies.get(frame.response_id)
        if reply is None:
            return
        reply.audio_ms += 1000.0 * len(frame.pcm) / 2 / frame.sample_rate
        if "audio" not in self._output_modalities:
            return
        if not self.transport.audio_as_events:
            await self.transport.send_audio(frame.pcm, frame.sample_rate)
            return
        pcm = frame.pcm
        if self._output_format in G711_FORMATS:
            samples = resample(pcm16_to_float(pcm, 1), frame.sample_rate, g711.RATE)
            pcm = g711_encode(self._output_format, samples)
        elif frame.sample_rate != PCM_RATE:
            samples = resample(pcm16_to_float(pcm, 1), frame.sample_rate, PCM_RATE)
            pcm = float_to_pcm16(samples)
        await self._send(
            {
                "type": "response.output_audio.delta",
                "response_id": reply.response_id,
                "item_id": reply.item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": base64.b64encode(pcm).decode("ascii"),
            }
        )

    def _response_object(
        self, reply: _Reply, status: str, item: dict[str, Any] | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "object": "realtime.response",
            "id": reply.response_id,
            "status": status,
            "conversation_id": self.id,
            "output_modalities": list(self._output_modalities),
            "max_output_tokens": self._max_output_tokens,
            "metadata": None,
            "audio": {
                "output": {
                    "format": format_object(self._output_format),
                    "voice": self.call.config.voice.voice_id,
                }
            },
            "output": [item] if item else [],
            **extra,
        }

    def _assistant_item(self, reply: _Reply, status: str, transcript: str | None) -> dict[str, Any]:
        if "audio" in self._output_modalities:
            part = {"type": "output_audio", "transcript": transcript}
        else:
            part = {"type": "output_text", "text": transcript}
        return {
            "id": reply.item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": [part] if transcript is not None else [],
        }

    async def _on_response_started(self, frame: ResponseStarted) -> None:
        reply = self._replies.setdefault(
            frame.response_id, _Reply(response_id=frame.response_id, item_id=new_id("item"))
        )
        self._last_activity = self._clock()
        await self._send(
            {"type": "response.created", "response": self._response_object(reply, "in_progress")}
        )
        item = self._assistant_item(reply, "in_progress", None)
        await self._send(
            {
                "type": "response.output_item.added",
                "response_id": reply.response_id,
                "output_index": 0,
                "item": item,
            }
        )
        previous, self._last_item_id = self._last_item_id, reply.item_id
        await self._send(
            {"type": "conversation.item.added", "previous_item_id": previous, "item": item}
        )
        part_type = "audio" if "audio" in self._output_modalities else "text"
        await self._send(
            {
                "type": "response.content_part.added",
                "response_id": reply.response_id,
                "item_id": reply.item_id,
                "output_index": 0,
                "content_index": 0,
                "part": {"type": part_type, "transcript": ""}
                if part_type == "audio"
                else {"type": "text", "text": ""},
            }
        )

    async def _on_response_done(self, frame: ResponseDone) -> None:
        reply = self._replies.get(frame.response_id)
        if reply is None:
            return
        self._last_activity = self._clock()
        audio_mode = "audio" in self._output_modalities
        spoken = "".join(reply.transcript) if audio_mode else "".join(reply.text)
        interrupted = frame.status == "cancelled"
        text = reply.heard if (interrupted and reply.heard is not None) else (spoken or frame.text)
        ids = {
            "response_id": reply.response_id,
            "item_id": reply.item_id,
            "output_index": 0,
            "content_index": 0,
        }
        if audio_mode:
            await self._send({"type": "response.output_audio.done", **ids})
            await self._send(
                {"type": "response.output_audio_transcript.done", **ids, "transcript": text}
            )
            part = {"type": "audio", "transcript": text}
        else:
            await self._send({"type": "response.output_text.done", **ids, "text": text})
            part = {"type": "text", "text": text}
        await self._send({"type": "response.content_part.done", **ids, "part": part})
        status = "completed" if frame.status == "completed" else "incomplete"
        item = self._assistant_item(reply, status, text)
        await self._send(
            {
                "type": "response.output_item.done",
                "response_id": reply.response_id,
                "output_index": 0,
                "item": item,
            }
        )
        await self._send({"type": "conversation.item.done", "previous_item_id": None, "item": item})
        usage = frame.usage or {}
        latency = {k: v for k, v in frame.latency.items() if k != "send_ms"}
        details: dict[str, Any] | None = None
        if frame.status == "cancelled":
            details = {
                "type": "cancelled",
                "reason": "turn_detected" if reply.heard is not None else "client_cancelled",
            }
        elif frame.status == "failed":
            details = {
                "type": "failed",
                "error": {
                    "type": "server_error",
                    "code": "inference_failed",
                    "message": frame.text or "The reply failed.",
                },
            }
        await self._send(
            {
                "type": "response.done",
                "response": self._response_object(
                    reply,
                    frame.status,
                    item,
                    status_details=details,
                    usage={
                        "input_tokens": usage.get("input_tokens", 0),
                        "output_tokens": usage.get("output_tokens", 0),
                        "total_tokens": usage.get("input_tokens", 0)
                        + usage.get("output_tokens", 0),
                    },
                    latency=latency,
                ),
            }
        )
        self._last_assistant = reply
        reply.done.set()
        if text:
            self._record(
                self._recorder.assistant_item(reply.item_id, text, self._elapsed(), interrupted)
            )
        self._record(
            self._recorder.turn(reply.response_id, frame.status, self._elapsed(), frame.latency)
        )
        self._record(self._recorder.alive([dict(m) for m in self.call.history]))
