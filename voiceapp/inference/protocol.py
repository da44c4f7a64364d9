"""Message formats on the Channels layer between the call loop and inference workers.

This module owns them: a TypedDict for every message and payload, an
`encode_<message>` that builds each one (the only place its defaults live) and a
`decode_<message>` that checks a received one and raises `ProtocolError`, naming
the message and the field, when it does not have its documented shape. The
client (`client.py`) and the worker (`worker.py`) only build and read messages
through these.

Requests go to `inference.asr`, `inference.caption`, `inference.llm`, `inference.tts` or
`inference.eou`; any worker with a free slot takes one. `caption` is ASR of a turn
still being spoken, for live captions: its own queue and slots, so that a turn's
final reading (`asr`) never waits behind the captions of other calls. Replies go to
the caller's `reply_channel`, each tagged with the `request_id`:

    request   {"type": "inference.request", "kind", "request_id", "reply_channel",
               "accept_by": unix seconds, "queued_at": unix seconds, "payload": {...}}
    accepted  {"type": "inference.accepted", "request_id", "worker": worker channel}
    heartbeat {"type": "inference.heartbeat", "request_id"}          every 0.2 s while busy
    result    {"type": "inference.result", "request_id", "transcript": {...}}  (asr, caption)
    token     {"type": "inference.token", "request_id", "text", "queue_ms"?, "usage"?,
               "tool_call"?: {"call_id", "name", "arguments"}}                    (llm)
    audio     {"type": "inference.audio", "request_id", "pcm": bytes, "sample_rate"} (tts)
    score     {"type": "inference.score", "request_id", "probability"}           (eou)
    done      {"type": "inference.done", "request_id", "queue_ms"?, "usage"?}
    error     {"type": "inference.error", "request_id", "code", "message"}
    cancel    {"type": "inference.cancel", "request_id"}   caller -> the worker channel
    closed    {"type": "inference.closed"}   a caller's stream -> its own reader: stop

Every reply also carries "worker": the channel of the worker that sent it, so a
caller keeps to one worker when a shared-queue message was handed out twice.

A retried request keeps its reply channel and gets a new request id; a worker
that accepts the abandoned attempt late is sent a cancel for it. A call's next
LLM turn is sent to the worker channel of the worker that served its last one
(it holds the call's prompt in its cache), with a short `accept_by`.

Payloads: asr and caption {"audio": PCM16 16 kHz mono bytes, "language", "model"}; llm {"messages":
[{"role", "content", "tool_call_id"?, "tool_name"?, "tool_arguments"?}], "max_tokens",
"temperature", "model", "backend", "session", "repeat_penalty", "tools"?: [{"name",
"description", "parameters": JSON text}], "tool_choice"?, "open_turn"?: true for a read of
the caller's words so far, the last message left open, nothing generated}; tts {"text", "voice_id",
"model_path", "speed", "background"?: true for a clause the caller will not hear for
a while (enough of its reply is made ahead of it), synthesized at a lower priority};
eou {"text", "previous_reply"} (the probability that the
caller's turn is finished after "text").
An asr "model" of "" means the default model.

An ASR result's "transcript" is {"text", "no_speech_prob", "avg_logprob",
"audio_seconds", "rejected": why the text was discarded, or None, "reads"?: the
readings it took (2: the full window read it again), "queue_ms"?: how long it
waited for the model, "discarded"?: the words a rejection threw away (answering-
machine detection reads them)}; a worker that sends no "reads" read it once.

An LLM reply's "usage" is {"input_tokens", "cached_tokens"}: the prompt tokens the
model read, and how many of those came from its prefix cache. It rides on `done`,
and also on the first token when the count is known by then (the local model), so a
reply closed before its end (barge-in) still reports the prompt it read. "queue_ms"
(the time the request waited for a model in the worker) rides on the first token
and on an LLM reply's `done`.

A malformed request is answered with an `inference.error` of code
`MALFORMED_REQUEST` when it names a reply channel and a request id (else the
worker only logs it); a caller that receives a malformed reply ends that request
with an `InferenceError` of code `MALFORMED_REPLY`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, NotRequired, TypedDict, cast

from voiceapp.engine.asr import DEFAULT_ASR_MODEL, Transcript
from voiceapp.engine.llm import LLMOptions, Message, PromptUsage
from voiceapp.engine.tools import ToolCall, ToolSpec
from voiceapp.engine.tts import VoiceSpec

KINDS: tuple[str, ...] = ("asr", "llm", "tts", "eou", "caption")
CHANNELS: dict[str, str] = {kind: f"inference.{kind}" for kind in KINDS}
WORKER_CHANNEL_PREFIX = "inference.worker"  # + ".<uuid>": one per worker, for cancels
REPLY_CHANNEL_PREFIX = "inference.reply"  # + ".<uuid>": one per request, shared by its attempts
HEARTBEAT_S = 0.2

REQUEST: Final = "inference.request"
ACCEPTED: Final = "inference.accepted"
HEARTBEAT: Final = "inference.heartbeat"
RESULT: Final = "inference.result"
TOKEN: Final = "inference.token"
AUDIO: Final = "inference.audio"
SCORE: Final = "inference.score"
DONE: Final = "inference.done"
ERROR: Final = "inference.error"
CANCEL: Final = "inference.cancel"
CLOSED: Final = "inference.closed"

MALFORMED_REQUEST = "malformed_request"  # error code: a worker could not read the request
MALFORMED_REPLY = "malformed_reply"  # error code: a caller could not read a worker's reply


# --- Payloads


class AsrPayload(TypedDict):
    audio: bytes  # PCM16 LE, 16 kHz mono
    language: str
    model: str


class ChatMessage(TypedDict):
    role: str
    content: str
    # a tool call of the assistant, or a tool's output (engine/tools.py)
    tool_call_id: NotRequired[str]
    tool_name: NotRequired[str]
    tool_arguments: NotRequired[str]


class ToolPayload(TypedDict):
    name: str
    description: str
    parameters: str  # the JSON schema, as JSON text


class ToolCallPayload(TypedDict):
    call_id: str
    name: str
    arguments: str  # a JSON object, as text


class LlmPayload(TypedDict):
    messages: list[ChatMessage]
    max_tokens: int
    temperature: float
    model: str
    backend: str
    session: str
    repeat_penalty: float
    tools: NotRequired[list[ToolPayload]]
    tool_choice: NotRequired[str]
    open_turn: NotRequired[bool]


class TtsPayload(TypedDict):
    text: str
    voice_id: str
    model_path: str
    speed: float
    background: NotRequired[bool]


class EouPayload(TypedDict):
    text: str
    previous_reply: str


Payload = AsrPayload | LlmPayload | TtsPayload | EouPayload


class TranscriptPayload(TypedDict):
    text: str
    no_speech_prob: float
    avg_logprob: float
    audio_seconds: float
    rejected: str | None
    reads: NotRequired[int]
    queue_ms: NotRequired[float | None]
    discarded: NotRequired[str]


class UsagePayload(TypedDict):
    input_tokens: int
    cached_tokens: int


# --- Messages


class _RequestFields(TypedDict):
    type: Literal["inference.request"]
    request_id: str
    reply_channel: str
    accept_by: float  # unix seconds: a worker that takes the request later drops it
    queued_at: float  # unix seconds: when it was sent, for the worker's queue-wait figures


class AsrRequest(_RequestFields):
    kind: Literal["asr", "caption"]
    payload: AsrPayload


class LlmRequest(_RequestFields):
    kind: Literal["llm"]
    payload: LlmPayload


class TtsRequest(_RequestFields):
    kind: Literal["tts"]
    payload: TtsPayload


class EouRequest(_RequestFields):
    kind: Literal["eou"]
    payload: EouPayload


Request = AsrRequest | LlmRequest | TtsRequest | EouRequest


class AcceptedMessage(TypedDict):
    type: Literal["inference.accepted"]
    request_id: str
    worker: str


class HeartbeatMessage(TypedDict):
    type: Literal["inference.heartbeat"]
    request_id: str
    worker: NotRequired[str]


class ResultMessage(TypedDict):
    type: Literal["inference.result"]
    request_id: str
    transcript: TranscriptPayload
    worker: NotRequired[str]


class TokenMessage(TypedDict):
    type: Literal["inference.token"]
    request_id: str
    text: str
    tool_call: NotRequired[ToolCallPayload]  # a call the reply made ("text" is empty)
    queue_ms: NotRequired[float | None]
    usage: NotRequired[UsagePayload]
    worker: NotRequired[str]


class AudioMessage(TypedDict):
    type: Literal["inference.audio"]
    request_id: str
    pcm: bytes  # PCM16 LE mono
    sample_rate: int
    worker: NotRequired[str]


class ScoreMessage(TypedDict):
    type: Literal["inference.score"]
    request_id: str
    probability: float
    worker: NotRequired[str]


class DoneMessage(TypedDict):
    type: Literal["inference.done"]
    request_id: str
    queue_ms: NotRequired[float | None]
    usage: NotRequired[UsagePayload]
    worker: NotRequired[str]


class ErrorMessage(TypedDict):
    type: Literal["inference.error"]
    request_id: str
    code: str
    message: str
    worker: NotRequired[str]


class CancelMessage(TypedDict):
    type: Literal["inference.cancel"]
    request_id: str


class ClosedMessage(TypedDict):
    type: Literal["inference.closed"]


Reply = (
    AcceptedMessage
    | HeartbeatMessage
    | ResultMessage
    | TokenMessage
    | AudioMessage
    | ScoreMessage
    | DoneMessage
    | ErrorMessage
)
# What a caller's stream reads off its reply channel.
Received = Reply | ClosedMessage
# What a worker reads off its own channel.
WorkerMessage = Request | CancelMessage


class ProtocolError(ValueError):
    """A received message that does not have the shape its type documents.

    `request_id`, `reply_channel` and `worker` are the message's own, when they
    could be read, so that the receiver can still answer or attribute it."""

    def __init__(self, message_type: str, field: str, problem: str, raw: object = None) -> None:
        super().__init__(f"{message_type}: field {field!r} {problem}")
        self.message_type = message_type
        self.field = field
        address: Mapping[Any, Any] = raw if isinstance(raw, Mapping) else {}
        self.request_id = _name_or_none(address.get("request_id"))
        self.reply_channel = _name_or_none(address.get("reply_channel"))
        self.worker = _name_or_none(address.get("worker"))


def _name_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class _Fields:
    """Checked reads of one received dict's fields. `prefix` names a nested dict
    ("payload."), `message` is the whole message the dict came in."""

    def __init__(
        self, raw: object, message_type: str, prefix: str = "", message: object = None
    ) -> None:
        self.message_type = message_type
        self.prefix = prefix
        self.message = raw if message is None else message
        if not isinstance(raw, Mapping):
            raise self.error(prefix.rstrip(".") or "(message)", f"is not a dict ({_kind(raw)})")
        self.raw: Mapping[Any, Any] = raw

    def error(self, name: str, problem: str) -> ProtocolError:
        return ProtocolError(self.message_type, name, problem, self.message)

    def _value(self, name: str) -> object:
        if name not in self.raw:
            raise self.error(self.prefix + name, "is missing")
        return self.raw[name]

    def _wrong(self, name: str, wanted: str, value: object) -> ProtocolError:
        return self.error(self.prefix + name, f"must be {wanted}, not {_kind(value)}")

    def has(self, name: str) -> bool:
        return name in self.raw

    def literal(self, name: str, expected: str) -> None:
        value = self._value(name)
        if value != expected:
            raise self.error(self.prefix + name, f"must be {expected!r}, not {value!r}")

    def text(self, name: str) -> str:
        value = self._value(name)
        if not isinstance(value, str):
            raise self._wrong(name, "a string", value)
        return value

    def name(self, name: str) -> str:
        """A non-empty string: an id or a channel name."""
        value = self.text(name)
        if not value:
            raise self.error(self.prefix + name, "must not be empty")
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._value(name)
        if value is not None and not isinstance(value, str):
            raise self._wrong(name, "a string or None", value)
        return value

    def flag(self, name: str) -> bool:
        value = self._value(name)
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false", value)
        return value

    def number(self, name: str) -> float:
        value = self._value(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._wrong(name, "a number", value)
        return float(value)

    def optional_number(self, name: str) -> float | None:
        if self._value(name) is None:
            return None
        return self.number(name)

    def integer(self, name: str, minimum: int = 0) -> int:
        value = self._value(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(name, "an integer", value)
        if value < minimum:
            raise self.error(self.prefix + name, f"must be at least {minimum}, not {value}")
        return value

    def pcm16(self, name: str) -> bytes:
        value = self._value(name)
        if not isinstance(value, bytes | bytearray):
            raise self._wrong(name, "bytes", value)
        if len(value) % 2:
            raise self.error(self.prefix + name, f"has {len(value)} bytes: not whole PCM16 samples")
        return bytes(value)

    def nested(self, name: str) -> _Fields:
        return _Fields(self._value(name), self.message_type, f"{self.prefix}{name}.", self.message)

    def items(self, name: str) -> list[_Fields]:
        value = self._value(name)
        if not isinstance(value, list | tuple):
            raise self._wrong(name, "a list", value)
        return [
            _Fields(item, self.message_type, f"{self.prefix}{name}[{i}].", self.message)
            for i, item in enumerate(value)
        ]


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _reply_fields(raw: object, message_type: str) -> _Fields:
    fields = _Fields(raw, message_type)
    fields.literal("type", message_type)
    fields.name("request_id")
    return fields


def _signed(message: Any, fields: _Fields) -> Any:
    """`message` with the sending worker's channel, when the received one had it."""
    if fields.has("worker"):
        message["worker"] = fields.name("worker")
    return message


