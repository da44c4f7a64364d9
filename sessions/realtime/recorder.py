"""Where a session writes its call record, and the bounds on what it writes.

`Recorder` is what the session needs (sessions/runner.py's `DbRecorder` writes
rows and the live store). `CappedRecorder` wraps one so that a call writes at
most `MAX_RECORDED_ITEMS` transcript rows and copies at most
`MAX_HISTORY_ITEMS` messages to the live store."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from sessions.realtime.limits import MAX_HISTORY_ITEMS, MAX_RECORDED_ITEMS
from sessions.realtime.recording import CaptureResult

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Usage:
    """What one step of a call used: a transcription, or a reply."""

    asr_seconds: float = 0.0
    llm_input_tokens: int = 0
    llm_output_tokens: int = 0
    tts_characters: int = 0

    def __bool__(self) -> bool:
        return any(
            (self.asr_seconds, self.llm_input_tokens, self.llm_output_tokens, self.tts_characters)
        )


class Recorder(Protocol):
    """Where the session writes the call record as it goes."""

    async def user_item(self, item_id: str, text: str, at_s: float) -> None: ...

    async def assistant_item(
        self, item_id: str, text: str, at_s: float, interrupted: bool
    ) -> None: ...

    async def tool_item(self, item_id: str, at_s: float, tool: dict[str, Any], text: str) -> None:
        """An action the agent took: `tool` has its name, arguments, output, ok and ms."""

    async def truncate(self, item_id: str, text: str) -> None: ...

    async def turn(
        self, response_id: str, status: str, at_s: float, spans: dict[str, Any]
    ) -> None: ...

    async def usage(self, usage: Usage) -> None: ...

    async def alive(self, history: list[dict[str, str]]) -> None: ...

    async def heartbeat(self) -> None: ...

    async def release(self) -> None:
        """The call is over: free its slots now, before its last records are written."""

    async def ended(self, reason: str) -> None: ...

    async def recording(self, captured: CaptureResult) -> None:
        """The call's audio, spooled: keep it (after `ended`)."""


class CappedRecorder:
    """A `Recorder` that stops writing items past the per-call cap."""

    def __init__(
        self,
        inner: Recorder,
        *,
        max_items: int = MAX_RECORDED_ITEMS,
        max_history: int = MAX_HISTORY_ITEMS,
    ) -> None:
        self.inner = inner
        self.max_items = max_items
        self.max_history = max_history
        self.items = 0
        self._recorded: set[str] = set()

    def _take(self, item_id: str) -> bool:
        if self.items >= self.max_items:
            if self.items == self.max_items:
                log.info("call record: item cap %d reached; later items are not stored", self.items)
                self.items += 1  # log once
            return False
        self.items += 1
        self._recorded.add(item_id)
        return True

    async def user_item(self, item_id: str, text: str, at_s: float) -> None:
        if self._take(item_id):
            await self.inner.user_item(item_id, text, at_s)

    async def assistant_item(self, item_id: str, text: str, at_s: float, interrupted: bool) -> None:
        if self._take(item_id):
            await self.inner.assistant_item(item_id, text, at_s, interrupted)

    async def tool_item(self, item_id: str, at_s: float, tool: dict[str, Any], text: str) -> None:
        if self._take(item_id):
            await self.inner.tool_item(item_id, at_s, tool, text)

    async def truncate(self, item_id: str, text: str) -> None:
        if item_id in self._recorded:
            await self.inner.truncate(item_id, text)

    async def turn(self, response_id: str, status: str, at_s: float, spans: dict[str, Any]) -> None:
        await self.inner.turn(response_id, status, at_s, spans)

    async def usage(self, usage: Usage) -> None:
        await self.inner.usage(usage)  # billed: never capped

    async def alive(self, history: list[dict[str, str]]) -> None:
        await self.inner.alive(history[-self.max_history :])

    async def heartbeat(self) -> None:
        await self.inner.heartbeat()

    async def release(self) -> None:
        await self.inner.release()

    async def ended(self, reason: str) -> None:
        await self.inner.ended(reason)

    async def recording(self, captured: CaptureResult) -> None:
        await self.inner.recording(captured)
