"""Reply writing with the real LLM: the prompt, facts spoken as written, clauses
through the reply guard into the reply's speech."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, replace
from typing import Any

import pytest

from bench.bakery import FACTS, INSTRUCTIONS
from tests.support.engine_calls import fast_config
from tests.support.inference import RecordingInference
from tests.support.llm_server import scripted_sse_server
from voiceapp.engine.frames import Frame, LLMToken, TextClause, ToolCallMade
from voiceapp.engine.history import History
from voiceapp.engine.inference import LocalInference
from voiceapp.engine.llm import HttpLLM, HttpLLMSettings, LLMOptions, PromptUsage
from voiceapp.engine.models import default_voice
from voiceapp.engine.planner import NO_GENERAL
from voiceapp.engine.prompt import DEFAULT_DECLINE, PromptBuilder
from voiceapp.engine.response import Response
from voiceapp.engine.speaker import ReplySpeaker, SpeakerSettings
from voiceapp.engine.tasks import TaskOwner
from voiceapp.engine.tools import ToolCall, ToolSpec
from voiceapp.engine.tracing import TurnTrace
from voiceapp.engine.writer import ReplyWriter, WriterSettings, begins
from voiceapp.personas.services import DEFAULT_INSTRUCTIONS

READ_AHEAD_S = 0.05  # how long the test's read-ahead reads before a request goes out
SATURDAY = "On Saturday we open at 8 am and close at 2 pm. We are closed on Sundays."


@dataclass
class Desk:
    """A writer for the bakery's agent, the history it reads, and what it asked for."""

    writer: ReplyWriter
    history: History
    inference: RecordingInference
    waited: list[str]  # one entry per time the writer waited for the read ahead


def bakery_desk(
    models: LocalInference,
    *,
    grounding: bool = True,
    direct_answers: bool = True,
    history_budget_chars: int = 2000,
    route_tools: bool = False,
    turn_acts: bool = False,
    facts: bool = True,
    general_questions: bool = True,
) -> Desk:
    history = History()
    inference = RecordingInference(models)
    waited: list[str] = []

    async def before_llm() -> None:
        waited.append("read ahead")
        await asyncio.sleep(READ_AHEAD_S)  # the call's read-ahead, still reading

    config = fast_config()
    settings = WriterSettings(
        chunker=config.chunker,
        history_budget_chars=history_budget_chars,
        grounding=grounding,
        max_sentences=3,
        language="en",
        decline=DEFAULT_DECLINE,
        route_tools=route_tools,
        turn_acts=turn_acts,
        general_questions=general_questions,
    )
    prompt = PromptBuilder(
        instructions=INSTRUCTIONS if facts else DEFAULT_INSTRUCTIONS,
        facts=FACTS if grounding and facts else (),
        derive_facts=grounding and facts,
        direct_min_score=0.0 if grounding and direct_answers else None,
    )
    writer = ReplyWriter(
        settings, prompt, inference, history, before_llm=before_llm, session="call_test"
    )
    return Desk(writer, history, inference, waited)


async def write(
    desk: Desk,
    models: LocalInference,
    owner: TaskOwner,
    user_text: str | None,
    llm: LLMOptions | None = None,
) -> tuple[bool, Response, list[Frame]]:
    """Write the reply to `user_text` (None: to the history as it is) into a
    text-only speech and let it finish."""
    frames: list[Frame] = []
    speaker = ReplySpeaker(
        SpeakerSettings(default_voice()), models, frames.append, owner, fail=lambda r, e: None
    )
    response = Response(
        "resp_test", None, TurnTrace(), frames.append, speculative=False, speak=False
    )
    speech = speaker.start(response)
    llm = llm or fast_config().llm
    direct = await desk.writer.write(response, speech, llm, None, user_text=user_text)
    speech.end()
    async with asyncio.timeout(30):
        await speech.finished()
    return direct, response, frames


