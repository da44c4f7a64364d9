"""What the built-in actions do (sessions/realtime/actions.py describes them).

`PersonaActions` is a call's `Actions`: the ones its persona switched on. Each
run checks the model's arguments, writes what it must, and says what the
caller hears; a bad argument is answered with a spoken request, not a crash."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from channels.db import database_sync_to_async as db

from sessions import services
from sessions.realtime.actions import (
    BUILT_IN,
    END_CALL,
    NEEDS_KEYPAD,
    PRESS_KEYS,
    TAKE_MESSAGE,
    TRANSFER_CALL,
    ActionResult,
    Keypad,
)
from voiceapp.engine.tools import ToolSpec
from voiceapp.personas.server_tools import ToolTarget, tool_call

log = logging.getLogger(__name__)

MESSAGE_TAKEN = "Thank you, I have passed your message on. Someone will call you back."
NO_MESSAGE = "I'm sorry, I didn't get your message. What would you like me to pass on?"
COULD_NOT = "I'm sorry, I couldn't take your message just now. Please try again later."
TOOL_APOLOGY = "I'm sorry, I couldn't check that just now. Please try again in a moment."
_DIGITS = re.compile(r"\d")
_KEYS = re.compile(r"[0-9*#A-D]{1,24}")  # 24 keys take 6 s to send
_KEY_SEPARATORS = re.compile(r"[\s,.()-]")


class PersonaActions:
    """The actions of one call with one persona."""

    def __init__(
        self,
        *,
        call_id: str,
        enabled: list[str] | tuple[str, ...],
        handoff_text: str = "",
        handoff_url: str = "",
        tools: list[ToolTarget] | tuple[ToolTarget, ...] = (),
        keypad: Keypad | None = None,
    ) -> None:
        """`keypad`: the call's, on a phone call (press_keys is offered only then)."""
        self.call_id = call_id
        self.keypad = keypad
        self.handoff_text = handoff_text.strip()
        self.handoff_url = handoff_url
        built_in = tuple(
            BUILT_IN[name]
            for name in BUILT_IN
            if name in enabled
            and (name != TRANSFER_CALL or self.handoff_text)
            and (name not in NEEDS_KEYPAD or keypad is not None)
        )
        self.tools = {t.name: t for t in tools if t.name not in BUILT_IN}
        server = tuple(
            ToolSpec(name=t.name, description=t.description, parameters=json.dumps(t.parameters))
            for t in self.tools.values()
        )
        self._specs = built_in + server

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    async def run(self, name: str, arguments: str) -> ActionResult:
        args = _arguments(arguments)
        if name == TAKE_MESSAGE:
            return await self._take_message(args)
        if name == END_CALL:
            return ActionResult(output=json.dumps({"ended": True}), hang_up=True)
        if name == TRANSFER_CALL:
            return await self._transfer(_text(args.get("reason")))
        if name == PRESS_KEYS and self.keypad is not None:
            return await _press_keys(self.keypad, self.call_id, _text(args.get("digits")))
        if name in self.tools:
            return await self._server_tool(self.tools[name], args)
        raise KeyError(name)

    async def _server_tool(self, target: ToolTarget, args: dict[str, Any]) -> ActionResult:
        """POST the call to the business's URL; the model answers from what comes back."""
        response = await asyncio.to_thread(tool_call, target, call_id=self.call_id, arguments=args)
        if not response.ok:
            log.info("call %s: tool %s failed: %s", self.call_id, target.name, response.output)
            return ActionResult.failed(response.output, TOOL_APOLOGY)
        return ActionResult(output=response.output, respond=True)

    async def _transfer(self, reason: str) -> ActionResult:
        """Say the persona's handoff text, show its link, and tell the business
        (`call.transfer_requested`). Over the phone this will be a SIP transfer."""
        handoff = {"reason": reason[:300], "text": self.handoff_text, "url": self.handoff_url}
        try:
            await db(services.call_transfer_request)(call_id=self.call_id, **handoff)
        except Exception:  # the caller still hears where to go
            log.exception("call %s: the transfer request could not be stored", self.call_id)
            return ActionResult(
                output=json.dumps({"handed_over": True, "business_told": False}),
                say=self.handoff_text,
                handoff=handoff,
            )
        return ActionResult(
            output=json.dumps({"handed_over": True}), say=self.handoff_text, handoff=handoff
        )

    async def _take_message(self, args: dict[str, Any]) -> ActionResult:
        message = _text(args.get("message"))
        if not message:
            return ActionResult.failed("no message given", NO_MESSAGE)
        number = _text(args.get("callback_number"))
        if number and not _DIGITS.search(number):
            number = ""  # a model's placeholder ("unknown"), not a number
        try:
            taken = await db(services.caller_message_take)(
                call_id=self.call_id,
                name=_text(args.get("name")),
                callback_number=number,
                message=message,
            )
        except Exception:
            log.exception("call %s: the caller's message could not be stored", self.call_id)
            return ActionResult.failed("the message could not be stored", COULD_NOT)
        return ActionResult(
            output=json.dumps({"stored": True, "message_id": taken.pk}), say=MESSAGE_TAKEN
        )


async def _press_keys(keypad: Keypad, call_id: str, digits: str) -> ActionResult:
    """Send the digits as DTMF; the agent then listens (it says nothing)."""
    keys = _KEY_SEPARATORS.sub("", digits).upper()
    if not _KEYS.fullmatch(keys):
        return ActionResult.failed(f"not keys to press: {digits[:40]!r}", "")
    try:
        await keypad.press(keys)
    except Exception as exc:  # the call ended meanwhile
        return ActionResult.failed(str(exc), "")
    log.info("call %s: pressed %s", call_id, keys)
    return ActionResult(output=json.dumps({"pressed": keys}))


def _arguments(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
