"""A transport that keeps what the session sends, for calls run without a socket."""

from __future__ import annotations

from typing import Any


class ListTransport:
    name = "websocket"
    audio_as_events = True

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.closed: tuple[int, str] | None = None

    async def send_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None:
        raise AssertionError("audio travels as events here")

    async def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)