# --- Payload codecs


def encode_asr_payload(
    audio: bytes, language: str = "en", model: str = DEFAULT_ASR_MODEL
) -> AsrPayload:
    """`audio`: PCM16 16 kHz mono."""
    return {"audio": audio, "language": language, "model": model}


def decode_asr_payload(raw: object) -> AsrPayload:
    return _asr_payload(_Fields(raw, "asr payload"))


def _asr_payload(fields: _Fields) -> AsrPayload:
    return {
        "audio": fields.pcm16("audio"),
        "language": fields.text("language"),
        "model": fields.text("model") or DEFAULT_ASR_MODEL,
    }


_TOOL_FIELDS = ("tool_call_id", "tool_name", "tool_arguments")


def encode_llm_payload(messages: list[Message], options: LLMOptions) -> LlmPayload:
    payload: LlmPayload = {
        "messages": [_chat_message(m) for m in messages],
        "max_tokens": options.max_tokens,
        "temperature": options.temperature,
        "model": options.model,
        "backend": options.backend,
        "session": options.session,
        "repeat_penalty": options.repeat_penalty,
    }
    if options.tools:
        payload["tools"] = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in options.tools
        ]
        payload["tool_choice"] = options.tool_choice
    if options.open_turn:
        payload["open_turn"] = True
    return payload


