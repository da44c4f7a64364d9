"""The conversation history of a call, and what of it the LLM is sent.

`History.messages` is the conversation as it happened: a public list of
`{"role", "content"}` dicts that transports read and record. What the LLM is
sent can differ per message (a caller turn goes with the facts retrieved for
it); that text is kept with the message, so the prompt built from the history
is the same turn after turn and the LLM's KV cache of its prefix stays valid.

Past the character budget the oldest messages are dropped down to half of it
at once (not one turn per turn), and the kept part starts with a caller turn:
the prompt's prefix then stays stable for many turns. A reply that was cut
off keeps only what the caller heard of it (`heard_text`). A message added
`hidden` (a line the rules said as written, and the turn it answered) stays in
the conversation but is never sent: the small embedded model copies such lines
into its own later replies.
"""

from __future__ import annotations

from collections.abc import Iterable

from .tools import Message, ToolCall, call_message, is_call, output_message

ROLES = ("user", "assistant", "system")


class History:
    """Messages in order, with the text the LLM is sent for each one."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._sent: dict[int, str] = {}  # message index -> what the LLM is sent, when different
        self._start = 0  # first message still sent to the LLM
        self._hidden: set[int] = set()  # message indexes the LLM is never sent

    def add(self, role: str, text: str, *, sent: str | None = None, hidden: bool = False) -> None:
        """Append a message; `sent` is what the LLM gets instead of `text` (None: the
        text); a `hidden` one is never sent to it."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")
        self.messages.append({"role": role, "content": text})
        if sent is not None and sent != text:
            self._sent[len(self.messages) - 1] = sent
        if hidden:
            self._hidden.add(len(self.messages) - 1)

    def hide_last(self, role: str) -> None:
        """Never send the LLM the latest message of `role` (see `add`)."""
        for i in range(len(self.messages) - 1, self._start - 1, -1):
            if self.messages[i]["role"] == role:
                self._hidden.add(i)
                return

    def add_call(self, call: ToolCall) -> None:
        """A tool call of the assistant's (tools.py shows its message's fields)."""
        self.messages.append(call_message(call))

    def add_output(self, call_id: str, output: str) -> str | None:
        """The output of the call `call_id`; the tool's name, or None (and nothing
        added) when no call of that id is in the history."""
        name = self.call_name(call_id)
        if name is not None:
            self.messages.append(output_message(call_id, name, output))
        return name

    def call_name(self, call_id: str) -> str | None:
        """The tool that the call `call_id` of the history called, if any."""
        for message in reversed(self.messages):
            if is_call(message) and message["tool_call_id"] == call_id:
                return message["tool_name"]
        return None

    def last(self, role: str) -> str | None:
        """The content of the latest message of `role`, or None."""
        return next((m["content"] for m in reversed(self.messages) if m["role"] == role), None)

    def for_llm(self, budget_chars: int) -> list[Message]:
        """The messages as the LLM is sent them, trimmed to `budget_chars` in halves.

        While what is kept fits the budget the kept part only grows; past it, the
        oldest messages are dropped until at most half the budget remains, and
        leading replies are dropped too so the kept part starts with a caller turn.
        """
        self.trim(budget_chars)
        return [
            {**m, "content": self._sent.get(i, m["content"])}
            for i, m in enumerate(self.messages[self._start :], self._start)
            if i not in self._hidden
        ]

    def trim(self, budget_chars: int, *, headroom_chars: int = 0, pending_chars: int = 0) -> bool:
        """Drop the oldest messages to half the budget if the kept part is over
        `budget_chars - headroom_chars`; True if it dropped any.

        With headroom, a call trims after a reply, while the caller is still
        listening, rather than when the next turn no longer fits: the LLM can read
        the shortened prompt then (`ReadAhead.next_turn`), not during a
        turn. `pending_chars` counts a message about to be added (the reply).
        """
        messages = self.messages
        size = sum(len(m["content"]) for m in messages[self._start :]) + pending_chars
        if size <= budget_chars - headroom_chars:
            return False
        kept = pending_chars
        start = len(messages)
        while start > 0 and kept + len(messages[start - 1]["content"]) <= budget_chars // 2:
            start -= 1
            kept += len(messages[start]["content"])
        while start < len(messages) and messages[start]["role"] in ("assistant", "tool"):
            start += 1  # begin with a user turn (a tool's output never without its call)
        dropped = start > self._start
        self._start = max(start, self._start)
        return dropped

    def truncate_reply(self, heard: str) -> None:
        """Replace the latest reply with `heard` (what the caller heard of it)."""
        for message in reversed(self.messages):
            if message["role"] == "assistant" and not is_call(message):
                message["content"] = heard
                return

    def keep_last(self, count: int) -> None:
        """Forget all but the latest `count` messages (a bound on a long call's memory)."""
        dropped = len(self.messages) - count
        if dropped <= 0:
            return
        del self.messages[:dropped]
        self._sent = {i - dropped: text for i, text in self._sent.items() if i >= dropped}
        self._hidden = {i - dropped for i in self._hidden if i >= dropped}
        self._start = max(0, self._start - dropped)

    def __len__(self) -> int:
        return len(self.messages)


def heard_text(clauses: Iterable[tuple[str, int]], played_ms: int, sample_rate: int) -> str:
    """What a reply said in its first `played_ms`, cut at a word boundary.

    `clauses` are the reply's (text, samples at `sample_rate`) in order; within
    the clause playing when the audio stopped, its words are taken as spread
    evenly over its audio.
    """
    remaining = played_ms * sample_rate // 1000
    heard: list[str] = []
    for text, samples in clauses:
        if remaining >= samples:
            heard.append(text)
            remaining -= samples
            continue
        words = text.split()
        keep = int(len(words) * remaining / max(1, samples))
        if keep:
            heard.append(" ".join(words[:keep]))
        break
    return " ".join(heard)
