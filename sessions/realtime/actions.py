"""Actions: tools the server runs itself, switched on per persona.

A client's tools (`session.tools`) are called by the client: their calls go out
as `function_call` items. An action is the persona's own: when the model calls
one, the session runs it (`Actions.run`), puts its output in the history, and
speaks the result. The client sees the spoken result, never the call.

The built-in actions are described here (plain data, no Django); what each one
does lives in `sessions/actions.py`, which writes the call's records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from voiceapp.engine.tools import ToolSpec

TAKE_MESSAGE = "take_message"
END_CALL = "end_call"
TRANSFER_CALL = "transfer_call"
PRESS_KEYS = "press_keys"
# only where the call has a keypad to press (a phone call)
NEEDS_KEYPAD = frozenset({PRESS_KEYS})
# no filler line while these run: the other side is a machine that is listening for keys
SILENT = frozenset({PRESS_KEYS})


def _spec(name: str, description: str, properties: dict[str, dict[str, str]]) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return ToolSpec(name=name, description=description, parameters=json.dumps(schema))


BUILT_IN: dict[str, ToolSpec] = {
    TAKE_MESSAGE: _spec(
        TAKE_MESSAGE,
        "Take a message for the business, once the caller wants to leave one: the "
        "caller's name, a number to call them back on, and the message.",
        {
            "name": {"type": "string", "description": "The caller's name."},
            "callback_number": {"type": "string", "description": "A phone number to call."},
            "message": {"type": "string", "description": "What the caller wants to say."},
        },
    ),
    END_CALL: _spec(
        END_CALL,
        "End the call, once the caller has said goodbye or has nothing more to ask.",
        {},
    ),
    TRANSFER_CALL: _spec(
        TRANSFER_CALL,
        "Hand the caller to a person of the business, when they ask for a human, a "
        "manager or someone in particular.",
        {"reason": {"type": "string", "description": "Why the caller wants a person."}},
    ),
    PRESS_KEYS: _spec(
        PRESS_KEYS,
        "Press keys on the phone's keypad (DTMF tones): to choose an option an "
        "automated phone menu reads out, or to enter a number it asks for.",
        {"digits": {"type": "string", "description": "The keys to press: 0-9, * and #."}},
    ),
}


@dataclass(frozen=True)
class ActionResult:
    """What an action did: `output` (JSON) goes into the history for the model;
    `say` is spoken to the caller as written; `hang_up` ends the call after it;
    `handoff` (the caller handed to a person: reason, text, url) goes to the
    client on the `response.done` of the reply that says it; `respond`: the
    model answers from the output (a server tool's), in a reply of its own."""

    output: str
    say: str = ""
    hang_up: bool = False
    ok: bool = True
    handoff: dict[str, str] | None = None
    respond: bool = False

    @classmethod
    def failed(cls, reason: str, say: str) -> ActionResult:
        return cls(output=json.dumps({"error": reason}), say=say, ok=False)


class Keypad(Protocol):
    """A call's keypad: the agent's digits go to the other side as DTMF."""

    async def press(self, digits: str) -> None:
        """Send `digits` (0-9, *, #, A-D), returning once they have been sent."""


class Actions(Protocol):
    """The actions of one call."""

    def specs(self) -> tuple[ToolSpec, ...]:
        """The actions the persona has switched on, as tools for the model."""

    async def run(self, name: str, arguments: str) -> ActionResult:
        """Run the action `name` with the model's `arguments` (a JSON object)."""
