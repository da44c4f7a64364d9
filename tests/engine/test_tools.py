"""Function tools in the LLM backends: the embedded model's grammar-bound calls
(real SmolLM2), and calls streamed by an OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import threading

import pytest

from tests.support.llm_server import scripted_sse_server
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import HttpLLM, HttpLLMSettings, LlamaLLM, LLMError, LLMOptions
from voiceapp.engine.tools import (
    ToolCall,
    ToolSpec,
    call_message,
    openai_messages,
    output_message,
    parse_call,
    plain_messages,
)

ORDER = ToolSpec(
    "lookup_order",
    "Look up the status of the caller's order by its order number.",
    json.dumps({"type": "object", "properties": {"order_number": {"type": "string"}}}),
)
BOOK = ToolSpec(
    "book_table",
    "Book a table.",
    json.dumps(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "people": {"type": "integer"},
                "date": {"type": "string"},
            },
        }
    ),
)
END = ToolSpec("end_call", "Hang up when the caller says goodbye.")
SYSTEM = {"role": "system", "content": "You are the phone assistant of a restaurant."}


@pytest.fixture(scope="module")
def llm(models: LocalInference) -> LlamaLLM:
    assert isinstance(models.llm, LlamaLLM)
    return models.llm


def reply(llm: LlamaLLM, text: str, choice: str) -> list[str | ToolCall]:
    options = LLMOptions(max_tokens=40, tools=(ORDER, BOOK, END), tool_choice=choice)
    messages = [SYSTEM, {"role": "user", "content": text}]
    return list(llm.stream(messages, options, threading.Event()))


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "Where is my order A1234?",
        "A table for four on Friday, please, the name is Anna.",
        "Thanks, bye!",
        "Tell me a long story about dragons and castles and knights.",
    ],
)
def test_a_required_call_is_always_well_formed(llm: LlamaLLM, text: str) -> None:
    # when the embedded model must call a tool, whatever the caller said
    items = reply(llm, text, "required")
    # then the reply is exactly one call of an offered tool, every argument written
    assert len(items) == 1 and isinstance(items[0], ToolCall), items
    call = items[0]
    spec = {t.name: t for t in (ORDER, BOOK, END)}[call.name]
    arguments = json.loads(call.arguments)
    properties = spec.schema().get("properties", {})
    assert set(arguments) == set(properties)
    # and no string argument is left empty (a call to look up order "" helps nobody)
    for key, value in arguments.items():
        if properties[key]["type"] == "string":
            assert value.strip(), arguments
    if call.name == "book_table":
        assert isinstance(arguments["people"], int)


@pytest.mark.slow
def test_a_named_tool_choice_calls_that_tool(llm: LlamaLLM) -> None:
    items = reply(llm, "Hello there!", "end_call")
    assert [(i.name, i.arguments) for i in items if isinstance(i, ToolCall)] == [("end_call", "{}")]
    assert not [i for i in items if isinstance(i, str)]


@pytest.mark.slow
def test_tool_choice_none_answers_in_words(llm: LlamaLLM) -> None:
    items = reply(llm, "Where is my order A1234?", "none")
    assert items and all(isinstance(i, str) for i in items)
    assert "<tool_call>" not in "".join(str(i) for i in items)


def test_the_embedded_models_call_text_is_read_back() -> None:
    text = (
        '<tool_call>{"name": "lookup_order", "arguments": '
        '{"order_number": "a</tool_call>\nb"}}</tool_call>'
    )
    call = parse_call(text, (ORDER,))
    assert call is not None and call.name == "lookup_order"
    assert json.loads(call.arguments) == {"order_number": "a</tool_call>\nb"}
    assert parse_call('<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>', (ORDER,)) is None
    assert parse_call('<tool_call>{"name": "lookup_order", "arguments": 3}', (ORDER,)) is None
    assert parse_call("<tool_call>{", (ORDER,)) is None


def test_calls_and_outputs_in_both_backends_forms() -> None:
    call = ToolCall("call_1", "lookup_order", '{"order_number": "A1"}')
    history = [
        SYSTEM,
        {"role": "user", "content": "Where is A1?"},
        call_message(call),
        output_message("call_1", "lookup_order", "shipped"),
        output_message("call_gone", "lookup_order", "a call trimmed away"),
    ]
    sent = openai_messages(history)
    assert sent[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_number": "A1"}'},
            }
        ],
    }
    assert sent[3:] == [{"role": "tool", "tool_call_id": "call_1", "content": "shipped"}]
    plain = plain_messages(history)
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "user"]
    assert plain[2]["content"].startswith('<tool_call>{"name": "lookup_order"')
    assert "shipped" in plain[3]["content"]


def tool_call_events(arguments_parts: list[str]) -> list[dict[str, object]]:
    first = {
        "index": 0,
        "id": "call_srv",
        "type": "function",
        "function": {"name": "lookup_order", "arguments": ""},
    }
    events: list[dict[str, object]] = [{"choices": [{"delta": {"tool_calls": [first]}}]}]
    for part in arguments_parts:
        delta = {"index": 0, "function": {"arguments": part}}
        events.append({"choices": [{"delta": {"tool_calls": [delta]}}]})
    return events


def test_an_endpoints_streamed_call_is_joined_and_its_request_carries_the_tools() -> None:
    events = [
        {"choices": [{"delta": {"content": "Let me check."}}]},
        *tool_call_events(['{"order_', 'number": "A1234"}']),
    ]
    with scripted_sse_server(events) as server:
        llm = HttpLLM(HttpLLMSettings(base_url=server.base_url))
        options = LLMOptions(tools=(ORDER, END), tool_choice="lookup_order")
        history = [SYSTEM, call_message(ToolCall("call_0", "end_call", "{}"))]
        items = list(llm.stream(history, options, threading.Event()))
    assert items == [
        "Let me check.",
        ToolCall("call_srv", "lookup_order", '{"order_number": "A1234"}'),
    ]
    body = server.requests[0]
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup_order", "end_call"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}
    assert body["messages"][1]["tool_calls"][0]["id"] == "call_0"


@pytest.mark.parametrize(
    ("parts", "name"),
    [(['{"order_number": '], "lookup_order"), (["[1]"], "lookup_order"), (["{}"], "rm_rf")],
)
def test_an_endpoints_bad_call_is_a_clear_error(parts: list[str], name: str) -> None:
    events = tool_call_events(parts)
    events[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] = name  # type: ignore[index]
    with scripted_sse_server(events) as server:
        llm = HttpLLM(HttpLLMSettings(base_url=server.base_url))
        options = LLMOptions(tools=(ORDER,), tool_choice="auto")
        with pytest.raises(LLMError) as caught:
            list(llm.stream([SYSTEM], options, threading.Event()))
    assert caught.value.code == "llm_endpoint_bad_response"


def test_an_endpoint_stream_cut_before_its_end_is_a_clear_error() -> None:
    # given an endpoint that sends its 200 and a first delta, then closes the stream
    # without a finish_reason or [DONE] (its reply failed after it had started)
    events = [{"choices": [{"delta": {"content": "Let me"}}]}]
    with scripted_sse_server(events, done=False) as server:
        llm = HttpLLM(HttpLLMSettings(base_url=server.base_url))
        options = LLMOptions(tools=(ORDER,), tool_choice="auto")
        items: list[str | ToolCall] = []
        with pytest.raises(LLMError) as caught:
            for item in llm.stream([SYSTEM], options, threading.Event()):
                items.append(item)
    # then what it sent arrives, and the cut is an error, not a finished reply
    assert items == ["Let me"]
    assert caught.value.code == "llm_endpoint_bad_response"
    assert "before the reply was finished" in str(caught.value)


def test_an_endpoint_stream_that_says_it_finished_needs_no_done() -> None:
    events = [{"choices": [{"delta": {"content": "Hi."}, "finish_reason": "stop"}]}]
    with scripted_sse_server(events, done=False) as server:
        llm = HttpLLM(HttpLLMSettings(base_url=server.base_url))
        items = list(llm.stream([SYSTEM], LLMOptions(), threading.Event()))
    assert items == ["Hi."]


@pytest.mark.slow
def test_a_read_ahead_of_the_prompt_never_calls(llm: LlamaLLM) -> None:
    # a one-token request only reads the prompt (readahead.py), whatever the choice
    options = LLMOptions(max_tokens=1, tools=(ORDER,), tool_choice="required")
    messages = [SYSTEM, {"role": "user", "content": "Where is my order A1234?"}]
    items = list(llm.stream(messages, options, threading.Event()))
    assert all(isinstance(i, str) for i in items)
