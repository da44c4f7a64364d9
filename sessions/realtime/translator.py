"""Engine frames in, server events out, in the order REALTIME_PROTOCOL.md lists.

`Translator` keeps what the events need to refer back to (each reply's item,
the previous item, partial transcripts) and nothing about the client's input.
What happens besides sending (the call record, the idle clock) goes to its
`Host`, the session."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sessions.realtime import events
from sessions.realtime.codecs import encode_reply
from sessions.realtime.settings import SessionSettings
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
    ToolCallMade,
    TranscriptFailed,
    TranscriptFinal,
    TranscriptPartial,
    TTSAudio,
)


@dataclass
class Reply:
    response_id: str
    item_id: str
    transcript: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    audio_ms: float = 0.0
    heard: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # The response's output items, in order: its message (added with its first words)
    # and the function calls it made, as the events showed them once done.
    message_index: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""  # the response's, once done
    actions: int = 0  # calls of the persona's actions (run by the server, not shown)
    # The caller handed to a person (transfer_call): `response.handoff` on its done
    handoff: dict[str, str] | None = None

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [item for item in self.outputs if item["type"] == "function_call"]


class AudioOut(Protocol):
    audio_as_events: bool

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None: ...


class Host(Protocol):
    def touch(self) -> None:
        """Something happened: the idle clock starts again."""

    def user_turn_done(self, item_id: str, text: str, asr_seconds: float) -> None: ...

    def reply_done(self, reply: Reply, frame: ResponseDone, text: str) -> None: ...

    def caller_speech(self, item_id: str, audio_start_ms: int) -> None:
        """The caller began the turn `item_id` (for the call's audio recording)."""

    def reply_audio(self, item_id: str, pcm: bytes, sample_rate: int) -> None:
        """Reply audio went to the caller (for the call's audio recording)."""

    def runs_tool(self, name: str) -> bool:
        """Whether the server runs the tool `name` itself (a persona's action)."""

    def run_tool(self, reply: Reply, frame: ToolCallMade) -> None:
        """Run the action `frame` calls, once `reply` is done."""


class Translator:
    def __init__(
        self,
        *,
        conversation_id: str,
        send: Callable[[dict[str, Any]], Awaitable[None]],
        audio_out: AudioOut,
        flush_audio: Callable[[], None],
        settings: Callable[[], SessionSettings],
        host: Host,
    ) -> None:
        self.conversation_id = conversation_id
        self._send = send
        self._audio_out = audio_out
        self._flush_audio = flush_audio
        self._settings = settings
        self._host = host
        self.replies: dict[str, Reply] = {}
        self.last_assistant: Reply | None = None
        self.last_item_id: str | None = None
        self._partials: dict[str, str] = {}

    # ----- state the session asks about -----------------------------------------

    def reply_for(self, response_id: str) -> Reply:
        return self.replies.setdefault(
            response_id, Reply(response_id=response_id, item_id=events.new_id("item"))
        )

    def in_flight(self) -> list[Reply]:
        return [r for r in self.replies.values() if not r.done.is_set()]

    def chain(self, item_id: str) -> str | None:
        """Make `item_id` the latest item; the one before it."""
        previous, self.last_item_id = self.last_item_id, item_id
        return previous

    # ----- user items -----------------------------------------------------------

    async def announce_user_item(self, item_id: str) -> None:
        item = events.user_audio_item(item_id, None, "in_progress")
        previous = self.chain(item_id)
        for kind in ("conversation.item.created", "conversation.item.added"):
            await self._send({"type": kind, "previous_item_id": previous, "item": item})

    async def user_transcript(self, item_id: str, text: str, seconds: float) -> None:
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
                "item": events.user_audio_item(item_id, text, "completed"),
            }
        )
        self._host.user_turn_done(item_id, text, seconds)

    async def transcription_failed(self, item_id: str, error: dict[str, Any]) -> None:
        await self._send(
            {
                "type": "conversation.item.input_audio_transcription.failed",
                "item_id": item_id,
                "content_index": 0,
                "error": error,
            }
        )

    # ----- frames ---------------------------------------------------------------

    async def on_frame(self, frame: Frame) -> None:
        if isinstance(frame, TTSAudio):
            await self._on_audio(frame)
        elif isinstance(frame, TextClause):
            await self._on_clause(frame)
        elif isinstance(frame, LLMToken):
            await self._on_token(frame)
        elif isinstance(frame, SpeechStarted):
            self._host.touch()
            self._host.caller_speech(frame.item_id, frame.audio_start_ms)
            self._flush_audio()
            await self._send(
                {
                    "type": "input_audio_buffer.speech_started",
                    "audio_start_ms": frame.audio_start_ms,
                    "item_id": frame.item_id,
                }
            )
        elif isinstance(frame, SpeechStopped):
            self._host.touch()
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
                    "previous_item_id": self.last_item_id,
                }
            )
            await self.announce_user_item(frame.item_id)
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
            await self.user_transcript(frame.item_id, frame.text, frame.audio_seconds)
        elif isinstance(frame, TranscriptFailed):
            self._partials.pop(frame.item_id, None)
            await self.transcription_failed(
                frame.item_id,
                {
                    "type": "transcription_error",
                    "code": frame.reason,
                    "message": frame.message,
                    "param": None,
                },
            )
        elif isinstance(frame, ResponseStarted):
            await self._on_response_started(frame)
        elif isinstance(frame, Interruption):
            reply = self.replies.get(frame.response_id)
            if reply is not None:
                reply.heard = frame.heard_text
            self._flush_audio()
        elif isinstance(frame, ToolCallMade):
            await self._on_tool_call(frame)
        elif isinstance(frame, ResponseDone):
            await self._on_response_done(frame)
        elif isinstance(frame, ErrorFrame):
            await self._send(events.error(frame.code, frame.message, kind="server_error"))

    def _ids(self, reply: Reply) -> dict[str, Any]:
        return {
            "response_id": reply.response_id,
            "item_id": reply.item_id,
            "output_index": reply.message_index or 0,
            "content_index": 0,
        }

    async def _on_clause(self, frame: TextClause) -> None:
        reply = self.replies.get(frame.response_id)
        if reply is None:
            return
        await self._add_message(reply)
        delta = (" " if reply.transcript else "") + frame.text.strip()
        reply.transcript.append(delta)
        if self._settings().speaks:
            await self._send(
                {
                    "type": "response.output_audio_transcript.delta",
                    **self._ids(reply),
                    "delta": delta,
                }
            )

    async def _on_token(self, frame: LLMToken) -> None:
        reply = self.replies.get(frame.response_id)
        if reply is not None and "text" in self._settings().output_modalities:
            await self._add_message(reply)
            reply.text.append(frame.text)
            await self._send(
                {"type": "response.output_text.delta", **self._ids(reply), "delta": frame.text}
            )

    async def _on_audio(self, frame: TTSAudio) -> None:
        reply = self.replies.get(frame.response_id)
        if reply is None:
            return
        reply.audio_ms += 1000.0 * len(frame.pcm) / 2 / frame.sample_rate
        settings = self._settings()
        if not settings.speaks:
            return
        await self._add_message(reply)
        self._host.reply_audio(reply.item_id, frame.pcm, frame.sample_rate)
        if not self._audio_out.audio_as_events:
            await self._audio_out.send_audio(frame.pcm, frame.sample_rate)
            return
        pcm = encode_reply(frame.pcm, frame.sample_rate, settings.output_format)
        await self._send(
            {
                "type": "response.output_audio.delta",
                **self._ids(reply),
                "delta": base64.b64encode(pcm).decode("ascii"),
            }
        )

    def _response(self, reply: Reply, status: str, **extra: Any) -> Any:
        return events.response_object(
            self._settings(),
            response_id=reply.response_id,
            conversation_id=self.conversation_id,
            status=status,
            **extra,
        )

    async def _on_response_started(self, frame: ResponseStarted) -> None:
        for done in [r for r in self.replies.values() if r.done.is_set()]:
            del self.replies[done.response_id]  # bounded: finished replies are not referred to
        reply = self.reply_for(frame.response_id)
        self._host.touch()
        await self._send(
            {"type": "response.created", "response": self._response(reply, "in_progress")}
        )

    async def _add_message(self, reply: Reply) -> None:
        """The reply's message item, announced with its first words (a reply that only
        calls a tool has none)."""
        if reply.message_index is not None:
            return
        reply.message_index = len(reply.outputs)
        audio = self._settings().speaks
        item = events.assistant_item(reply.item_id, "in_progress", None, audio=audio)
        await self._send(
            {
                "type": "response.output_item.added",
                "response_id": reply.response_id,
                "output_index": reply.message_index,
                "item": item,
            }
        )
        previous = self.chain(reply.item_id)
        await self._send(
            {"type": "conversation.item.added", "previous_item_id": previous, "item": item}
        )
        part = {"type": "audio", "transcript": ""} if audio else {"type": "text", "text": ""}
        await self._send({"type": "response.content_part.added", **self._ids(reply), "part": part})

    async def _on_tool_call(self, frame: ToolCallMade) -> None:
        """A function call item, streamed and done at once (its arguments are whole)."""
        reply = self.replies.get(frame.response_id)
        if reply is None:
            return
        self._host.touch()
        if self._host.runs_tool(frame.name):  # the persona's action: not the client's to answer
            reply.actions += 1
            self._host.run_tool(reply, frame)
            return
        index = len(reply.outputs) + (1 if reply.message_index is not None else 0)
        item_id = events.new_id("item")
        ids = {"response_id": reply.response_id, "item_id": item_id, "output_index": index}
        call = {"call_id": frame.call_id}
        added = events.function_call_item(item_id, "in_progress", frame.call_id, frame.name, "")
        await self._send(
            {
                "type": "response.output_item.added",
                "response_id": reply.response_id,
                "output_index": index,
                "item": added,
            }
        )
        previous = self.chain(item_id)
        await self._send(
            {"type": "conversation.item.added", "previous_item_id": previous, "item": added}
        )
        await self._send(
            {
                "type": "response.function_call_arguments.delta",
                **ids,
                **call,
                "delta": frame.arguments,
            }
        )
        await self._send(
            {
                "type": "response.function_call_arguments.done",
                **ids,
                **call,
                "name": frame.name,
                "arguments": frame.arguments,
            }
        )
        item = events.function_call_item(
            item_id, "completed", frame.call_id, frame.name, frame.arguments
        )
        await self._send(
            {
                "type": "response.output_item.done",
                "response_id": reply.response_id,
                "output_index": index,
                "item": item,
            }
        )
        await self._send({"type": "conversation.item.done", "previous_item_id": None, "item": item})
        reply.outputs.append(item)

    async def _on_response_done(self, frame: ResponseDone) -> None:
        reply = self.replies.get(frame.response_id)
        if reply is None:
            return
        self._host.touch()
        audio = self._settings().speaks
        spoken = "".join(reply.transcript) if audio else "".join(reply.text)
        interrupted = frame.status == "cancelled"
        text = reply.heard if (interrupted and reply.heard is not None) else (spoken or frame.text)
        if reply.message_index is not None or not (reply.outputs or reply.actions):
            await self._finish_message(reply, frame, text)
        await self._send_done(reply, frame)
        self.last_assistant = reply
        reply.status = frame.status
        reply.done.set()
        self._host.reply_done(reply, frame, text)

    async def _finish_message(self, reply: Reply, frame: ResponseDone, text: str) -> None:
        await self._add_message(reply)  # a reply with no words and no call: an empty message
        audio = self._settings().speaks
        ids = self._ids(reply)
        part: dict[str, Any]
        if audio:
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
        item = events.assistant_item(reply.item_id, status, text, audio=audio)
        await self._send(
            {
                "type": "response.output_item.done",
                "response_id": reply.response_id,
                "output_index": reply.message_index,
                "item": item,
            }
        )
        await self._send({"type": "conversation.item.done", "previous_item_id": None, "item": item})
        reply.outputs.insert(reply.message_index or 0, item)

    async def _send_done(self, reply: Reply, frame: ResponseDone) -> None:
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
        tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        cached = usage.get("cached_tokens", 0)
        await self._send(
            {
                "type": "response.done",
                "response": self._response(
                    reply,
                    frame.status,
                    output=reply.outputs,
                    status_details=details,
                    usage={
                        "input_tokens": tokens_in,
                        "output_tokens": tokens_out,
                        "total_tokens": tokens_in + tokens_out,
                        "input_token_details": {
                            "text_tokens": tokens_in,
                            "audio_tokens": 0,
                            "cached_tokens": cached,
                        },
                        "output_token_details": {"text_tokens": tokens_out, "audio_tokens": 0},
                    },
                    latency=latency,
                    timeline={k: round(v, 1) for k, v in frame.timeline.items()},
                    **({"handoff": reply.handoff} if reply.handoff else {}),
                ),
            }
        )
