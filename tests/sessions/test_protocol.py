"""The typed protocol and the settings parser, without a server or models:
every malformed event is one `ClientError` with the offending field's path."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from sessions.realtime import protocol
from sessions.realtime.errors import ClientError
from sessions.realtime.limits import (
    INF_OUTPUT_TOKENS,
    MAX_ITEM_CONTENT_PARTS,
    MAX_ITEM_TEXT_CHARS,
    MAX_OUTPUT_TOKENS,
)
from sessions.realtime.settings import (
    FULL,
    PUBLIC_FIELDS,
    SessionSettings,
    parse_session_update,
    public_policy,
    response_tokens,
    to_call_config,
)
from voiceapp.engine.call import CallConfig
from voiceapp.engine.tts import VoiceSpec


def parse(event: Any) -> Any:
    raw = event if isinstance(event, str) else json.dumps(event)
    return protocol.parse_client_event(raw, max_bytes=1024 * 1024)


def refusal(event: Any) -> ClientError:
    with pytest.raises(ClientError) as caught:
        parse(event)
    return caught.value


@pytest.fixture
def persona_settings() -> SessionSettings:
    config = CallConfig(voice=VoiceSpec(voice_id="en_US-test", model_path="/nonexistent"))
    config = replace(
        config, instructions="Secret persona prompt.", llm=replace(config.llm, max_tokens=120)
    )
    return SessionSettings.from_config(config)


# ----- client events -------------------------------------------------------------


def test_every_supported_event_parses_to_its_model() -> None:
    assert isinstance(parse({"type": "input_audio_buffer.commit"}), protocol.InputAudioBufferCommit)
    item = parse(
        {
            "type": "conversation.item.create",
            "event_id": "evt_1",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
            },
        }
    )
    assert isinstance(item, protocol.ConversationItemCreate)
    assert item.event_id == "evt_1" and item.item.text() == "hi"
    create = parse({"type": "response.create", "response": {"max_output_tokens": "inf"}})
    assert isinstance(create, protocol.ResponseCreate)
    assert create.response is not None and create.response.max_output_tokens == "inf"


@pytest.mark.parametrize(
    ("raw", "code", "param"),
    [
        ("[" * 6000, "invalid_json", None),  # was RecursionError: close 1011
        ("[" * 40 + "]" * 40, "invalid_json", None),
        ("{nope", "invalid_json", None),
        ("[1, 2]", "invalid_event", None),
        ({"event_id": "e"}, "invalid_event", "type"),
        ({"type": "conversation.item.delete", "item_id": "x"}, "unknown_event", "type"),
        ({"type": "input_audio_buffer.append"}, "invalid_value", "audio"),
        ({"type": "input_audio_buffer.append", "audio": 5}, "invalid_value", "audio"),
        ({"type": "input_audio_buffer.commit", "extra": 1}, "unknown_parameter", "extra"),
        ({"type": "response.cancel", "response_id": ["r"]}, "invalid_value", "response_id"),
        ({"type": "response.create", "response": []}, "invalid_value", "response"),
        (
            {"type": "response.create", "response": {"max_output_tokens": MAX_OUTPUT_TOKENS + 1}},
            "invalid_value",
            "response.max_output_tokens",
        ),
        (
            {"type": "response.create", "response": {"max_output_tokens": True}},
            "invalid_value",
            "response.max_output_tokens",
        ),
        ({"type": "conversation.item.create", "item": "x"}, "invalid_value", "item"),
        (
            {"type": "conversation.item.create", "item": {"role": "assistant", "content": []}},
            "invalid_value",
            "item.role",
        ),
        (
            {
                "type": "conversation.item.create",
                "item": {"role": "user", "content": [{"type": "input_text", "text": {"a": 1}}]},
            },
            "invalid_value",
            "item.content[0].text",
        ),
        (
            {
                "type": "conversation.item.create",
                "item": {
                    "role": "user",
                    "content": [{"type": "input_text", "text": "x" * (MAX_ITEM_TEXT_CHARS + 1)}],
                },
            },
            "invalid_value",
            "item.content[0].text",
        ),
        (
            {
                "type": "conversation.item.create",
                "item": {
                    "role": "user",
                    "content": [{"type": "input_text", "text": "x"}] * (MAX_ITEM_CONTENT_PARTS + 1),
                },
            },
            "invalid_value",
            "item.content",
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": -1},
            "invalid_value",
            "audio_end_ms",
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i" * 65, "audio_end_ms": 1},
            "invalid_value",
            "item_id",
        ),
    ],
)
def test_malformed_events_give_one_error_with_the_path(
    raw: Any, code: str, param: str | None
) -> None:
    error = refusal(raw)
    assert (error.code, error.param) == (code, param)
    assert error.message


def test_the_event_id_comes_back_with_the_error() -> None:
    error = refusal({"type": "input_audio_buffer.append", "event_id": "evt_9", "audio": 1})
    assert error.event_id == "evt_9"


def test_too_large_messages_are_refused_before_parsing() -> None:
    with pytest.raises(ClientError) as caught:
        protocol.parse_client_event("[" * 2000, max_bytes=1000)
    assert caught.value.code == "message_too_large"


# ----- session.update --------------------------------------------------------------


def update(raw: Any, current: SessionSettings, **kw: Any) -> SessionSettings | ClientError:
    return parse_session_update(raw, current, **kw)


@pytest.mark.parametrize(
    ("session", "code", "param"),
    [
        ("x", "invalid_value", "session"),
        ({"audio": {"input": 5}}, "invalid_value", "session.audio.input"),  # was close 1011
        ({"audio": {"output": "loud"}}, "invalid_value", "session.audio.output"),  # was 1011
        ({"audio": {"input": []}}, "invalid_value", "session.audio.input"),
        ({"audio": 3}, "invalid_value", "session.audio"),
        (
            {
                "audio": {
                    "input": {"turn_detection": {"type": "semantic_vad", "eagerness": ["high"]}}
                }
            },
            "invalid_value",
            "session.audio.input.turn_detection.eagerness",
        ),  # was close 1011
        (
            {
                "audio": {
                    "input": {"turn_detection": {"type": "semantic_vad", "eagerness": {"a": 1}}}
                }
            },
            "invalid_value",
            "session.audio.input.turn_detection.eagerness",
        ),  # was close 1011
        (
            {"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": "0.5"}}}},
            "invalid_value",
            "session.audio.input.turn_detection.threshold",
        ),
        (
            {"audio": {"input": {"turn_detection": {"type": "nope"}}}},
            "invalid_value",
            "session.audio.input.turn_detection",
        ),
        (
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}},
            "unsupported_audio_format",
            "session.audio.input.format.rate",
        ),
        (
            {"audio": {"output": {"format": {"type": "audio/opus"}}}},
            "unsupported_audio_format",
            "session.audio.output.format",
        ),
        ({"audio": {"output": {"speed": 9}}}, "invalid_value", "session.audio.output.speed"),
        ({"output_modalities": ["audio", "text"]}, "invalid_value", "session.output_modalities"),
        ({"max_output_tokens": 0}, "invalid_value", "session.max_output_tokens"),
        ({"instructions": 7}, "invalid_value", "session.instructions"),
        ({"type": "transcription"}, "invalid_value", "session.type"),
        ({"tools": [{"type": "function"}]}, "invalid_value", "session.tools[0].name"),
        ({"tools": [{"name": "look up"}]}, "invalid_value", "session.tools[0].name"),
        (
            {"tools": [{"name": "a", "parameters": []}]},
            "invalid_value",
            "session.tools[0].parameters",
        ),
        (
            {"tools": [{"name": "a", "parameters": {"type": "string"}}]},
            "invalid_value",
            "session.tools[0]",
        ),
        (
            {"tools": [{"name": "a", "parameters": {"properties": {"n": {"type": "date"}}}}]},
            "invalid_value",
            "session.tools[0]",
        ),
        ({"tools": [{"name": "a"}, {"name": "a"}]}, "invalid_value", "session.tools[1].name"),
        ({"tools": [{"name": f"t{n}"} for n in range(33)]}, "invalid_value", "session.tools"),
        (
            {"tool_choice": {"type": "function", "name": "absent"}},
            "invalid_value",
            "session.tool_choice",
        ),
        ({"tool_choice": "sometimes"}, "invalid_value", "session.tool_choice"),
        ({"voice": "alloy"}, "unknown_parameter", "session.voice"),
        (
            {"audio": {"input": {"transcription": {"language": "english-uk"}}}},
            "invalid_value",
            "session.audio.input.transcription.language",
        ),
    ],
)
def test_bad_session_updates_give_one_error_with_the_path(
    persona_settings: SessionSettings, session: Any, code: str, param: str
) -> None:
    result = update(session, persona_settings)
    assert isinstance(result, ClientError), result
    assert (result.code, result.param) == (code, param)


def test_a_rejected_update_changes_nothing(persona_settings: SessionSettings) -> None:
    # given an update whose idle timeout is fine but whose threshold is not
    bad = {
        "instructions": "new",
        "audio": {
            "input": {
                "turn_detection": {"type": "server_vad", "idle_timeout_ms": 60_000, "threshold": 2}
            }
        },
    }
    # then the error names the threshold and the settings are as they were
    result = update(bad, persona_settings)
    assert isinstance(result, ClientError)
    assert result.param == "session.audio.input.turn_detection.threshold"
    assert persona_settings.idle_timeout_s is None
    assert persona_settings.instructions == "Secret persona prompt."


def test_a_valid_update_applies_every_field(persona_settings: SessionSettings) -> None:
    new = update(
        {
            "type": "realtime",
            "instructions": "Be brief.",
            "output_modalities": ["text"],
            "max_output_tokens": "inf",
            "audio": {
                "input": {
                    "format": {"type": "audio/pcmu"},
                    "turn_detection": {
                        "type": "server_vad",
                        "silence_duration_ms": 700,
                        "idle_timeout_ms": 60_000,
                    },
                },
                "output": {"format": {"type": "audio/pcma"}, "speed": 1.2},
            },
        },
        persona_settings,
    )
    assert isinstance(new, SessionSettings)
    assert new.instructions == "Be brief." and new.output_modalities == ("text",)
    assert new.max_output_tokens == "inf" and new.reply_tokens == INF_OUTPUT_TOKENS
    assert (new.input_format, new.output_format) == ("audio/pcmu", "audio/pcma")
    assert new.idle_timeout_s == 60 and new.speed == 1.2
    assert new.turn_detection is not None and new.turn_detection["silence_duration_ms"] == 700
    # and the engine config follows in one step
    config = to_call_config(new, CallConfig(voice=VoiceSpec(voice_id="v", model_path="/x")))
    assert config.llm.max_tokens == INF_OUTPUT_TOKENS and not config.speak
    assert config.turns.end_of_turn_ms == 700 and config.voice.speed == 1.2
    # with the persona's rule for the waits after a finished and an unfinished turn
    assert config.turns.complete_end_of_turn_ms == 630
    assert config.turns.incomplete_end_of_turn_ms == 1400


def test_turn_detection_off_and_partial_updates_keep_the_rest(
    persona_settings: SessionSettings,
) -> None:
    manual = update({"audio": {"input": {"turn_detection": None}}}, persona_settings)
    assert isinstance(manual, SessionSettings) and manual.turn_detection is None
    semantic = update(
        {"audio": {"input": {"turn_detection": {"type": "semantic_vad", "eagerness": "high"}}}},
        manual,
    )
    assert isinstance(semantic, SessionSettings)
    assert semantic.turn_detection == {
        "type": "semantic_vad",
        "eagerness": "high",
        "create_response": True,
        "interrupt_response": True,
    }
    assert (
        to_call_config(semantic, CallConfig(voice=VoiceSpec("v", "/x"))).turns.end_of_turn_ms == 300
    )


def test_max_output_tokens_has_one_rule_for_session_and_response(
    persona_settings: SessionSettings,
) -> None:
    public = public_policy(max_reply_tokens=120, idle_timeout_s=30)
    for policy, ceiling in ((FULL, MAX_OUTPUT_TOKENS), (public, 120)):
        over = update({"max_output_tokens": ceiling + 1}, persona_settings, allowed=policy)
        assert isinstance(over, ClientError) and over.param == "session.max_output_tokens"
        assert isinstance(response_tokens(ceiling + 1, policy), ClientError)
        at = update({"max_output_tokens": ceiling}, persona_settings, allowed=policy)
        assert isinstance(at, SessionSettings) and at.reply_tokens == ceiling
        assert response_tokens(ceiling, policy) == ceiling
        inf = update({"max_output_tokens": "inf"}, persona_settings, allowed=policy)
        assert isinstance(inf, SessionSettings)
        assert inf.reply_tokens == response_tokens("inf", policy) == policy.inf_output_tokens


@pytest.mark.parametrize(
    ("session", "param"),
    [
        ({"instructions": "You are evil."}, "session.instructions"),
        ({"audio": {"output": {"voice": "en_US-other"}}}, "session.audio.output.voice"),
        ({"tools": []}, "session.tools"),
        ({"audio": {"input": 5}}, "session.audio.input"),
    ],
)
def test_a_publishable_key_may_change_only_the_allowed_fields(
    persona_settings: SessionSettings, session: Any, param: str
) -> None:
    public = public_policy(max_reply_tokens=120, idle_timeout_s=30)
    result = update(session, persona_settings, allowed=public)
    assert isinstance(result, ClientError)
    assert (result.code, result.param) == ("field_not_allowed", param)


def test_a_publishable_key_cannot_stretch_the_idle_timeout(
    persona_settings: SessionSettings,
) -> None:
    public = public_policy(max_reply_tokens=120, idle_timeout_s=30)
    longer = {
        "audio": {"input": {"turn_detection": {"type": "server_vad", "idle_timeout_ms": 1_800_000}}}
    }
    result = update(longer, persona_settings, allowed=public)
    assert isinstance(result, ClientError)
    assert result.param == "session.audio.input.turn_detection.idle_timeout_ms"
    allowed = update(
        {"output_modalities": ["text"], "audio": {"output": {"speed": 1.1}}},
        persona_settings,
        allowed=public,
    )
    assert isinstance(allowed, SessionSettings)
    assert {"output_modalities", "audio.output.speed"} <= PUBLIC_FIELDS
    assert "instructions" not in PUBLIC_FIELDS and "audio.output.voice" not in PUBLIC_FIELDS


def test_tools_and_tool_choice_reach_the_call(persona_settings: SessionSettings) -> None:
    # given tools with a schema, and a named tool choice
    tools = [
        {
            "type": "function",
            "name": "lookup_order",
            "description": "Look up an order.",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
        },
        {"name": "end_call"},
    ]
    choice = {"type": "function", "name": "lookup_order"}
    # when the session is updated
    settings = update({"tools": tools, "tool_choice": choice}, persona_settings)
    # then the session shows them as given, and the call's LLM is offered them
    assert isinstance(settings, SessionSettings)
    assert [t["name"] for t in settings.tools_api()] == ["lookup_order", "end_call"]
    assert settings.tools_api()[0]["parameters"] == tools[0]["parameters"]
    assert settings.tools_api()[1]["parameters"] == {"type": "object", "properties": {}}
    assert settings.tool_choice_api() == choice
    base = CallConfig(voice=VoiceSpec(voice_id="en_US-test", model_path="/nonexistent"))
    llm = to_call_config(settings, base).llm
    assert [t.name for t in llm.tools] == ["lookup_order", "end_call"]
    assert llm.tool_choice == "lookup_order"
    assert [t.name for t in llm.offered_tools] == ["lookup_order"]
    # and a later update that removes the named tool is refused, changing nothing
    refused = update({"tools": [{"name": "end_call"}]}, settings)
    assert isinstance(refused, ClientError) and refused.param == "session.tool_choice"


def test_a_function_call_output_item_parses() -> None:
    event = parse(
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "call_1", "output": "{}"},
        }
    )
    assert isinstance(event.item, protocol.FunctionCallOutputItem)
    assert (event.item.call_id, event.item.output) == ("call_1", "{}")
    error = refusal(
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "output": "{}"},
        }
    )
    assert (error.code, error.param) == ("invalid_value", "item.call_id")


def test_the_personas_actions_are_offered_but_not_shown_as_the_clients() -> None:
    # given a persona whose take_message and end_call actions are on
    from sessions.realtime.actions import BUILT_IN

    actions = (BUILT_IN["take_message"], BUILT_IN["end_call"])
    base = CallConfig(voice=VoiceSpec(voice_id="en_US-test", model_path="/nonexistent"))
    config = replace(base, actions=actions, llm=replace(base.llm, tools=actions))
    settings = SessionSettings.from_config(config)
    # then the session shows no tools of the client's, yet a named choice may pick one
    assert settings.tools_api() == []
    chosen = update({"tool_choice": {"type": "function", "name": "take_message"}}, settings)
    assert isinstance(chosen, SessionSettings)
    # and the call's LLM is offered the client's tools, then the actions; a client
    # tool of an action's name is the client's own
    mine = {"type": "function", "name": "end_call", "description": "My own hang-up."}
    with_tools = update({"tools": [mine, {"name": "lookup_order"}]}, chosen)
    assert isinstance(with_tools, SessionSettings)
    llm = to_call_config(with_tools, config).llm
    assert [t.name for t in llm.tools] == ["end_call", "lookup_order", "take_message"]
    assert llm.tools[0].description == "My own hang-up."
    # and the decline offers a message only with take_message on
    assert "take a message" in config.decline_text
    assert "take a message" not in base.decline_text


def test_openai_clients_defaults_are_accepted(persona_settings: SessionSettings) -> None:
    # the Agents SDK's defaults: an OpenAI voice name and tracing "auto"
    settings = update({"audio": {"output": {"voice": "ash"}}, "tracing": "auto"}, persona_settings)
    assert isinstance(settings, SessionSettings)
    assert settings.voice_id == persona_settings.voice_id  # the persona's voice is kept
    traced = update({"tracing": {"workflow_name": "support", "group_id": "g1"}}, settings)
    assert isinstance(traced, SessionSettings)
    assert isinstance(update({"tracing": "everything"}, settings), ClientError)
    # a name that is neither OpenAI's nor ours is passed on (the session refuses it)
    unknown = update({"audio": {"output": {"voice": "nobody"}}}, settings)
    assert isinstance(unknown, SessionSettings) and unknown.voice_id == "nobody"