def _chat_message(m: Message) -> ChatMessage:
    message: ChatMessage = {"role": m["role"], "content": m["content"]}
    for name in _TOOL_FIELDS:
        if name in m:
            message[name] = m[name]  # type: ignore[literal-required]
    return message


def decode_llm_payload(raw: object) -> LlmPayload:
    return _llm_payload(_Fields(raw, "llm payload"))


def _llm_payload(fields: _Fields) -> LlmPayload:
    payload: LlmPayload = {
        "messages": [_decoded_message(m) for m in fields.items("messages")],
        "max_tokens": fields.integer("max_tokens"),
        "temperature": fields.number("temperature"),
        "model": fields.text("model"),
        "backend": fields.text("backend"),
        "session": fields.text("session"),
        "repeat_penalty": fields.number("repeat_penalty"),
    }
    if fields.has("tools"):
        payload["tools"] = [
            {
                "name": t.text("name"),
                "description": t.text("description"),
                "parameters": t.text("parameters"),
            }
            for t in fields.items("tools")
        ]
        payload["tool_choice"] = fields.text("tool_choice")
    if fields.has("open_turn"):
        payload["open_turn"] = fields.flag("open_turn")
    return payload


def _decoded_message(m: _Fields) -> ChatMessage:
    message: ChatMessage = {"role": m.text("role"), "content": m.text("content")}
    for name in _TOOL_FIELDS:
        if m.has(name):
            message[name] = m.text(name)  # type: ignore[literal-required]
    return message


