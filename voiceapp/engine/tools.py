"""Function tools: what a call's LLM may call, and the calls it makes.

A call's tools come from the client (`session.tools` of the Realtime protocol)
or from the persona. The engine does not run them: a reply that calls one ends
with the call (`ToolCallMade`), and whoever owns the tool answers it with its
output (`VoiceCall.add_tool_output`); the next reply reads that output.

In the conversation history a call and its output are messages with extra
string fields, so `Message` stays a `dict[str, str]` end to end (the Channels
protocol included):

    {"role": "assistant", "content": "", "tool_call_id", "tool_name", "tool_arguments"}
    {"role": "tool", "content": <output>, "tool_call_id", "tool_name"}

Each LLM backend renders them its own way: an OpenAI-compatible endpoint as
`tool_calls` and `tool` messages (`openai_messages`), the embedded model as
plain turns its chat template knows (`plain_messages`).

`tool_choice` is "auto", "none", "required", or the name of one tool.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Message = dict[str, str]  # one chat message (llm.Message)

TOOL_CHOICES = ("auto", "none", "required")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the LLM may call. `parameters` is its JSON schema, as JSON text."""

    name: str
    description: str = ""
    parameters: str = '{"type": "object", "properties": {}}'

    def schema(self) -> dict[str, Any]:
        value = json.loads(self.parameters)
        return value if isinstance(value, dict) else {"type": "object", "properties": {}}

    def as_openai(self) -> dict[str, Any]:
        """The tool as the chat completions API takes it."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.schema(),
            },
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the LLM made: `arguments` is a JSON object as text."""

    call_id: str
    name: str
    arguments: str


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:20]}"


def offered(tools: Iterable[ToolSpec], choice: str) -> tuple[ToolSpec, ...]:
    """The tools a request may call under `choice` (none for "none")."""
    tools = tuple(tools)
    if choice == "none":
        return ()
    if choice in ("auto", "required"):
        return tools
    return tuple(t for t in tools if t.name == choice)


def call_message(call: ToolCall) -> Message:
    """The history message of a call the LLM made."""
    return {
        "role": "assistant",
        "content": "",
        "tool_call_id": call.call_id,
        "tool_name": call.name,
        "tool_arguments": call.arguments,
    }


def output_message(call_id: str, name: str, output: str) -> Message:
    """The history message of a call's output."""
    return {"role": "tool", "content": output, "tool_call_id": call_id, "tool_name": name}


