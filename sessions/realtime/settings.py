"""A call's settings: one immutable `SessionSettings`, changed only as a whole.

`parse_session_update` reads a ``session`` object (from ``session.update`` or
a client secret's config) against the current settings and the caller's
`Policy`, and returns either the complete new settings or one `ClientError`.
Nothing is applied until everything is checked; `to_call_config` then turns
the settings into the engine's `CallConfig` in one step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import ValidationError

from sessions.realtime.errors import ClientError
from sessions.realtime.limits import (
    INF_OUTPUT_TOKENS,
    MAX_IDLE_TIMEOUT_MS,
    MAX_OUTPUT_TOKENS,
    MAX_TOOL_SCHEMA_CHARS,
)
from sessions.realtime.protocol import (
    FunctionTool,
    SemanticVad,
    ServerVad,
    SessionBody,
    ToolChoice,
    client_error,
)
from voiceapp.engine.call import CallConfig
from voiceapp.engine.tools import ToolSpec, schema_problem
from voiceapp.engine.tts import VoiceSpec

# The OpenAI Realtime API's own voice names. Clients send one by default (the Agents
# SDK sends "ash"); none is a voice here, so each keeps the persona's voice.
OPENAI_VOICES = frozenset(
    {"alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"}
)

SEMANTIC_EAGERNESS_MS = {"low": 1200, "medium": 600, "auto": 600, "high": 300}

# What a publishable-key (widget) caller may change with session.update; any
# other field is refused with "field_not_allowed". Left out on purpose:
# instructions (the persona's, and not shown to the caller either), the voice
# (the persona's brand), and every option this server does not serve.
PUBLIC_FIELDS = frozenset(
    {
        "type",
        "output_modalities",
        "max_output_tokens",  # at most the persona's max_reply_tokens
        "audio.input.format",
        "audio.input.transcription",
        "audio.input.turn_detection",  # idle_timeout_ms at most the persona's idle timeout
        "audio.input.noise_reduction",
        "audio.output.format",
        "audio.output.speed",
    }
)


@dataclass(frozen=True)
class Policy:
    """What a caller may set: which fields (None: all) and the ceilings."""

    fields: frozenset[str] | None
    max_output_tokens: int
    inf_output_tokens: int  # what "inf" means
    max_idle_timeout_ms: int
    shows_instructions: bool  # session.created / session.updated carry the instructions
    instructs_responses: bool  # response.create may carry instructions


FULL = Policy(
    fields=None,
    max_output_tokens=MAX_OUTPUT_TOKENS,
    inf_output_tokens=INF_OUTPUT_TOKENS,
    max_idle_timeout_ms=MAX_IDLE_TIMEOUT_MS,
    shows_instructions=True,
    instructs_responses=True,
)


def public_policy(*, max_reply_tokens: int, idle_timeout_s: float) -> Policy:
    """The policy of a widget (publishable-key) caller of a persona with these limits."""
    return Policy(
        fields=PUBLIC_FIELDS,
        max_output_tokens=max_reply_tokens,
        inf_output_tokens=max_reply_tokens,
        max_idle_timeout_ms=int(idle_timeout_s * 1000),
        shows_instructions=False,
        instructs_responses=False,
    )


@dataclass(frozen=True)
class TurnDetection:
    """The last turn-detection values, kept while turn detection is off too."""

    type: Literal["server_vad", "semantic_vad"]
    threshold: float
    prefix_padding_ms: int
    silence_duration_ms: int
    idle_timeout_ms: int | None
    eagerness: str
    create_response: bool
    interrupt_response: bool

    def as_api(self) -> dict[str, Any]:
        if self.type == "semantic_vad":
            return {
                "type": "semantic_vad",
                "eagerness": self.eagerness,
                "create_response": self.create_response,
                "interrupt_response": self.interrupt_response,
            }
        return {
            "type": "server_vad",
            "threshold": self.threshold,
            "prefix_padding_ms": self.prefix_padding_ms,
            "silence_duration_ms": self.silence_duration_ms,
            "idle_timeout_ms": self.idle_timeout_ms,
            "create_response": self.create_response,
            "interrupt_response": self.interrupt_response,
        }

    def end_of_turn_ms(self) -> int:
        if self.type == "semantic_vad":
            return SEMANTIC_EAGERNESS_MS[self.eagerness]
        return self.silence_duration_ms


@dataclass(frozen=True)
class SessionSettings:
    instructions: str
    output_modalities: tuple[str, ...]
    max_output_tokens: int | Literal["inf"]  # as the client set it
    reply_tokens: int  # what a reply may use
    input_format: str
    output_format: str
    transcription_model: str
    language: str
    transcription_prompt: str | None
    turn_detection_on: bool
    vad: TurnDetection
    voice_id: str
    speed: float
    tools: tuple[ToolSpec, ...] = ()  # the client's (the persona's actions are not shown)
    tool_choice: str = "auto"  # "auto", "none", "required" or a tool's name
    action_names: tuple[str, ...] = ()  # the persona's actions: a named choice may pick one

    @classmethod
    def from_config(cls, cfg: CallConfig) -> SessionSettings:
        """The settings a call starts with: the persona's, as the engine has them."""
        return cls(
            instructions=cfg.instructions,
            output_modalities=("audio",) if cfg.speak else ("text",),
            max_output_tokens=cfg.llm.max_tokens,
            reply_tokens=cfg.llm.max_tokens,
            input_format="audio/pcm",
            output_format="audio/pcm",
            transcription_model="whisper-1",
            language=cfg.language,
            transcription_prompt=None,
            turn_detection_on=True,
            vad=TurnDetection(
                type="server_vad",
                threshold=cfg.turns.threshold,
                prefix_padding_ms=cfg.prefix_padding_ms,
                silence_duration_ms=cfg.turns.end_of_turn_ms,
                idle_timeout_ms=None,
                eagerness="auto",
                create_response=cfg.create_response,
                interrupt_response=cfg.interruptions_enabled,
            ),
            voice_id=cfg.voice.voice_id,
            speed=cfg.voice.speed,
            tools=tuple(t for t in cfg.llm.tools if t not in cfg.actions),
            tool_choice=cfg.llm.tool_choice,
            action_names=tuple(a.name for a in cfg.actions),
        )

    @property
    def speaks(self) -> bool:
        return "audio" in self.output_modalities

    @property
    def turn_detection(self) -> dict[str, Any] | None:
        return self.vad.as_api() if self.turn_detection_on else None

    @property
    def idle_timeout_s(self) -> float | None:
        """The client's idle timeout, when it set one (else the persona's applies)."""
        ms = self.vad.idle_timeout_ms
        return ms / 1000 if ms is not None else None

    def tools_api(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.schema(),
            }
            for t in self.tools
        ]

    def tool_choice_api(self) -> str | dict[str, str]:
        if self.tool_choice in ("auto", "none", "required"):
            return self.tool_choice
        return {"type": "function", "name": self.tool_choice}

    def transcription(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"model": self.transcription_model, "language": self.language}
        if self.transcription_prompt is not None:
            shown["prompt"] = self.transcription_prompt
        return shown