def as_chat_messages(payload: LlmPayload) -> list[Message]:
    return [cast(Message, dict(m)) for m in payload["messages"]]


def as_llm_options(payload: LlmPayload) -> LLMOptions:
    return LLMOptions(
        max_tokens=payload["max_tokens"],
        temperature=payload["temperature"],
        model=payload["model"],
        backend=payload["backend"],
        session=payload["session"],
        repeat_penalty=payload["repeat_penalty"],
        tools=tuple(
            ToolSpec(t["name"], t["description"], t["parameters"]) for t in payload.get("tools", [])
        ),
        tool_choice=payload.get("tool_choice", "auto"),
        open_turn=payload.get("open_turn", False),
    )


def encode_tts_payload(text: str, voice: VoiceSpec, *, background: bool = False) -> TtsPayload:
    payload: TtsPayload = {
        "text": text,
        "voice_id": voice.voice_id,
        "model_path": voice.model_path,
        "speed": voice.speed,
    }
    if background:
        payload["background"] = True
    return payload


def decode_tts_payload(raw: object) -> TtsPayload:
    return _tts_payload(_Fields(raw, "tts payload"))


def _tts_payload(fields: _Fields) -> TtsPayload:
    payload: TtsPayload = {
        "text": fields.text("text"),
        "voice_id": fields.text("voice_id"),
        "model_path": fields.text("model_path"),
        "speed": fields.number("speed"),
    }
    if fields.has("background") and fields.flag("background"):
        payload["background"] = True
    return payload