def is_call(message: Message) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_call_id"))


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages for an OpenAI-compatible endpoint: calls as `tool_calls`, outputs as
    `tool` messages; consecutive calls of one reply share one assistant message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if is_call(m):
            call = {
                "id": m["tool_call_id"],
                "type": "function",
                "function": {"name": m["tool_name"], "arguments": m["tool_arguments"]},
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls"):
                last["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif m.get("role") == "tool":
            if m["tool_call_id"] not in _call_ids(out):
                continue  # its call was trimmed from the history: an endpoint refuses it
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def _call_ids(messages: list[dict[str, Any]]) -> set[str]:
    return {c["id"] for m in messages for c in m.get("tool_calls") or ()}


def call_text(name: str, arguments: str) -> str:
    """How the embedded model writes a call (and reads its own earlier calls)."""
    return f'{CALL_OPEN}{{"name": "{name}", "arguments": {arguments}}}{CALL_CLOSE}'


CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"


def plain_messages(messages: list[Message]) -> list[Message]:
    """Messages for a chat template that knows only system, user and assistant:
    a call as the assistant's `<tool_call>` text, its output as a user turn that
    says what it is."""
    out: list[Message] = []
    for m in messages:
        if is_call(m):
            out.append(
                {"role": "assistant", "content": call_text(m["tool_name"], m["tool_arguments"])}
            )
        elif m.get("role") == "tool":
            name = m.get("tool_name") or "the tool"
            out.append(
                {
                    "role": "user",
                    "content": f"(Result of {name}: {m['content']}) "
                    "Tell the caller what this result means, in one short sentence.",
                }
            )
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return _merge_same_role(out)


def _merge_same_role(messages: list[Message]) -> list[Message]:
    """Templates that require alternating turns get them: neighbours of one role merge."""
    merged: list[Message] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"] and m["role"] != "system":
            merged[-1] = {"role": m["role"], "content": f"{merged[-1]['content']}\n{m['content']}"}
        else:
            merged.append(dict(m))
    return merged


def tools_prompt(tools: tuple[ToolSpec, ...], choice: str) -> str:
    """The system prompt's part that tells the embedded model about its tools."""
    lines = [
        "You can call these tools. To call one, reply with only "
        f'{CALL_OPEN}{{"name": <tool name>, "arguments": {{...}}}}{CALL_CLOSE}. '
        "Call a tool only when the caller asks for what it does; otherwise answer in words."
    ]
    if choice == "required" or choice not in TOOL_CHOICES:
        lines[0] = (
            "Reply with a tool call only: "
            f'{CALL_OPEN}{{"name": <tool name>, "arguments": {{...}}}}{CALL_CLOSE}.'
        )
    for tool in tools:
        params = tool.schema().get("properties") or {}
        names = ", ".join(params) if isinstance(params, dict) else ""
        lines.append(f"- {tool.name}({names}): {tool.description}".rstrip(": "))
    return "\n".join(lines)


SCHEMA_TYPES = frozenset({"object", "string", "number", "integer", "boolean", "array", "null"})


def schema_problem(schema: Any) -> str | None:
    """Why `schema` cannot be a tool's parameters (None: it can): an object schema
    whose properties are schemas of the JSON types (what a grammar can be made of)."""
    if not isinstance(schema, dict):
        return "must be a JSON schema object."
    if schema.get("type", "object") != "object":
        return 'the parameters schema must have "type": "object".'
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return '"properties" must be an object.'
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            return f"property “{name}” must be a schema object."
        kind = prop.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if kind is not None and not all(k in SCHEMA_TYPES for k in kinds):
            return f"property “{name}” has an unknown type {kind!r}."
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return '"required" must be a list of property names.'
    return None


def call_schema(tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    """The JSON schema of one call of any of `tools` (the embedded model's grammar)."""
    variants = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": _closed(t.schema())},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    return variants[0] if len(variants) == 1 else {"oneOf": variants}


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema whose properties are all written, in order, and nothing else:
    the grammar then never lets a small model stop before an argument."""
    if schema.get("type") != "object":
        return schema
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {"type": "object", "properties": {}, "additionalProperties": False}
    return {
        **schema,
        "properties": {k: _bounded(v) for k, v in properties.items()},
        "required": list(properties),
        "additionalProperties": False,
    }


MAX_ARGUMENT_CHARS = 80  # a string argument the grammar lets the embedded model write


def _bounded(schema: Any) -> Any:
    """A string argument of 1 to `MAX_ARGUMENT_CHARS` characters: a small model that
    loses its way inside a string would otherwise write until its token budget ends,
    and one unsure of a value closes the string at once ("order_number": "")."""
    if isinstance(schema, dict) and schema.get("type") == "string" and "enum" not in schema:
        limit = schema.get("maxLength")
        bounded = MAX_ARGUMENT_CHARS if not isinstance(limit, int) else min(limit, 400)
        least = schema.get("minLength")
        least = max(1, least) if isinstance(least, int) else 1
        return {**schema, "minLength": min(least, bounded), "maxLength": bounded}
    return schema


def parse_call(text: str, tools: tuple[ToolSpec, ...]) -> ToolCall | None:
    """The call in the embedded model's `<tool_call>{...}</tool_call>` text, if it
    names one of `tools` with object arguments."""
    body = text.strip()
    if body.startswith(CALL_OPEN):
        body = body[len(CALL_OPEN) :]
    if body.endswith(CALL_CLOSE):  # the last one: a string argument may hold the marker
        body = body[: -len(CALL_CLOSE)]
    try:
        # the grammar lets a string hold a raw line break: read it, written out escaped
        value = json.loads(body, strict=False)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    arguments = value.get("arguments", {})
    if not isinstance(name, str) or name not in {t.name for t in tools}:
        return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(new_call_id(), name, json.dumps(arguments, ensure_ascii=False))