def given_paths(raw: dict[str, Any]) -> list[str]:
    """The fields a ``session`` object sets, down to ``audio.<side>.<field>``."""
    paths: list[str] = []
    for key, value in raw.items():
        if key == "audio" and isinstance(value, dict):
            for side, fields in value.items():
                if side in ("input", "output") and isinstance(fields, dict):
                    paths.extend(f"audio.{side}.{name}" for name in fields)
                else:
                    paths.append(f"audio.{side}")
        else:
            paths.append(str(key))
    return paths


def parse_session_update(
    raw: Any, current: SessionSettings, *, allowed: Policy = FULL
) -> SessionSettings | ClientError:
    """The settings after applying the ``session`` object `raw`, or why not."""
    if not isinstance(raw, dict):
        return ClientError("invalid_value", "session must be an object.", "session")
    if allowed.fields is not None:
        for path in given_paths(raw):
            if path not in allowed.fields:
                return ClientError(
                    "field_not_allowed",
                    f"session.{path} cannot be changed with a publishable key.",
                    f"session.{path}",
                )
    try:
        body = SessionBody.model_validate(raw)
    except ValidationError as exc:
        return client_error(exc, prefix="session")

    new = current
    if body.instructions is not None:
        new = replace(new, instructions=body.instructions)
    if body.output_modalities is not None:
        if len(body.output_modalities) != 1:
            return ClientError(
                "invalid_value",
                'output_modalities must be ["audio"] or ["text"].',
                "session.output_modalities",
            )
        new = replace(new, output_modalities=tuple(body.output_modalities))
    if body.max_output_tokens is not None:
        tokens = body.max_output_tokens
        if tokens != "inf" and tokens > allowed.max_output_tokens:
            return ClientError(
                "invalid_value",
                f'max_output_tokens must be 1..{allowed.max_output_tokens} or "inf".',
                "session.max_output_tokens",
            )
        reply = allowed.inf_output_tokens if tokens == "inf" else tokens
        new = replace(new, max_output_tokens=tokens, reply_tokens=reply)

    if body.tools is not None:
        tools = _tool_specs(body.tools)
        if isinstance(tools, ClientError):
            return tools
        new = replace(new, tools=tools)
    if body.tool_choice is not None:
        new = replace(new, tool_choice=_tool_choice(body.tool_choice))
    if new.tool_choice not in ("auto", "none", "required") and new.tool_choice not in {
        *(t.name for t in new.tools),
        *new.action_names,
    }:
        return ClientError(
            "invalid_value",
            f"tool_choice names “{new.tool_choice}”, which is not in session.tools.",
            "session.tool_choice",
        )

    audio_in = body.audio.input if body.audio else None
    audio_out = body.audio.output if body.audio else None
    if audio_in is not None:
        if audio_in.format is not None:
            new = replace(new, input_format=audio_in.format.type)
        if audio_in.transcription is not None:
            t = audio_in.transcription
            new = replace(
                new,
                transcription_model=t.model if t.model is not None else new.transcription_model,
                language=t.language if t.language is not None else new.language,
                transcription_prompt=(
                    t.prompt if t.prompt is not None else new.transcription_prompt
                ),
            )
        if "turn_detection" in audio_in.model_fields_set:
            td = audio_in.turn_detection
            if td is None:
                new = replace(new, turn_detection_on=False)
            else:
                vad = _merge_turn_detection(new.vad, td)
                if vad.idle_timeout_ms is not None and (
                    vad.idle_timeout_ms > allowed.max_idle_timeout_ms
                ):
                    return ClientError(
                        "invalid_value",
                        f"idle_timeout_ms may be at most {allowed.max_idle_timeout_ms}.",
                        "session.audio.input.turn_detection.idle_timeout_ms",
                    )
                new = replace(new, turn_detection_on=True, vad=vad)
    if audio_out is not None:
        if audio_out.format is not None:
            new = replace(new, output_format=audio_out.format.type)
        if audio_out.voice is not None and audio_out.voice not in OPENAI_VOICES:
            new = replace(new, voice_id=audio_out.voice)
        if audio_out.speed is not None:
            new = replace(new, speed=float(audio_out.speed))
    return new