async def test_a_question_a_fact_answers_is_spoken_as_written_without_the_llm(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    desk = bakery_desk(models)

    direct, response, frames = await write(
        desk, models, task_owner, "What time do you open on Saturday?"
    )

    assert direct is True
    assert response.text == SATURDAY
    assert desk.inference.llm == [] and desk.waited == []
    assert (response.usage["input_tokens"], response.usage["output_tokens"]) == (0, 0)
    assert "".join(f.text for f in frames if isinstance(f, LLMToken)) == SATURDAY
    # the speech got it clause by clause, in order
    said = [f.text for f in frames if isinstance(f, TextClause)]
    assert " ".join(said) == SATURDAY and len(said) > 1
    # later prompts carry the caller's plain words for a turn answered as written
    assert desk.writer.sent_form("What time do you open on Saturday?") is None


async def test_a_reply_the_llm_writes_reaches_the_speech_and_reports_its_tokens(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    desk = bakery_desk(models, grounding=False)
    desk.history.add("assistant", "Hello, this is the bakery.")

    direct, response, frames = await write(desk, models, task_owner, "Say hello to me.")

    assert direct is False
    assert desk.waited == ["read ahead"]  # the request waited for the read ahead first
    (request,) = desk.inference.llm
    assert request.options.session == "call_test"
    assert request.messages[-1] == {"role": "user", "content": "Say hello to me."}
    assert {"role": "assistant", "content": "Hello, this is the bakery."} in request.messages
    assert response.text and response.usage["output_tokens"] > 0
    assert response.usage["input_tokens"] == request.stream.usage.input_tokens > 0
    tokens = "".join(f.text for f in frames if isinstance(f, LLMToken))
    said = " ".join(f.text for f in frames if isinstance(f, TextClause))
    assert tokens == response.text == said
    marks = response.trace.marks
    assert marks.keys() >= {"llm_start", "llm_request", "llm_first_token", "first_clause"}
    # the request went out after the read ahead it waited for, and before its first token
    assert marks["llm_request"] - marks["llm_start"] >= READ_AHEAD_S
    assert marks["llm_request"] <= marks["llm_first_token"]


class Written:
    """The real models, but the LLM writes `text`, a word at a time."""

    def __init__(self, inner: LocalInference, text: str) -> None:
        self.inner = inner
        self.text = text

    def generate(self, messages: Any, options: LLMOptions) -> Any:
        return WordStream(self.text)

    def synthesize(self, text: str, voice: Any, *, background: bool = False) -> Any:
        return self.inner.synthesize(text, voice, background=background)


class WordStream:
    def __init__(self, text: str) -> None:
        self._words = iter(re.findall(r"\s*\S+", text))
        self.usage = PromptUsage(input_tokens=50, cached_tokens=40)
        self.queue_ms = 0.0

    def __aiter__(self) -> WordStream:
        return self

    async def __anext__(self) -> str:
        await asyncio.sleep(0)
        try:
            return next(self._words)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(
    ("written", "said", "rewritten"),
    [
        # the guard put the decline in place of another language: the LLM's context
        # holds the French, the history the decline
        ("Oui, nous avons le pain et les croissants pour vous.", DEFAULT_DECLINE, True),
        # kept to three sentences: what is said is the start of what was written
        (
            "We open at eight. We close at six. We bake every day. Come early.",
            "We open at eight. We close at six. We bake every day.",
            False,
        ),
    ],
)
async def test_a_reply_the_guard_rewrote_is_read_ahead_like_a_direct_one(
    models: LocalInference, task_owner: TaskOwner, written: str, said: str, rewritten: bool
) -> None:
    # given an agent whose LLM writes `written`
    desk = bakery_desk(Written(models, written), facts=False)  # type: ignore[arg-type]
    desk.history.add("assistant", "Hello, this is the bakery.")
    # when it answers
    unread, response, _ = await write(desk, models, task_owner, "Tell me something.")
    # then the reply is what the guard let through, and the call is told to have the
    # LLM read it while it plays exactly when its context does not hold it
    assert response.text == said
    assert unread is rewritten


def test_a_reply_begins_what_was_written_spaces_aside() -> None:
    assert begins("Yes.  We open\nat eight. Bye.", "Yes. We open at eight.")
    assert not begins("Oui, nous ouvrons.", DEFAULT_DECLINE)
    assert begins("Anything.", "")


async def test_a_question_no_fact_answers_is_declined_as_written(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    desk = bakery_desk(models)

    direct, response, _ = await write(desk, models, task_owner, "Do you sell coffee?")

    assert direct is True and desk.inference.llm == []
    assert response.text == DEFAULT_DECLINE


ORDER = ToolSpec(
    "lookup_order",
    "Look up the status of the caller's order by its order number.",
    json.dumps({"type": "object", "properties": {"order_number": {"type": "string"}}}),
)
ORDER_QUESTION = "Where is my order? The number is 48213."


async def test_a_question_no_fact_answers_goes_to_an_endpoint_that_may_call_a_tool(
    models: LocalInference, task_owner: TaskOwner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the bakery's agent on its own LLM endpoint, offered a client's tool
    call = {"index": 0, "id": "call_srv", "type": "function"}
    events = [
        {"choices": [{"delta": {"tool_calls": [{**call, "function": {"name": "lookup_order"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}}]},
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "function": {"arguments": '{"order_number": "48213"}'}}
                        ]
                    }
                }
            ]
        },
    ]
    with scripted_sse_server(events) as server:
        monkeypatch.setattr(models, "http_llm", HttpLLM(HttpLLMSettings(base_url=server.base_url)))
        desk = bakery_desk(models)
        options = replace(fast_config().llm, backend="http", tools=(ORDER,), tool_choice="auto")
        # when the caller asks about something no fact covers
        direct, response, frames = await write(desk, models, task_owner, ORDER_QUESTION, options)
    # then the endpoint, not the written decline, answers it, and it calls the tool
    assert direct is False and response.text != DEFAULT_DECLINE
    assert [r.options.tools for r in desk.inference.llm] == [(ORDER,)]
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["lookup_order"]
    made = [f for f in frames if isinstance(f, ToolCallMade)]
    assert [(f.name, json.loads(f.arguments)) for f in made] == [
        ("lookup_order", {"order_number": "48213"})
    ]


async def test_the_embedded_model_left_to_choose_declines_what_no_fact_covers(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # (SmolLM2 does not choose tools by itself: `./dev bench tools`; left to it, the
    # question gets an answer it makes up, such as "order 3090 is still in stock")
    desk = bakery_desk(models)
    options = replace(fast_config().llm, tools=(ORDER,), tool_choice="auto")

    direct, response, _ = await write(desk, models, task_owner, ORDER_QUESTION, options)

    assert direct is True and desk.inference.llm == []
    assert response.text == DEFAULT_DECLINE


async def test_the_router_calls_the_tool_a_turn_needs_with_the_callers_values(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    desk = bakery_desk(models, route_tools=True)
    options = replace(fast_config().llm, tools=(ORDER, STOCK), tool_choice="auto")

    # one value for each argument: the call is made as is, no LLM request
    direct, response, frames = await write(desk, models, task_owner, ORDER_QUESTION, options)
    made = [f for f in frames if isinstance(f, ToolCallMade)]
    assert [(f.name, json.loads(f.arguments)) for f in made] == [
        ("lookup_order", {"order_number": "48213"})
    ]
    assert direct is True and desk.inference.llm == [] and response.text == ""
    assert response.tool_calls[0].call_id == made[0].call_id

    # several phrases could be the product: the model picks one under the grammar
    question = "Is the Shimano chain in stock?"
    _, response, frames = await write(desk, models, task_owner, question, options)
    (request,) = desk.inference.llm
    assert request.options.tool_choice == "check_stock"
    (offered,) = request.options.tools
    choices = offered.schema()["properties"]["product"]["enum"]
    assert "Shimano chain" in choices and all(c.lower() in question.lower() for c in choices)
    made = [f for f in frames if isinstance(f, ToolCallMade)]
    assert [f.name for f in made] == ["check_stock"]
    assert json.loads(made[0].arguments)["product"] in choices


async def test_the_router_leaves_a_turn_that_needs_no_tool_to_the_facts(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    desk = bakery_desk(models, route_tools=True)
    options = replace(fast_config().llm, tools=(ORDER, STOCK), tool_choice="auto")

    question = "What's the weather like today?"
    direct, response, _ = await write(desk, models, task_owner, question, options)
    assert direct is True and response.text == DEFAULT_DECLINE and desk.inference.llm == []

    # a reply to a tool's output speaks from it: it is offered no tool
    desk.history.add("user", ORDER_QUESTION)
    desk.history.add_call(ToolCall("call_1", "lookup_order", "{}"))
    desk.history.add_output("call_1", "Shipped on Monday.")
    _, response, _ = await write(desk, models, task_owner, None, options)
    (request,) = desk.inference.llm
    assert request.options.offered_tools == ()
    assert response.text


STOCK = ToolSpec(
    "check_stock",
    "Check whether a product is in stock in the shop.",
    json.dumps(
        {
            "type": "object",
            "properties": {"product": {"type": "string"}},
            "required": ["product"],
        }
    ),
)


def test_without_direct_answers_a_turn_is_sent_with_its_facts(models: LocalInference) -> None:
    # a persona's own LLM endpoint phrases the retrieved facts itself
    desk = bakery_desk(models, direct_answers=False)
    question = "Is the sourdough vegan?"

    sent = desk.writer.sent_form(question)
    messages = desk.writer.messages(question)

    assert sent is not None and question in sent
    assert "Our sourdough and our baguettes are vegan." in sent
    assert messages[-1] == {"role": "user", "content": sent}
    assert messages[0]["role"] == "system" and INSTRUCTIONS in messages[0]["content"]


def test_history_is_trimmed_in_steps_that_keep_the_prompt_prefix(models: LocalInference) -> None:
    # given a small history budget and a long conversation
    desk = bakery_desk(models, grounding=False, history_budget_chars=400)
    for n in range(20):
        desk.history.add("user", f"Question number {n} about the opening hours?")
        desk.history.add("assistant", f"Answer number {n}: we open at nine every day.")
    # when the prompt is built on consecutive turns
    first = desk.writer.messages("next?")
    desk.history.add("user", "One more question about parking?")
    desk.history.add("assistant", "There is parking behind the shop.")
    second = desk.writer.messages("next?")
    # then it fits the budget, starts with a user turn, and the second turn's prompt
    # extends the first one's history (same prefix) instead of sliding by one turn
    assert sum(len(m["content"]) for m in first[1:-1]) <= 400
    assert first[1]["role"] == "user"
    assert second[: len(first) - 1] == first[:-1]


async def test_an_agent_without_facts_repeats_itself_and_does_not_guess_about_the_business(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given an agent that knows nothing of its business, after its greeting
    desk = bakery_desk(models, turn_acts=True, facts=False)
    desk.history.add("assistant", "Hi! How can I help you today?")

    # asked to say it again: its last words, as written
    direct, response, _ = await write(desk, models, task_owner, "Sorry, could you say that again?")
    assert direct is True and desk.inference.llm == []
    assert response.text == "Sure. Hi! How can I help you today?"

    # asked about the business: it says it does not know, without the LLM
    direct, response, _ = await write(desk, models, task_owner, "How much are the cupcakes?")
    assert direct is True and response.text == DEFAULT_DECLINE and desk.inference.llm == []

    # anything else is the LLM's, its reply kept to three sentences and off languages
    direct, response, _ = await write(desk, models, task_owner, "Tell me about the moon.")
    assert direct is False and len(desk.inference.llm) == 1
    assert response.text


async def test_an_agent_that_declines_general_questions_says_so_without_the_llm(
    models: LocalInference, task_owner: TaskOwner
) -> None:
    # given the default persona's setting: general knowledge is not the model's
    desk = bakery_desk(models, turn_acts=True, facts=False, general_questions=False)
    desk.history.add("assistant", "Hi! How can I help you today?")

    # a general-knowledge question gets the line, as written
    direct, response, _ = await write(desk, models, task_owner, "Who painted the Sistine Chapel?")
    assert direct is True and desk.inference.llm == []
    assert response.text == NO_GENERAL

    # advice is still the LLM's
    direct, response, _ = await write(desk, models, task_owner, "How do you make pancakes?")
    assert direct is False and len(desk.inference.llm) == 1
    assert response.text

    # and with the setting on, so is general knowledge
    answers = bakery_desk(models, turn_acts=True, facts=False, general_questions=True)
    answers.history.add("assistant", "Hi! How can I help you today?")
    _, said, _ = await write(answers, models, task_owner, "Who painted the Sistine Chapel?")
    assert len(answers.inference.llm) == 1 and said.text and said.text != NO_GENERAL
