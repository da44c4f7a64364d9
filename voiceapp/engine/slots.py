"""Which of a call's replies is where: `ReplySlots`.

A call has at most three replies in hand at once, each in its own slot:

- *speculative*: written on a pause, held back until the turn ends (committed)
  or the caller goes on (cancelled);
- *active*: announced, its frames going out (an answer, a greeting, a manual
  `response.create`); one at a time;
- *paused*: the active reply while a barge-in onset holds its audio, until the
  speech is confirmed (the reply is cancelled) or turns out a cough (it plays on).

The call decides when a reply moves; the slots only say where each one is,
so that no two places in the call keep their own idea of it.
"""

from __future__ import annotations

from .response import Response


class ReplySlots:
    def __init__(self) -> None:
        self.speculative: Response | None = None
        self.active: Response | None = None
        self.paused: Response | None = None

    @property
    def idle(self) -> bool:
        """No reply is being written, held or played."""
        return self.active is None and self.speculative is None

    @property
    def speaking(self) -> bool:
        """The active reply's audio has started going out."""
        r = self.active
        return r is not None and r.active and r.first_sent_at is not None

    def speculate(self, response: Response) -> None:
        self.speculative = response

    def take_speculative(self) -> Response | None:
        """The speculative reply, which leaves its slot (the turn ended or went on)."""
        response, self.speculative = self.speculative, None
        return response

    def activate(self, response: Response | None) -> None:
        self.active = response

    def hold(self, response: Response) -> None:
        self.paused = response

    def take_paused(self) -> Response | None:
        response, self.paused = self.paused, None
        return response

    def leave(self, response: Response, *, speculative: bool = False) -> None:
        """`response` ended: it leaves the active slot (and the speculative one when
        asked: a speculation that failed). A speculative reply that merely finished
        writing keeps its slot until the turn ends and commits it."""
        if self.active is response:
            self.active = None
        if speculative and self.speculative is response:
            self.speculative = None

    def in_hand(self) -> tuple[Response, ...]:
        """The speculative and active replies, for a call that closes."""
        return tuple(r for r in (self.speculative, self.active) if r is not None)
