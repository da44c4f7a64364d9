"""What the agent says to a turn: the reply's words, from the prompt to the speaker.

The call decides *when* a reply is written and what becomes of it; the writer
knows *what* it says. `ReplyWriter.write` builds the prompt (`PromptBuilder`
over the history as sent), speaks a fact as written when one answers the
caller's words (a *direct answer*: no LLM), and otherwise streams the LLM's
tokens, cuts them into clauses (`ClauseChunker`) and passes each through the
reply guard (`guard.py`) into the reply's `Speech`. The guard stops a reply
that states a number its prompt does not hold, turns to another language or
runs on; what was said before that stands.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

from . import intents
from .chunker import ChunkerSettings, ClauseChunker
from .frames import LLMToken
from .guard import Action, GuardSettings, ReplyGuard, numbers_in
from .history import History
from .inference import Inference, TokenStream
from .llm import LLMOptions, Message, PromptUsage
from .prompt import PromptBuilder, Turn
from .response import Response
from .router import Route, ToolRouter, shared_router
from .speaker import Speech
from .tools import ToolCall, ToolSpec, is_call, new_call_id

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WriterSettings:
    """How a call's replies are written (from its `CallConfig`)."""

    chunker: ChunkerSettings
    history_budget_chars: int  # what the LLM is sent of the conversation
    grounding: bool  # the persona's facts bind it: numbers checked, replies capped
    max_sentences: int  # the cap on a grounded reply
    language: str  # replies in another language are not spoken (grounded only)
    decline: str  # what the agent says when it will not answer
    sequential: bool = False  # the baseline: the whole reply is written, then spoken
    # The persona's actions that rules take for the small embedded model (intents.py);
    # empty with a persona's own LLM, which chooses them itself.
    rule_actions: tuple[ToolSpec, ...] = ()
    # The embedded model's tool choice is the router's (router.py): which tool a turn
    # needs, and the caller's words each argument may take. Off with a persona's own
    # LLM, which chooses itself.
    route_tools: bool = False


