"""Client events of the Realtime protocol as typed models.

`parse_client_event` turns one message as it arrived into one of the event
models below, or raises one `ClientError` naming the offending field's path.
It never raises anything else: the text is parsed by `voiceapp.safejson`
(nesting bounded) and every field is checked by a strict pydantic model
(no coercion: ``"5"`` is not a number, ``true`` is not an integer, unknown
fields are refused).

`SessionBody` is the ``session`` object of ``session.update`` and of a client
secret's config; `settings.parse_session_update` reads it into settings.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError

from sessions.realtime.errors import ClientError
from sessions.realtime.limits import (
    MAX_ID_CHARS,
    MAX_IDLE_TIMEOUT_MS,
    MAX_INSTRUCTIONS_CHARS,
    MAX_ITEM_CONTENT_PARTS,
    MAX_ITEM_TEXT_CHARS,
    MAX_JSON_DEPTH,
    MAX_OUTPUT_TOKENS,
    MAX_TOOL_DESCRIPTION_CHARS,
    MAX_TOOLS,
    MIN_IDLE_TIMEOUT_MS,
)
from voiceapp import safejson


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Instructions = Annotated[str, Field(max_length=MAX_INSTRUCTIONS_CHARS)]
OutputTokens = Annotated[int, Field(ge=1, le=MAX_OUTPUT_TOKENS)] | Literal["inf"]

# ----- the session object -----------------------------------------------------


class PcmFormat(Strict):
    type: Literal["audio/pcm"]
    rate: Literal[24000] = 24000


class PcmuFormat(Strict):
    type: Literal["audio/pcmu"]


class PcmaFormat(Strict):
    type: Literal["audio/pcma"]


AudioFormat = Annotated[PcmFormat | PcmuFormat | PcmaFormat, Field(discriminator="type")]


class Transcription(Strict):
    model: Annotated[str, Field(max_length=64)] | None = None
    language: Annotated[str, Field(min_length=2, max_length=5)] | None = None
    prompt: Annotated[str, Field(max_length=1000)] | None = None


class ServerVad(Strict):
    type: Literal["server_vad"]
    threshold: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None
    prefix_padding_ms: Annotated[int, Field(ge=0, le=1000)] | None = None
    silence_duration_ms: Annotated[int, Field(ge=100, le=3000)] | None = None
    idle_timeout_ms: (
        Annotated[int, Field(ge=MIN_IDLE_TIMEOUT_MS, le=MAX_IDLE_TIMEOUT_MS)] | None
    ) = None
    create_response: bool | None = None
    interrupt_response: bool | None = None


class SemanticVad(Strict):
    type: Literal["semantic_vad"]
    eagerness: Literal["low", "medium", "high", "auto"] | None = None
    create_response: bool | None = None
    interrupt_response: bool | None = None


TurnDetection = Annotated[ServerVad | SemanticVad, Field(discriminator="type")]


class NoiseReduction(Strict):
    type: Literal["near_field", "far_field"]


class AudioInput(Strict):
    format: AudioFormat | None = None
    transcription: Transcription | None = None
    turn_detection: TurnDetection | None = None
    noise_reduction: NoiseReduction | None = None  # accepted; the VAD copes without it


class AudioOutput(Strict):
    format: AudioFormat | None = None
    voice: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    speed: Annotated[float, Field(ge=0.25, le=1.5)] | None = None


class Audio(Strict):
    input: AudioInput | None = None
    output: AudioOutput | None = None


ToolName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class FunctionTool(Strict):
    """A function the model may call (`session.tools`); `parameters` is its JSON
    schema, checked by `settings.parse_session_update`."""

    type: Literal["function"] = "function"
    name: ToolName
    description: Annotated[str, Field(max_length=MAX_TOOL_DESCRIPTION_CHARS)] = ""
    parameters: dict[str, Any] | None = None


class ToolChoiceFunction(Strict):
    type: Literal["function"]
    name: ToolName


ToolChoice = Literal["auto", "none", "required"] | ToolChoiceFunction


class TracingConfig(Strict):
    workflow_name: Annotated[str, Field(max_length=200)] | None = None
    group_id: Annotated[str, Field(max_length=200)] | None = None
    metadata: Annotated[dict[str, Any], Field(max_length=16)] | None = None


class SessionBody(Strict):
    """``session`` of ``session.update``. Fields left out keep their value."""

    type: Literal["realtime"] = "realtime"
    model: Annotated[str, Field(max_length=100)] | None = None  # the persona is chosen at connect
    instructions: Instructions | None = None
    output_modalities: list[Literal["audio", "text"]] | None = None
    max_output_tokens: OutputTokens | None = None
    audio: Audio | None = None
    tools: Annotated[list[FunctionTool], Field(max_length=MAX_TOOLS)] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None  # accepted; a reply makes at most one call
    # OpenAI options this server does not serve, accepted in their neutral form.
    # Tracing goes to OpenAI's dashboard there; here every call has its own latency
    # trace, so the option (the Agents SDK sends "auto") is accepted and ignored.
    tracing: Literal["auto"] | TracingConfig | None = None
    prompt: None = None
    include: Annotated[list[str], Field(max_length=8)] | None = None
    truncation: Literal["auto", "disabled"] | None = None


# ----- client events ----------------------------------------------------------


class ClientEvent(Strict):
    event_id: Id | None = None


class SessionUpdate(ClientEvent):
    type: Literal["session.update"]
    session: dict[str, Any]  # read by settings.parse_session_update, with the caller's policy


class InputAudioBufferAppend(ClientEvent):
    type: Literal["input_audio_buffer.append"]
    audio: str


class InputAudioBufferCommit(ClientEvent):
    type: Literal["input_audio_buffer.commit"]


class InputAudioBufferClear(ClientEvent):
    type: Literal["input_audio_buffer.clear"]


class InputText(Strict):
    type: Literal["input_text"]
    text: Annotated[str, Field(max_length=MAX_ITEM_TEXT_CHARS)]


class MessageItem(Strict):
    id: Id | None = None
    type: Literal["message"] = "message"
    object: Literal["realtime.item"] | None = None
    status: Literal["completed", "incomplete", "in_progress"] | None = None
    role: Literal["user", "system"]
    content: Annotated[list[InputText], Field(max_length=MAX_ITEM_CONTENT_PARTS)]

    def text(self) -> str:
        return "\n".join(part.text for part in self.content)


class FunctionCallOutputItem(Strict):
    """A tool's output for a call the model made (`response.output_item.done`)."""

    id: Id | None = None
    type: Literal["function_call_output"]
    object: Literal["realtime.item"] | None = None
    status: Literal["completed", "incomplete", "in_progress"] | None = None
    call_id: Id
    output: Annotated[str, Field(max_length=MAX_ITEM_TEXT_CHARS)]


