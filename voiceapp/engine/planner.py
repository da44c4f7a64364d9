"""What a turn gets before any words are written: a call, words as written, or the LLM.

`ReplyPlanner.decide` is asked once per reply, by the writer, and tries in order:

1. the rules for the persona's built-in actions (intents.py): a take_message,
   end_call, transfer_call or press_keys they make, or a line they say;
2. for the embedded model, the tool router (router.py): a call made at once
   when each argument has one value, or the LLM asked for that one call with
   its arguments held to the caller's words; a turn with no route is offered
   no tool;
3. a fact spoken as written, or the decline (prompt.py `Turn.direct`);
4. for the embedded model, what acts.py tells: a request to repeat (the
   agent's last words again), a question about live events (it cannot check
   them), whether it is a person (it says it is a virtual assistant), whether it hears
   the caller (it does), how it is (well), thanks and goodbyes (answered in
   kind), a rude turn (an apology and an offer of help), for a persona that
   declines them, general-knowledge questions (it cannot help with those), and,
   for a persona with no facts, a question about the business (the decline);
5. else the LLM, with the options the steps above left.

A reply that must call a tool (a named or `required` choice, or the router's)
is the LLM's to write even where a fact answers. One that may call a tool is
too, where the facts would only decline, when an endpoint that chooses tools
writes it. Actions the rules take are not such a tool.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from . import intents
from .acts import Act, TurnActs
from .history import History
from .llm import LLMOptions
from .prompt import PromptBuilder, Turn
from .router import Route, ToolRouter
from .tools import ToolCall, is_call, new_call_id

if TYPE_CHECKING:
    from .writer import WriterSettings

CALLER_TURNS = 3  # the caller's turns whose words a call's arguments may take
CANNOT_CHECK = "I'm sorry, I can't check that from here."
CALM = "I'm sorry this has been frustrating. How can I help?"
NOT_A_PERSON = "I'm a virtual assistant, not a person. How can I help?"
HEARD = "Yes, I can hear you. How can I help?"
WELL = "I'm doing well, thank you for asking. How can I help you today?"
NO_GENERAL = (
    "I'm sorry, I can't help with general questions on this line. "
    "Is there anything else I can help with?"
)
WELCOME = "You're welcome. Is there anything else I can help with?"
GOODBYE = "Goodbye, and thank you for calling."
REPEATING = "Sure. "  # before the agent's last words, said again


@dataclass(frozen=True, slots=True)
class Decision:
    """A call to make, or words to say as written, or (both None) the LLM's reply
    with `options`."""

    options: LLMOptions
    call: ToolCall | None = None
    say: str | None = None
    # `say` is a line of the rules (a decline, a welcome), not a fact: the embedded
    # LLM is not shown it (nor the turn it answered) in later prompts
    aside: bool = False


class ReplyPlanner:
    """Decides, for each reply of one call, what it is (see the module)."""

    def __init__(
        self,
        history: History,
        *,
        router: Callable[[], ToolRouter | None],
        acts: Callable[[], TurnActs | None],
    ) -> None:
        self._history = history
        self._router = router  # the process's tool router, loaded on first use
        self._acts = acts  # the process's turn classifier, likewise

    async def decide(
        self,
        settings: WriterSettings,
        prompt: PromptBuilder,
        turn: Turn | None,
        user_text: str | None,
        options: LLMOptions,
        instructions: str | None,
    ) -> Decision:
        """The decision for a reply to the history (and `user_text`, a turn not in
        it yet, read against the facts as `turn`), asked with `options`."""
        planned = (
            self._plan(settings, user_text, options, prompt.instructions)
            if instructions is None
            else None
        )
        if planned is not None and planned.call is not None:
            return Decision(options, call=planned.call)
        if planned is None and settings.route_tools and options.backend == "local":
            options, call = await self._route(settings, options, user_text)
            if call is not None:
                return Decision(options, call=call)
        must_call = options.tool_choice != "auto" and bool(options.offered_tools)
        if planned is not None and not must_call:
            return Decision(options, say=planned.say, aside=True)
        if instructions is not None or must_call:
            return Decision(options)
        may_call = options.backend == "http" and any(
            t not in settings.rule_actions for t in options.offered_tools
        )
        say = self._direct_answer(prompt, turn, may_call=may_call)
        aside = say == settings.decline
        if say is None and settings.turn_acts:
            say = await self._act(settings, prompt, user_text)
            aside = say is not None
        return Decision(options, say=say, aside=aside)

    # ----- tools -------------------------------------------------------------

    def _plan(
        self, settings: WriterSettings, user_text: str | None, options: LLMOptions, goal: str
    ) -> intents.Plan | None:
        """What the rules make of the caller's last words, for the actions offered
        (`goal`: what the call is for, the persona's instructions)."""
        offered = set(options.offered_tools)
        actions = frozenset(a.name for a in settings.rule_actions if a in offered)
        if not actions:
            return None
        text = user_text if user_text is not None else self._last_user_text()
        if text is None:
            return None
        return intents.plan(text, self._history.messages, actions, goal)

    async def _route(
        self, settings: WriterSettings, options: LLMOptions, user_text: str | None
    ) -> tuple[LLMOptions, ToolCall | None]:
        """The embedded model's tool choice, made by the router: `options` offering
        only the tool the turn needs (its arguments held to the caller's words), or
        none; or the call itself, when each argument has one value to take."""
        words = replace(options, tool_choice="none")
        ruled = {a.name for a in settings.rule_actions} & intents.RULED
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

    # ----- words as written --------------------------------------------------

    def _direct_answer(
        self, prompt: PromptBuilder, turn: Turn | None, *, may_call: bool
    ) -> str | None:
        """The fact to speak as written for the caller's last words (`turn`, or the
        history's last message), if one answers them; not the decline, when the
        reply `may_call` a tool that could serve what no fact covers."""
        if turn is None:
            text = self._last_user_text()
            if text is None:
                return None
            turn = prompt.turn(text)
        if turn.declined and may_call:
            return None
        return turn.direct

    async def _act(
        self, settings: WriterSettings, prompt: PromptBuilder, user_text: str | None
    ) -> str | None:
        """What the agent says, as written, to a request to repeat itself, or, knowing
        nothing of the business, to a question about it (acts.py); None: the LLM's."""
        text = user_text if user_text is not None else self._last_user_text()
        if not text or not text.strip():
            return None
        acts = await asyncio.to_thread(self._acts)
        if acts is None:
            return None
        act = await asyncio.to_thread(
            partial(acts.classify, general=not settings.general_questions), text
        )
        if act is Act.REPEAT:
            said = self._last_said(before=user_text is None)
            while said and said.startswith(REPEATING):  # asked again: the words themselves
                said = said[len(REPEATING) :].strip()
            return f"{REPEATING}{said}" if said else "Of course. How can I help?"
        if act is Act.BUSINESS and not prompt.grounded:
            return settings.decline
        if act is Act.LIVE:
            return CANNOT_CHECK
        if act is Act.IDENTITY:
            return NOT_A_PERSON
        if act is Act.LINE:
            return HEARD
        if act is Act.WELLBEING:
            return WELL
        if act is Act.THANKS:
            return WELCOME
        if act is Act.GOODBYE:
            return GOODBYE
        if act is Act.RUDE:
            return CALM
        if act is Act.GENERAL:
            return NO_GENERAL
        return None

    def _last_said(self, *, before: bool) -> str | None:
        """The agent's last words (before the caller's last turn, when it is in the
        history already)."""
        messages = self._history.messages[:-1] if before else self._history.messages
        for message in reversed(messages):
            if message["role"] == "assistant" and not is_call(message) and message["content"]:
                return message["content"].strip()
        return None

    def _last_user_text(self) -> str | None:
        last = self._history.messages[-1] if self._history.messages else None
        return last["content"] if last is not None and last["role"] == "user" else None