def _tool_specs(tools: list[FunctionTool]) -> tuple[ToolSpec, ...] | ClientError:
    """`session.tools` as the engine's tools: names unique, schemas usable."""
    specs: list[ToolSpec] = []
    for index, tool in enumerate(tools):
        param = f"session.tools[{index}]"
        if any(spec.name == tool.name for spec in specs):
            return ClientError(
                "invalid_value", f"Two tools are named “{tool.name}”.", f"{param}.name"
            )
        schema = tool.parameters or {"type": "object", "properties": {}}
        problem = schema_problem(schema)
        if problem:
            return ClientError("invalid_value", f"{param}.parameters: {problem}", param)
        text = json.dumps(schema, ensure_ascii=False)
        if len(text) > MAX_TOOL_SCHEMA_CHARS:
            return ClientError(
                "invalid_value",
                f"{param}.parameters may be at most {MAX_TOOL_SCHEMA_CHARS} characters of JSON.",
                f"{param}.parameters",
            )
        specs.append(ToolSpec(tool.name, tool.description, text))
    return tuple(specs)


def _tool_choice(choice: ToolChoice) -> str:
    return choice if isinstance(choice, str) else choice.name


def _merge_turn_detection(current: TurnDetection, td: ServerVad | SemanticVad) -> TurnDetection:
    """Fields the client left out keep their last value."""
    given = {k: getattr(td, k) for k in td.model_fields_set if getattr(td, k) is not None}
    return replace(current, **given)


def response_tokens(
    value: int | Literal["inf"] | None, allowed: Policy
) -> int | ClientError | None:
    """A ``response.create``'s max_output_tokens as the reply's token budget
    (None: the session's), by the same rules as ``session.update``."""
    if value is None:
        return None
    if value == "inf":
        return allowed.inf_output_tokens
    if value > allowed.max_output_tokens:
        return ClientError(
            "invalid_value",
            f'max_output_tokens must be 1..{allowed.max_output_tokens} or "inf".',
            "response.max_output_tokens",
        )
    return value


def _offered(tools: tuple[ToolSpec, ...], actions: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    """The client's tools, then the persona's actions; a client tool of an action's
    name is the client's (it handles that call itself)."""
    names = {t.name for t in tools}
    return tools + tuple(a for a in actions if a.name not in names)


def to_call_config(
    settings: SessionSettings, cfg: CallConfig, voice: VoiceSpec | None = None
) -> CallConfig:
    """The engine configuration for `settings`; `voice` is the resolved voice when it changed."""
    cfg = replace(
        cfg,
        instructions=settings.instructions,
        speak=settings.speaks,
        language=settings.language,
        llm=replace(
            cfg.llm,
            max_tokens=settings.reply_tokens,
            tools=_offered(settings.tools, cfg.actions),
            tool_choice=settings.tool_choice,
        ),
        voice=replace(voice or cfg.voice, speed=settings.speed),
    )
    if not settings.turn_detection_on:
        return replace(cfg, create_response=False)
    vad = settings.vad
    turns = cfg.turns.with_silence(vad.end_of_turn_ms())
    if vad.type == "server_vad":
        turns = replace(turns, threshold=float(vad.threshold))
        cfg = replace(cfg, prefix_padding_ms=vad.prefix_padding_ms)
    return replace(
        cfg,
        turns=turns,
        create_response=vad.create_response,
        interruptions_enabled=vad.interrupt_response,
    )