def as_voice(payload: TtsPayload) -> VoiceSpec:
    return VoiceSpec(
        voice_id=payload["voice_id"], model_path=payload["model_path"], speed=payload["speed"]
    )


def encode_eou_payload(text: str, previous_reply: str = "") -> EouPayload:
    return {"text": text, "previous_reply": previous_reply}


def decode_eou_payload(raw: object) -> EouPayload:
    return _eou_payload(_Fields(raw, "eou payload"))


def _eou_payload(fields: _Fields) -> EouPayload:
    return {"text": fields.text("text"), "previous_reply": fields.text("previous_reply")}


def encode_transcript(transcript: Transcript) -> TranscriptPayload:
    return {
        "text": transcript.text,
        "no_speech_prob": transcript.no_speech_prob,
        "avg_logprob": transcript.avg_logprob,
        "audio_seconds": transcript.audio_seconds,
        "rejected": transcript.rejected,
        "reads": transcript.reads,
        "queue_ms": transcript.queue_ms,
        "discarded": transcript.discarded,
    }


def decode_transcript(raw: object) -> TranscriptPayload:
    return _transcript(_Fields(raw, "transcript"))


def _transcript(fields: _Fields) -> TranscriptPayload:
    payload: TranscriptPayload = {
        "text": fields.text("text"),
        "no_speech_prob": fields.number("no_speech_prob"),
        "avg_logprob": fields.number("avg_logprob"),
        "audio_seconds": fields.number("audio_seconds"),
        "rejected": fields.optional_text("rejected"),
    }
    if fields.has("reads"):
        payload["reads"] = fields.integer("reads", minimum=1)
    if fields.has("queue_ms"):
        payload["queue_ms"] = fields.optional_number("queue_ms")
    if fields.has("discarded"):
        payload["discarded"] = fields.text("discarded")
    return payload


