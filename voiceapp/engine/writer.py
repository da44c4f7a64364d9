"""What the agent says to a turn: the reply's words, from the prompt to the speaker.

The call decides *when* a reply is written and what becomes of it; the writer
knows *what* it says. `ReplyWriter.write` builds the prompt (`PromptBuilder`
over the history as sent) and asks the planner (planner.py) what the reply is:
a tool call made without the LLM, words said as written (a fact, the decline, a
line of the rules: a *direct answer*), or the LLM's. It makes the call, or
streams the words (the LLM's tokens), cuts them into clauses (`ClauseChunker`)
and passes each through the reply guard (`guard.py`) into the reply's `Speech`.
The guard stops a reply that states a number its prompt does not hold, turns to
another language, talks of languages unasked or runs on; what was said before
that stands.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

from .acts import TurnActs, shared_acts
from .chunker import ChunkerSettings, ClauseChunker, joined_words
from .frames import LLMToken
from .guard import LANGUAGE_TALK, Action, GuardSettings, ReplyGuard, numbers_in
from .history import History
from .inference import Inference, TokenStream
from .llm import LLMOptions, Message, PromptUsage
from .planner import ReplyPlanner
from .prompt import PromptBuilder, Turn
from .response import Response
from .router import ToolRouter, shared_router
from .speaker import Speech
from .tools import ToolCall, ToolSpec

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
    # Requests to repeat, and (knowing no facts) questions about the business, are
    # answered as written (acts.py), not by the small embedded model.
    turn_acts: bool = False
    # General knowledge (sums, history, science) is the model's to answer; False:
    # with `turn_acts`, the agent says it cannot help with general questions.
    general_questions: bool = True


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
        acts: Callable[[], TurnActs | None] = shared_acts,
    ) -> None:
        self.settings = settings
        self.prompt = prompt
        self._inference = inference
        self._history = history
        # A read ahead still reading the prompt does work a request needs: the
        # request waits for it rather than throwing it (and its context) away.
        self._before_llm = before_llm
        self._session = session  # the LLM's cache key: one conversation, one context
        self._planner = ReplyPlanner(history, router=router, acts=acts)

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
        `speech`, which the caller ends. True: the LLM's context does not hold the
        reply as it goes into the history, so the call has it read while the reply
        plays: a direct answer (never written by the LLM), or a reply the guard
        rewrote (a decline in place of other words, a clause dropped mid-way). Raises
        `InferenceError` when the LLM fails; what was said by then stands."""
        cfg = self.settings
        # the caller's words are read against the facts once, for the prompt and the answer
        turn = None if user_text is None else self.prompt.turn(user_text)
        messages = self._messages(turn, instructions)
        chunker = ClauseChunker(cfg.chunker, joined_words([m["content"] for m in messages]))
        decision = await self._planner.decide(
            cfg, self.prompt, turn, user_text, options, instructions
        )
        if decision.call is not None:
            response.trace.mark("llm_start")
            response.call(decision.call)  # by the rules or the router: no LLM, no words
            return True
        options = decision.options
        direct = decision.say
        response.aside = decision.aside and options.backend == "local"
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
                trace.mark("llm_request")  # after the call's read-ahead, if it was still reading
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
        if not response.text and not response.tool_calls:
            # never silence: a reply the guard cut before its first words, or one the
            # model ended at once, is the decline
            self._pass_clause(response, guard, self.settings.decline, speech)
            response.aside = response.aside or options.backend == "local"
        if guard.reason:
            log.info("response %s cut by the reply guard: %s", response.id, guard.reason)
        rewritten = stream is not None and not begins(raw, response.text)
        return direct is not None or rewritten

    def _guard(self, messages: list[Message], *, extra: str = "") -> ReplyGuard:
        """The reply's guard: numbers it may state are those its prompt (or `extra`,
        the facts it speaks as written) holds."""
        cfg = self.settings
        check = cfg.grounding and self.prompt.grounded
        callers = [m["content"] for m in messages if m["role"] == "user"]
        settings = GuardSettings(
            # A voice reply stays short, with facts or without (max_reply_tokens bounds
            # it too); the numbers are checked where facts say which are true.
            max_sentences=cfg.max_sentences if cfg.grounding else 1000,
            language=cfg.language if cfg.grounding else "",
            check_numbers=check,
            decline=cfg.decline,
            language_talk=cfg.grounding and not any(LANGUAGE_TALK.search(c) for c in callers),
            # the model's words are checked for an echo of the caller's; words as
            # written (`extra`) are not the model's
            caller_text=(
                self.prompt.caller_words(callers[-1])
                if callers and not extra and cfg.grounding
                else ""
            ),
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


def begins(written: str, said: str) -> bool:
    """`said` (a reply as the history keeps it) is the start of what the LLM `written`,
    spaces aside: the LLM's context then holds it, and a later prompt reuses it."""
    return " ".join(written.split()).startswith(" ".join(said.split()))


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


def load_classifiers() -> None:
    """Load this process's sentence encoder, turn classifier and tool router, once.

    The classifier embeds its example sentences when it loads (1.2 s on 2 cores): done
    on the first turn that needs it, that turn waited for it. Blocking: call it in a
    thread."""
    shared_acts()
    shared_router()