def _item_type(value: Any) -> str:
    kind = value.get("type", "message") if isinstance(value, dict) else "message"
    return kind if kind == "function_call_output" else "message"


Item = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")],
    Discriminator(_item_type),
]


class ConversationItemCreate(ClientEvent):
    type: Literal["conversation.item.create"]
    previous_item_id: Id | None = None
    item: Item


class ConversationItemTruncate(ClientEvent):
    type: Literal["conversation.item.truncate"]
    item_id: Id
    content_index: Annotated[int, Field(ge=0, le=0)] = 0
    audio_end_ms: Annotated[int, Field(ge=0)]


class ResponseParams(Strict):
    instructions: Instructions | None = None
    max_output_tokens: OutputTokens | None = None
    metadata: (
        Annotated[dict[str, Annotated[str, Field(max_length=512)]], Field(max_length=16)] | None
    ) = None


class ResponseCreate(ClientEvent):
    type: Literal["response.create"]
    response: ResponseParams | None = None


class ResponseCancel(ClientEvent):
    type: Literal["response.cancel"]
    response_id: Id | None = None


AnyClientEvent = Annotated[
    SessionUpdate
    | InputAudioBufferAppend
    | InputAudioBufferCommit
    | InputAudioBufferClear
    | ConversationItemCreate
    | ConversationItemTruncate
    | ResponseCreate
    | ResponseCancel,
    Field(discriminator="type"),
]
_client_event: TypeAdapter[AnyClientEvent] = TypeAdapter(AnyClientEvent)

EVENT_TYPES = frozenset(
    model.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
    for model in (
        SessionUpdate,
        InputAudioBufferAppend,
        InputAudioBufferCommit,
        InputAudioBufferClear,
        ConversationItemCreate,
        ConversationItemTruncate,
        ResponseCreate,
        ResponseCancel,
    )
)


def parse_client_event(raw: str | bytes, *, max_bytes: int) -> AnyClientEvent:
    """One client message as a typed event; raises `ClientError` and nothing else."""
    if len(raw) > max_bytes:
        raise ClientError(
            "message_too_large",
            f"Messages may be at most {max_bytes} bytes; this one has {len(raw)}. "
            "Send audio in smaller chunks.",
        )
    try:
        data = safejson.loads(raw, MAX_JSON_DEPTH)
    except safejson.JSONInputError as exc:
        raise ClientError(
            "invalid_json", f"The message is not valid JSON: {str(exc).rstrip('.')}."
        ) from None
    if not isinstance(data, dict):
        raise ClientError("invalid_event", "An event must be a JSON object.")
    event_id = data.get("event_id")
    event_id = event_id if isinstance(event_id, str) and len(event_id) <= MAX_ID_CHARS else None
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ClientError("invalid_event", "The event has no “type”.", "type", event_id)
    if kind not in EVENT_TYPES:
        raise ClientError(
            "unknown_event", f"Unknown or unsupported event type “{kind[:80]}”.", "type", event_id
        )
    try:
        return _client_event.validate_python(data)
    except ValidationError as exc:
        raise client_error(exc, event_id=event_id) from None


# ----- validation errors as one client error ----------------------------------

_FIELD = re.compile(r"^[a-z_]+$")
_UNION_TAGS = frozenset(
    {"server_vad", "semantic_vad", "int", "str", "float", "bool", "none", "dict", "list"}
    | {"message", "function_call_output"}
)


def error_path(loc: tuple[str | int, ...], prefix: str = "") -> str:
    """A pydantic location as the API's param path: ``item.content[0].text``.
    Union members (``semantic_vad``, ``literal['inf']``) are not part of the path."""
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _FIELD.match(part) and part not in _UNION_TAGS:
            path = f"{path}.{part}" if path else part
    return path


def client_error(
    exc: ValidationError, *, prefix: str = "", event_id: str | None = None
) -> ClientError:
    """The first problem pydantic found, as the `ClientError` the client gets."""
    first = exc.errors(include_url=False, include_input=False)[0]
    param = error_path(first["loc"], prefix) or None
    kind = first["type"]
    if kind == "extra_forbidden":
        return ClientError("unknown_parameter", f"Unknown parameter “{param}”.", param, event_id)
    if param and (param.endswith(".format") or ".format." in param):
        return ClientError(
            "unsupported_audio_format",
            'Audio formats served: {"type": "audio/pcm", "rate": 24000}, '
            '{"type": "audio/pcmu"} and {"type": "audio/pcma"} (8 kHz G.711).',
            param,
            event_id,
        )
    if kind == "missing":
        return ClientError("invalid_value", f"{param} is required.", param, event_id)
    return ClientError("invalid_value", f"{param}: {first['msg']}.", param, event_id)