def as_transcript(payload: TranscriptPayload) -> Transcript:
    return Transcript(
        text=payload["text"],
        no_speech_prob=payload["no_speech_prob"],
        avg_logprob=payload["avg_logprob"],
        audio_seconds=payload["audio_seconds"],
        rejected=payload["rejected"],
        reads=payload.get("reads", 1),
        queue_ms=payload.get("queue_ms"),
        discarded=payload.get("discarded", ""),
    )


def encode_usage(usage: PromptUsage) -> UsagePayload:
    return {"input_tokens": usage.input_tokens, "cached_tokens": usage.cached_tokens}


def decode_usage(raw: object) -> UsagePayload:
    return _usage(_Fields(raw, "usage"))


def _usage(fields: _Fields) -> UsagePayload:
    return {
        "input_tokens": fields.integer("input_tokens"),
        "cached_tokens": fields.integer("cached_tokens"),
    }


def as_prompt_usage(payload: UsagePayload) -> PromptUsage:
    return PromptUsage(input_tokens=payload["input_tokens"], cached_tokens=payload["cached_tokens"])


_PAYLOADS: dict[str, Callable[[_Fields], Any]] = {
    "asr": _asr_payload,
    "caption": _asr_payload,
    "llm": _llm_payload,
    "tts": _tts_payload,
    "eou": _eou_payload,
}


# --- Message codecs


def encode_request(
    kind: str,
    payload: Payload,
    *,
    request_id: str,
    reply_channel: str,
    accept_by: float,
    queued_at: float | None = None,
) -> Request:
    """`payload` must be `kind`'s (built by its `encode_<kind>_payload`);
    `queued_at` defaults to now."""
    if kind not in KINDS:
        raise ValueError(f"unknown inference kind {kind!r}")
    return cast(
        Request,
        {
            "type": REQUEST,
            "kind": kind,
            "request_id": request_id,
            "reply_channel": reply_channel,
            "accept_by": accept_by,
            "queued_at": time.time() if queued_at is None else queued_at,
            "payload": payload,
        },
    )


def decode_request(raw: object, channel_kind: str | None = None) -> Request:
    """`channel_kind`: the kind of the shared channel it came on, which it must be."""
    fields = _Fields(raw, REQUEST)
    fields.literal("type", REQUEST)
    kind = fields.text("kind")
    if kind not in KINDS:
        raise fields.error("kind", f"must be one of {', '.join(KINDS)}, not {kind!r}")
    if channel_kind is not None and kind != channel_kind:
        raise fields.error("kind", f"is {kind!r} on {CHANNELS[channel_kind]}")
    request = {
        "type": REQUEST,
        "kind": kind,
        "request_id": fields.name("request_id"),
        "reply_channel": fields.name("reply_channel"),
        "accept_by": fields.number("accept_by"),
        "queued_at": fields.number("queued_at"),
        "payload": _PAYLOADS[kind](fields.nested("payload")),
    }
    return cast(Request, request)


def encode_accepted(request_id: str, *, worker: str) -> AcceptedMessage:
    return {"type": ACCEPTED, "request_id": request_id, "worker": worker}


def decode_accepted(raw: object) -> AcceptedMessage:
    fields = _reply_fields(raw, ACCEPTED)
    return {
        "type": ACCEPTED,
        "request_id": fields.name("request_id"),
        "worker": fields.name("worker"),
    }


def encode_heartbeat(request_id: str, *, worker: str) -> HeartbeatMessage:
    return {"type": HEARTBEAT, "request_id": request_id, "worker": worker}


def decode_heartbeat(raw: object) -> HeartbeatMessage:
    fields = _reply_fields(raw, HEARTBEAT)
    message: HeartbeatMessage = {"type": HEARTBEAT, "request_id": fields.name("request_id")}
    return cast(HeartbeatMessage, _signed(message, fields))


def encode_result(request_id: str, transcript: Transcript, *, worker: str) -> ResultMessage:
    return {
        "type": RESULT,
        "request_id": request_id,
        "transcript": encode_transcript(transcript),
        "worker": worker,
    }


