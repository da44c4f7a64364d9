"""Server events and the objects inside them, built from plain values."""

from __future__ import annotations

import uuid
from typing import Any

from sessions.realtime.codecs import format_object
from sessions.realtime.settings import SessionSettings


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:22]}"


def error(
    code: str,
    message: str,
    *,
    param: str | None = None,
    event_id: str | None = None,
    kind: str = "invalid_request_error",
) -> dict[str, Any]:
    return {
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


def session_object(
    settings: SessionSettings, *, session_id: str, model: str, show_instructions: bool
) -> dict[str, Any]:
    """The effective session as the API shows it. A widget caller is not shown
    the persona's instructions (the key is public)."""
    session: dict[str, Any] = {
        "type": "realtime",
        "object": "realtime.session",
        "id": session_id,
        "model": model,
        "output_modalities": list(settings.output_modalities),
        "instructions": settings.instructions,
        "tools": settings.tools_api(),
        "tool_choice": settings.tool_choice_api(),
        "max_output_tokens": settings.max_output_tokens,
        "tracing": None,
        "prompt": None,
        "include": None,
        "audio": {
            "input": {
                "format": format_object(settings.input_format),
                "transcription": settings.transcription(),
                "noise_reduction": None,
                "turn_detection": settings.turn_detection,
            },
            "output": {
                "format": format_object(settings.output_format),
                "voice": settings.voice_id,
                "speed": settings.speed,
            },
        },
    }
    if not show_instructions:
        del session["instructions"]
    return session


def user_audio_item(item_id: str, transcript: str | None, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "user",
        "status": status,
        "content": [{"type": "input_audio", "transcript": transcript}],
    }


def text_item(item_id: str, role: str, text: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": role,
        "status": "completed",
        "content": [{"type": "input_text", "text": text}],
    }


def function_call_item(
    item_id: str, status: str, call_id: str, name: str, arguments: str
) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def tool_output_item(item_id: str, call_id: str, output: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call_output",
        "status": "completed",
        "call_id": call_id,
        "output": output,
    }


def assistant_item(
    item_id: str, status: str, transcript: str | None, *, audio: bool
) -> dict[str, Any]:
    part: dict[str, Any]
    if audio:
        part = {"type": "output_audio", "transcript": transcript}
    else:
        part = {"type": "output_text", "text": transcript}
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [part] if transcript is not None else [],
    }


def response_object(
    settings: SessionSettings,
    *,
    response_id: str,
    conversation_id: str,
    status: str,
    output: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "object": "realtime.response",
        "id": response_id,
        "status": status,
        "conversation_id": conversation_id,
        "output_modalities": list(settings.output_modalities),
        "max_output_tokens": settings.max_output_tokens,
        "metadata": None,
        "audio": {
            "output": {
                "format": format_object(settings.output_format),
                "voice": settings.voice_id,
            }
        },
        "output": output or [],
        **extra,
    }
