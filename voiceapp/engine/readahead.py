"""Read-ahead: while the caller listens, the models read what their next turn needs.

The call decides *when* (before the first turn, once a reply is synthesized,
once a reply goes into the history); `ReadAhead` knows *what* is read:

- The end-of-turn scorer reads the agent's last reply. Every score of the next
  turn is made after that reply, and the scorer keeps the KV cache of what it
  read last: read while the reply plays, it costs nothing at the caller's first
  pause, where on a CPU it took 300-700 ms of a 1-thread pass (50-60 tokens)
  and held the end of turn back by as much; the caller's own words take ~30 ms.
- The call's LLM context reads the prompt the next request will send (one
  token generated, dropped): the opening prompt of a call without a greeting
  (300-700 ms of first token on a 2-core CPU otherwise, against 100-200 ms for
  later turns), a history just trimmed (trimming changes the prompt's prefix:
  about 1 s to read again for a 2000-character history), and a reply that never
  went through the LLM (a fact spoken as written, a greeting) or that the reply
  guard rewrote (a decline in place of what the LLM wrote: read on the next turn's
  path, its 10-25 tokens cost 100-300 ms of first token).

Only the embedded LLM reads ahead (the opening prompt, a trimmed history): a
persona's own endpoint would bill the tenant for every read. A read's tokens are
engine overhead, in no response's usage (docs/BILLING.md). Every read is a task of the call's owner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .history import History
from .inference import Inference, InferenceError
from .llm import LLMOptions, Message
from .tasks import TaskOwner

log = logging.getLogger(__name__)

_CLOSING_MARKS = " .,;:!?\u2026"  # what a caption may end with that the turn may not
SCORER_READ_WAIT_S = 2.0  # a scorer's read slower than this is given up (4x a turn's score wait)


@dataclass(frozen=True, slots=True)
class ReadAheadSettings:
    """What a call reads ahead, and for which LLM (from its `CallConfig`)."""

    llm: LLMOptions = field(default_factory=LLMOptions)
    end_of_turn_model: bool = True  # the end-of-turn scorer decides turn ends (hint_source eou)
    embedded_llm: bool = True  # False: a persona's own endpoint, which bills per request
    history_budget_chars: int = 2000
    direct_answers: bool = True  # facts that answer a turn are spoken as written, not by the LLM
    words_so_far: bool = True  # the LLM reads the caller's words as the captions bring them


class ReadAhead:
    """Has a call's models read, off the turn's path, what its next turn will need.

    `prompt(words)` gives the prompt the next request would send with the caller's
    `words` (None: no new caller words): system, examples, the history as sent;
    `history` is the call's, which a read-ahead may trim. `settings` may be
    replaced at any time (the call's `update_config`); each read uses those in
    force when it starts.
    """

    def __init__(
        self,
        settings: ReadAheadSettings,
        inference: Inference,
        history: History,
        prompt: Callable[[str | None], list[Message]],
        tasks: TaskOwner,
        *,
        call_id: str,
    ) -> None:
        self.settings = settings
        self._inference = inference
        self._history = history
        self._prompt = prompt
        self._tasks = tasks
        self._call_id = call_id
        self._llm_read: asyncio.Task[None] | None = None
        self._scored_reply: str | None = None  # the reply `next_turn` last had the scorer read

    @property
    def llm_read(self) -> asyncio.Task[None] | None:
        """The LLM's latest read (running or ended), or None if it was never asked."""
        return self._llm_read

    async def wait_llm(self) -> None:
        """Return once the LLM's read in progress, if any, has ended.

        A request of the call waits for it rather than cancel it: the read holds
        work the request needs (the prompt's prefix, in the call's LLM context).
        """
        if self._llm_read is not None and not self._llm_read.done():
            await asyncio.wait({self._llm_read})

    def opening(self) -> None:
        """Read the call's opening prompt before the caller speaks.

        The scorer reads it with no reply before it; the LLM only when it is the
        embedded one.
        """
        self._read_by_scorer("")
        if self.settings.embedded_llm:
            self._read_by_llm(self._prompt(None))

    def words_so_far(self, text: str) -> None:
        """The caller is still talking and a caption read `text` so far: the LLM
        reads the prompt with those words as the caller's message, left open.

        Only the embedded LLM, and only with no read in progress (the next caption
        comes soon; a read is not cut off for it). A caption's closing mark is not
        read: the turn's own transcript often ends differently.
        """
        settings = self.settings
        words = text.strip().rstrip(_CLOSING_MARKS)
        if not (settings.words_so_far and settings.embedded_llm and words):
            return
        if self._llm_read is not None and not self._llm_read.done():
            return
        self._read_by_llm(self._prompt(words), open_turn=True)

    def next_turn(self, reply: str, *, direct: bool) -> bool:
        """While `reply` plays, read what the caller's next turn needs; True if it trimmed.

        The scorer reads the reply. A history near its budget is trimmed now, with a
        quarter of the budget to spare, rather than when the next turn no longer
        fits; the LLM then reads the trimmed prompt with the reply. It also reads it
        when the reply is `direct` (words the LLM's context does not hold: a fact
        spoken as written, a greeting, a reply the guard rewrote) and the call
        answers with facts as written: without that, the next turn would read those
        words first. An LLM read started before is cancelled. Only the
        embedded LLM reads; the history is trimmed either way.
        """
        self._scored_reply = reply
        self._read_by_scorer(reply)
        settings = self.settings
        budget = settings.history_budget_chars
        trimmed = self._history.trim(budget, headroom_chars=budget // 4, pending_chars=len(reply))
        if settings.embedded_llm and (trimmed or (direct and settings.direct_answers)):
            self._read_by_llm([*self._prompt(None), {"role": "assistant", "content": reply}])
        return trimmed

    def reply_kept(self, reply: str) -> None:
        """`reply` went into the history: the scorer reads it unless `next_turn` had it read.

        A reply cut short, or one that ended before `next_turn`, differs from what
        the scorer read.
        """
        if reply != self._scored_reply:
            self._read_by_scorer(reply)

    def _read_by_scorer(self, reply: str) -> None:
        """Have the end-of-turn scorer read `reply` with no caller words after it."""
        if not self.settings.end_of_turn_model:
            return

        async def read() -> None:
            try:
                await asyncio.wait_for(self._inference.end_of_turn("", reply), SCORER_READ_WAIT_S)
            except (InferenceError, TimeoutError) as exc:
                log.info("end-of-turn warm-up of %s failed: %s", self._call_id, exc or "timeout")

        self._tasks.spawn(read())

    def _read_by_llm(self, messages: list[Message], *, open_turn: bool = False) -> None:
        """Have the call's LLM context read `messages` (one token generated, dropped;
        `open_turn`: the last message left open, nothing generated)."""
        options = replace(
            self.settings.llm, max_tokens=1, session=self._call_id, open_turn=open_turn
        )

        async def read() -> None:
            stream = self._inference.generate(messages, options)
            try:
                async for _ in stream:
                    pass
            except InferenceError as exc:
                log.info("prefix warm-up of %s failed: %s", self._call_id, exc)
            finally:
                await stream.aclose()

        if self._llm_read is not None and not self._llm_read.done():
            self._llm_read.cancel()
        self._llm_read = self._tasks.spawn(read())