def decode_result(raw: object) -> ResultMessage:
    fields = _reply_fields(raw, RESULT)
    message: ResultMessage = {
        "type": RESULT,
        "request_id": fields.name("request_id"),
        "transcript": _transcript(fields.nested("transcript")),
    }
    return cast(ResultMessage, _signed(message, fields))


def encode_token(
    request_id: str,
    item: str | ToolCall,
    *,
    worker: str,
    queue_ms: float | None = None,
    usage: PromptUsage | None = None,
) -> TokenMessage:
    """A text delta or a tool call of a reply. `queue_ms` and `usage` go on a reply's
    first token (each only when known)."""
    text = item if isinstance(item, str) else ""
    message: TokenMessage = {"type": TOKEN, "request_id": request_id, "text": text}
    if isinstance(item, ToolCall):
        message["tool_call"] = {
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
        }
    if queue_ms is not None:
        message["queue_ms"] = queue_ms
    if usage is not None:
        message["usage"] = encode_usage(usage)
    message["worker"] = worker
    return message


def decode_token(raw: object) -> TokenMessage:
    fields = _reply_fields(raw, TOKEN)
    message: TokenMessage = {
        "type": TOKEN,
        "request_id": fields.name("request_id"),
        "text": fields.text("text"),
    }
    if fields.has("tool_call"):
        call = fields.nested("tool_call")
        message["tool_call"] = {
            "call_id": call.text("call_id"),
            "name": call.text("name"),
            "arguments": call.text("arguments"),
        }
    _timing(message, fields)
    return cast(TokenMessage, _signed(message, fields))


def token_item(message: TokenMessage) -> str | ToolCall:
    """What a token message carries: its text, or its tool call."""
    call = message.get("tool_call")
    if call is None:
        return message["text"]
    return ToolCall(call["call_id"], call["name"], call["arguments"])


def _timing(message: TokenMessage | DoneMessage, fields: _Fields) -> None:
    if fields.has("queue_ms"):
        message["queue_ms"] = fields.optional_number("queue_ms")
    if fields.has("usage"):
        message["usage"] = _usage(fields.nested("usage"))


def encode_audio(request_id: str, pcm: bytes, sample_rate: int, *, worker: str) -> AudioMessage:
    """`pcm`: PCM16 LE mono."""
    return {
        "type": AUDIO,
        "request_id": request_id,
        "pcm": pcm,
        "sample_rate": sample_rate,
        "worker": worker,
    }


def decode_audio(raw: object) -> AudioMessage:
    fields = _reply_fields(raw, AUDIO)
    message: AudioMessage = {
        "type": AUDIO,
        "request_id": fields.name("request_id"),
        "pcm": fields.pcm16("pcm"),
        "sample_rate": fields.integer("sample_rate", minimum=1),
    }
    return cast(AudioMessage, _signed(message, fields))


def encode_score(request_id: str, probability: float, *, worker: str) -> ScoreMessage:
    return {"type": SCORE, "request_id": request_id, "probability": probability, "worker": worker}


def decode_score(raw: object) -> ScoreMessage:
    fields = _reply_fields(raw, SCORE)
    message: ScoreMessage = {
        "type": SCORE,
        "request_id": fields.name("request_id"),
        "probability": fields.number("probability"),
    }
    return cast(ScoreMessage, _signed(message, fields))


def encode_done(
    request_id: str,
    *,
    worker: str,
    queue_ms: float | None = None,
    usage: PromptUsage | None = None,
) -> DoneMessage:
    """`queue_ms` and `usage` close an LLM reply (each only when known)."""
    message: DoneMessage = {"type": DONE, "request_id": request_id}
    if queue_ms is not None:
        message["queue_ms"] = queue_ms
    if usage is not None:
        message["usage"] = encode_usage(usage)
    message["worker"] = worker
    return message


def decode_done(raw: object) -> DoneMessage:
    fields = _reply_fields(raw, DONE)
    message: DoneMessage = {"type": DONE, "request_id": fields.name("request_id")}
    _timing(message, fields)
    return cast(DoneMessage, _signed(message, fields))