class ReplyWriter:
    """Writes a call's replies into their `Speech`; `prompt` and `settings` follow
    the call's settings (`VoiceCall.update_config`)."""

    def __init__(
        self,
        settings: WriterSettings,
        prompt: PromptBuilder,
        inference: Inference,
        history: History,
        *,
        before_llm: Callable[[], Awaitable[None]],
        session: str,
        router: Callable[[], ToolRouter | None] = shared_router,
    ) -> None:
        self.settings = settings
        self.prompt = prompt
        self._inference = inference
        self._history = history
        # A read ahead still reading the prompt does work a request needs: the
        # request waits for it rather than throwing it (and its context) away.
        self._before_llm = before_llm
        self._session = session  # the LLM's cache key: one conversation, one context
        self._router = router  # the process's tool router, loaded on first use

    def messages(self, user_text: str | None, instructions: str | None = None) -> list[Message]:
        """The prompt: system, worked examples, history as sent, then `user_text` if given."""
        turn = None if user_text is None else self.prompt.turn(user_text)
        return self._messages(turn, instructions)

    def _messages(self, turn: Turn | None, instructions: str | None) -> list[Message]:
        history = self._history.for_llm(self.settings.history_budget_chars)
        if turn is not None:
            history.append({"role": "user", "content": turn.content})
        return self.prompt.messages(history, instructions)

    def sent_form(self, user_text: str) -> str | None:
        """What later prompts carry of the caller's words: their text with its facts,
        or None for their plain words (a turn answered as written never reached the
        LLM, and plain words cost fewer tokens than facts)."""
        turn = self.prompt.turn(user_text)
        return turn.content if turn.direct is None else None

    async def write(
        self,
        response: Response,
        speech: Speech,
        options: LLMOptions,
        instructions: str | None,
        user_text: str | None = None,
    ) -> bool:
        """Write the reply to the history (and `user_text`, a turn not in it yet) into
        `speech`, which the caller ends. True: it was a direct answer. Raises
        `InferenceError` when the LLM fails; what was said by then stands."""
        cfg = self.settings
        # the caller's words are read against the facts once, for the prompt and the answer
        turn = None if user_text is None else self.prompt.turn(user_text)
        messages = self._messages(turn, instructions)
        chunker = ClauseChunker(cfg.chunker)
        planned = self._plan(user_text, options) if instructions is None else None
        if planned is not None and planned.call is not None:
            response.trace.mark("llm_start")
            response.call(planned.call)  # an action by the rules: no LLM, no words
            return True
        if planned is None and cfg.route_tools and options.backend == "local":
            options, call = await self._route(options, user_text)
            if call is not None:
                response.trace.mark("llm_start")
                response.call(call)  # every argument had one value: no LLM
                return True
        # A reply that must call a tool is the LLM's to write, even where a fact answers
        # (the router's choice for the embedded model is such a reply). One that may
        # call a tool is too, where the facts would only decline, when an endpoint
        # that chooses tools writes it. Actions the rules take, as take_message after
        # the decline, are not such a tool.
        must_call = options.tool_choice != "auto" and bool(options.offered_tools)
        may_call = options.backend == "http" and any(
            t not in cfg.rule_actions for t in options.offered_tools
        )
        if planned is not None and not must_call:
            direct = planned.say
        else:
            direct = (
                self._direct_answer(turn, may_call=may_call)
                if instructions is None and not must_call
                else None
            )
        guard = self._guard(messages, extra=direct or "")
        trace = response.trace
        trace.mark("llm_start")
        stream: TokenStream | None = None
        tokens = 0
        raw = ""
        stopped = False
        try:
            source: AsyncIterator[str | ToolCall]
            if direct is not None:
                source = _once(direct)
            else:
                await self._before_llm()
                stream = self._inference.generate(messages, replace(options, session=self._session))
                source = stream
            async for delta in source:
                if stream is not None:
                    if tokens == 0:
                        trace.mark("llm_first_token")
                        trace.llm_queue_ms = stream.queue_ms
                    tokens += 1
                    # kept current: a reply cancelled mid-stream reports what it cost
                    response.usage = _usage(stream.usage, tokens)
                if isinstance(delta, ToolCall):
                    response.call(delta)
                    continue
                raw += delta
                if cfg.sequential:
                    continue
                for clause in chunker.push(delta):
                    if not self._pass_clause(response, guard, clause, speech):
                        stopped = True
                        break
                if stopped:
                    break
        finally:
            if stream is not None:
                await stream.aclose()
        # A direct answer never reached the LLM: no tokens either way.
        response.usage = _usage(stream.usage if stream is not None else PromptUsage(), tokens)
        if not stopped:
            for clause in [raw.strip()] if cfg.sequential else chunker.flush():
                if clause and not self._pass_clause(response, guard, clause, speech):
                    break
        if guard.reason:
            log.info("response %s cut by the reply guard: %s", response.id, guard.reason)
        return direct is not None

    async def _route(
        self, options: LLMOptions, user_text: str | None
    ) -> tuple[LLMOptions, ToolCall | None]:
        """The embedded model's tool choice, made by the router: `options` offering
        only the tool the turn needs (its arguments held to the caller's words), or
        none; or the call itself, when each argument has one value to take."""
        words = replace(options, tool_choice="none")
        ruled = {a.name for a in self.settings.rule_actions} & intents.RULED
        tools = tuple(t for t in options.offered_tools if t.name not in ruled)
        texts = self._caller_texts(user_text)
        if not tools or not texts:  # a reply to a tool's output speaks; it calls nothing
            return words, None
        router = await asyncio.to_thread(self._router)
        if router is None:
            return options, None  # no router installed: the model's own choice, as before
        choice = options.tool_choice
        route: Route | None
        if choice == "auto":
            route = await asyncio.to_thread(router.route, texts, tools)
        elif choice == "required":
            route = await asyncio.to_thread(router.best, texts, tools)
        else:
            route = router.arguments(texts, tools[0])
        if route is None:
            return words, None
        spec = route.spec
        if route.settled:
            arguments = {a.name: a.values[0] for a in route.arguments if a.values}
            return options, ToolCall(new_call_id(), spec.name, json.dumps(arguments))
        return replace(options, tools=(spec,), tool_choice=spec.name), None

    def _caller_texts(self, user_text: str | None) -> list[str]:
        """The caller's last few turns, oldest first, or none when the conversation's
        last word is not the caller's (a tool's output, the agent's own words)."""
        messages = list(self._history.messages)
        if user_text is not None:
            messages.append({"role": "user", "content": user_text})
        texts: list[str] = []
        for message in reversed(messages):
            if message["role"] != "user" or is_call(message):
                if not texts:
                    return []
                if message["role"] == "tool" or is_call(message):
                    break  # an earlier request was served: its words are not this one's
                continue
            texts.insert(0, message["content"])
            if len(texts) == CALLER_TURNS:
                break
        return texts

    def _plan(self, user_text: str | None, options: LLMOptions) -> intents.Plan | None:
        """What the rules make of the caller's last words, for the actions offered."""
        offered = set(options.offered_tools)
        actions = frozenset(a.name for a in self.settings.rule_actions if a in offered)
        if not actions:
            return None
        text = user_text if user_text is not None else self._last_user_text()
        if text is None:
            return None
        return intents.plan(text, self._history.messages, actions)

    def _last_user_text(self) -> str | None:
        last = self._history.messages[-1] if self._history.messages else None
        return last["content"] if last is not None and last["role"] == "user" else None

    def _direct_answer(self, turn: Turn | None, *, may_call: bool) -> str | None:
        """The fact to speak as written for the caller's last words (`turn`, or the
        history's last message), if one answers them; not the decline, when the
        reply `may_call` a tool that could serve what no fact covers."""
        if turn is None:
            last = self._history.messages[-1] if self._history.messages else None
            if last is None or last["role"] != "user":
                return None
            turn = self.prompt.turn(last["content"])
        if turn.declined and may_call:
            return None
        return turn.direct

    def _guard(self, messages: list[Message], *, extra: str = "") -> ReplyGuard:
        """The reply's guard: numbers it may state are those its prompt (or `extra`,
        the facts it speaks as written) holds."""
        cfg = self.settings
        check = cfg.grounding and self.prompt.grounded
        settings = GuardSettings(
            # The cap is for a business's agent (a persona with knowledge); a persona
            # without facts may be set up for long replies (a story, a recipe).
            max_sentences=cfg.max_sentences if check else 1000,
            language=cfg.language if cfg.grounding else "",
            check_numbers=check,
            decline=cfg.decline,
        )
        prompt = " ".join([*(m["content"] for m in messages), extra])
        allowed = numbers_in(prompt) if check else set()
        return ReplyGuard(settings, allowed)

    def _pass_clause(
        self, response: Response, guard: ReplyGuard, clause: str, speech: Speech
    ) -> bool:
        """Send a clause the guard lets through to TTS and the transcript; False: stop."""
        verdict = guard.check(clause)
        text = verdict.text
        if verdict.reason == "invented_number" and response.text:
            text = ""  # what was said stands; the made-up part is dropped
        elif verdict.reason == "language" and not response.text:
            text = self.settings.decline  # never silence: say so in the call's language
        if text:
            response.trace.mark("first_clause")
            delta = f" {text}" if response.text else text
            response.text += delta
            response.emit(LLMToken(response.id, delta))
            speech.say(text)
        return verdict.action is Action.SPEAK


CALLER_TURNS = 3  # the caller's turns whose words a call's arguments may take


def _usage(prompt: PromptUsage, output_tokens: int) -> dict[str, int]:
    """A reply's token usage: the prompt its LLM request read, and the tokens it wrote."""
    return {
        "input_tokens": prompt.input_tokens,
        "cached_tokens": prompt.cached_tokens,
        "output_tokens": output_tokens,
        "total_tokens": prompt.input_tokens + output_tokens,
    }


async def _once(text: str) -> AsyncIterator[str | ToolCall]:
    yield text