def encode_error(request_id: str, code: str, message: str, *, worker: str) -> ErrorMessage:
    return {
        "type": ERROR,
        "request_id": request_id,
        "code": code,
        "message": message,
        "worker": worker,
    }


def decode_error(raw: object) -> ErrorMessage:
    fields = _reply_fields(raw, ERROR)
    message: ErrorMessage = {
        "type": ERROR,
        "request_id": fields.name("request_id"),
        "code": fields.name("code"),
        "message": fields.text("message"),
    }
    return cast(ErrorMessage, _signed(message, fields))


def encode_cancel(request_id: str) -> CancelMessage:
    return {"type": CANCEL, "request_id": request_id}


def decode_cancel(raw: object) -> CancelMessage:
    fields = _reply_fields(raw, CANCEL)
    return {"type": CANCEL, "request_id": fields.name("request_id")}


def encode_closed() -> ClosedMessage:
    return {"type": CLOSED}


def decode_closed(raw: object) -> ClosedMessage:
    _Fields(raw, CLOSED).literal("type", CLOSED)
    return {"type": CLOSED}


_REPLIES: dict[str, Callable[[object], Received]] = {
    ACCEPTED: decode_accepted,
    HEARTBEAT: decode_heartbeat,
    RESULT: decode_result,
    TOKEN: decode_token,
    AUDIO: decode_audio,
    SCORE: decode_score,
    DONE: decode_done,
    ERROR: decode_error,
    CLOSED: decode_closed,
}
_WORKER_MESSAGES: dict[str, Callable[[object], WorkerMessage]] = {
    REQUEST: decode_request,
    CANCEL: decode_cancel,
}


def _dispatch(raw: object, where: str, decoders: Mapping[str, Callable[[object], Any]]) -> Any:
    fields = _Fields(raw, where)
    kind = fields.text("type")
    decode = decoders.get(kind)
    if decode is None:
        raise fields.error("type", f"must be one of {', '.join(decoders)}, not {kind!r}")
    return decode(raw)


def decode_received(raw: object) -> Received:
    """Any message on a caller's reply channel."""
    return cast(Received, _dispatch(raw, "reply", _REPLIES))


def decode_worker_message(raw: object) -> WorkerMessage:
    """Any message on a worker's own channel: a request sent to it by name, or a cancel."""
    return cast(WorkerMessage, _dispatch(raw, "worker message", _WORKER_MESSAGES))


def unexpected(reply: Reply, expected: str) -> ProtocolError:
    """A well-formed reply of the wrong type for its request (an ASR request
    answered with audio)."""
    return ProtocolError(
        reply["type"], "type", f"is not what this request is answered with ({expected})", reply
    )


# --- The layer


def redis_hosts(url: str) -> list[dict[str, object]]:
    """channels_redis host entries for `url`.

    redis-py 8 reads with a 5 s socket timeout by default, the same as
    channels_redis's 5 s blocking pop, so an idle receive fails with
    TimeoutError; a longer socket timeout keeps idle receivers alive.
    """
    return [{"address": url, "socket_timeout": 30}]


SEND_TRIES = 3


async def layer_send(layer: Any, channel: str, message: Mapping[str, object]) -> None:
    """`layer.send`, tried again on a connection error: after a Redis restart the
    layer's pooled connections are dead, and each fails once before reconnecting.
    A full channel is not retried."""
    from channels.exceptions import ChannelFull

    for attempt in range(SEND_TRIES):
        try:
            await layer.send(channel, message)
            return
        except ChannelFull:
            raise
        except Exception:
            if attempt == SEND_TRIES - 1:
                raise
            await asyncio.sleep(0.05 * (attempt + 1))


def reconnecting_retry() -> Any:
    """A redis-py `retry` for clients that outlive a Redis restart: a command on a
    pooled connection that died is sent again on a new one (redis-py's asyncio
    clients do not retry by default). Not for blocking pops."""
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    return Retry(ExponentialBackoff(cap=0.5, base=0.05), 3)
