"""One response of a call: its state, its tasks and the frames it holds back.

A response made for a caller's pause starts *speculative*: its frames
(transcript, `ResponseStarted`, tokens, clauses) are held back, and its audio
waits. At the end of the turn it is committed (the held frames go out in
order and audio may play) or cancelled without a trace. A response made on
request (`create_response`, `say`) is active from the start.

States move one way only:

    SPECULATIVE -> ACTIVE | DONE | CANCELLED
    ACTIVE      -> DONE | CANCELLED

and any other move raises `IllegalTransition`. Ending a response that has
already ended (a failure or completion racing a cancel) changes nothing.
The call decides *when* a response is committed, finished, cancelled or
failed; the response knows *how*: which state follows, which frames that
releases or drops, and which of its tasks stop.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .frames import ErrorFrame, Frame, Interruption, ResponseDone, ResponseStatus, ToolCallMade
from .history import heard_text
from .inference import InferenceError
from .tasks import TaskOwner
from .tools import ToolCall
from .tracing import TurnTrace

log = logging.getLogger(__name__)


class ResponseState(enum.Enum):
    SPECULATIVE = "speculative"  # output held back until the turn ends
    ACTIVE = "active"  # announced: frames go out, audio plays
    DONE = "done"  # finished (or had nothing to answer)
    CANCELLED = "cancelled"  # cancelled, interrupted or failed


_MOVES: dict[ResponseState, frozenset[ResponseState]] = {
    ResponseState.SPECULATIVE: frozenset(
        {ResponseState.ACTIVE, ResponseState.DONE, ResponseState.CANCELLED}
    ),
    ResponseState.ACTIVE: frozenset({ResponseState.DONE, ResponseState.CANCELLED}),
    ResponseState.DONE: frozenset(),
    ResponseState.CANCELLED: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A response was asked to move to a state it cannot reach from its own."""


@dataclass(frozen=True, slots=True)
class Cancelled:
    """What an announced cancellation left: the reply as heard, and how much played."""

    heard: str
    played_ms: int


def _set(event: asyncio.Event) -> asyncio.Event:
    event.set()
    return event


@dataclass(eq=False)
class Response:
    """One reply: speculative until committed, then active until done or cancelled.

    `out` receives the frames the response releases; `sample_rate` is the rate
    of its output audio, `clock` the call's clock (for what has been played).
    """

    id: str
    item_id: str | None
    trace: TurnTrace
    out: Callable[[Frame], None]
    speculative: bool = True
    speak: bool = True  # synthesize the reply (False: text only), fixed when it starts
    sample_rate: int = 24000
    clock: Callable[[], float] = time.monotonic
    user_text: str | None = None
    text: str = ""
    committed: asyncio.Event = field(default_factory=asyncio.Event)
    audio: asyncio.Queue[tuple[int, np.ndarray] | None] = field(default_factory=asyncio.Queue)
    clauses: list[tuple[str, int]] = field(default_factory=list)  # (text, samples at out rate)
    sent_samples: int = 0
    first_sent_at: float | None = None
    tasks: TaskOwner = field(default_factory=TaskOwner)
    empty: bool = False  # the transcript was empty or rejected: nothing to answer
    usage: dict[str, int] = field(default_factory=dict)
    tool_calls: list[ToolCall] = field(default_factory=list)  # the tools the reply calls
    playing: asyncio.Event = field(default_factory=lambda: _set(asyncio.Event()))  # clear: paused
    eou_probability: float | None = None  # the end-of-turn score of its transcript
    # A line the rules said as written (a decline, "you're welcome"): kept out of what
    # the embedded LLM reads, with the turn it answered (History.add hidden)
    aside: bool = False
    # The response that was active when this one was committed: cancelled once this
    # one's transcript turns out to hold words, left playing if it was only noise.
    supersedes: Response | None = None
    _state: ResponseState = field(init=False)
    _held: list[Frame] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self._state = ResponseState.SPECULATIVE if self.speculative else ResponseState.ACTIVE
        self.tasks.name = self.id
        if not self.speculative:
            self.committed.set()

    # ----- state ---------------------------------------------------------------

    @property
    def state(self) -> ResponseState:
        return self._state

    @property
    def active(self) -> bool:
        return self._state is ResponseState.ACTIVE

    @property
    def ended(self) -> bool:
        return self._state in (ResponseState.DONE, ResponseState.CANCELLED)

    @property
    def held(self) -> tuple[Frame, ...]:
        """The frames held back while speculative, oldest first."""
        return tuple(self._held)

    def _move(self, state: ResponseState) -> ResponseState:
        """Change state if the move is legal (raises IllegalTransition); returns the old one."""
        was = self._state
        if state not in _MOVES[was]:
            raise IllegalTransition(f"response {self.id}: {was.value} -> {state.value}")
        self._state = state
        return was

    # ----- output --------------------------------------------------------------

    def emit(self, frame: Frame) -> None:
        """Send a frame: held back while speculative, dropped once ended."""
        if self._state is ResponseState.SPECULATIVE:
            self._held.append(frame)
        elif self._state is ResponseState.ACTIVE:
            self.out(frame)

    def call(self, call: ToolCall) -> None:
        """The reply calls a tool: the call is the response's output (held back while
        speculative, like its words), kept in `tool_calls` for the history."""
        self.trace.mark("tool_call")
        self.tool_calls.append(call)
        self.emit(ToolCallMade(self.id, call.call_id, call.name, call.arguments))

    def commit(self) -> None:
        """Announce a speculative response: held frames go out in order, audio may play."""
        self._move(ResponseState.ACTIVE)
        held, self._held = self._held, []
        for frame in held:
            self.out(frame)
        self.committed.set()

    def discard(self, *, report: type[Frame] | None = None) -> None:
        """End without a word (its turn held no words): nothing goes out, except the
        held frames of type `report` (the turn's `TranscriptFailed`, so a rejected
        turn is reported)."""
        self._move(ResponseState.DONE)
        held, self._held = self._held, []
        if report is not None:
            for frame in held:
                if isinstance(frame, report):
                    self.out(frame)

    def done(self, status: ResponseStatus = "completed") -> str | None:
        """Finish an active response: `ResponseDone` goes out; returns the reply's text.

        None when it had already ended (its end raced a cancel). A response that was
        never committed cannot finish (IllegalTransition).
        """
        if self.ended:
            return None
        if self._state is ResponseState.SPECULATIVE:
            raise IllegalTransition(f"response {self.id}: never committed, cannot finish")
        self._move(ResponseState.DONE)
        text = self.text.strip()
        self.out(
            ResponseDone(
                self.id, status, text, self.trace.latency(), self.usage, self.trace.timeline()
            )
        )
        return text

    def cancel(self, *, interrupted: bool = False, announce: bool = True) -> Cancelled | None:
        """Stop the response and its tasks (all but the calling one).

        An active one that is announced ends with `Interruption` (if `interrupted`)
        and a cancelled `ResponseDone` holding what the caller got: the words heard
        so far of a spoken reply, every token of a text-only one. Returns that, or
        None when nothing was announced (speculative, `announce=False`, already ended).
        """
        self.tasks.cancel()
        if self.ended:
            return None
        was = self._move(ResponseState.CANCELLED)
        self._held.clear()
        if not announce or was is not ResponseState.ACTIVE:
            return None
        played = self.played_ms()
        # Without audio the reader saw every token so far.
        heard = self.heard_text(played) if self.speak else self.text.strip()
        if interrupted:
            self.out(Interruption(self.id, heard, played))
        self.out(
            ResponseDone(
                self.id,
                "cancelled",
                heard,
                self.trace.latency(),
                self.usage,
                self.trace.timeline(),
            )
        )
        return Cancelled(heard, played)

    def fail(self, exc: InferenceError) -> bool:
        """Stop on an inference error; True when the failure went out to the client.

        An active response ends with `ErrorFrame` and a failed `ResponseDone`. A
        speculative one was never announced (its `ResponseStarted` is held back):
        it fails silently, its held frames are dropped.
        """
        log.warning("response %s failed: %s", self.id, exc)
        self.tasks.cancel()
        if self.ended:
            return False
        was = self._move(ResponseState.CANCELLED)
        self._held.clear()
        if was is not ResponseState.ACTIVE:
            return False
        self.out(ErrorFrame(exc.code, str(exc)))
        self.out(ResponseDone(self.id, "failed", self.text, self.trace.latency()))
        return True

    # ----- playback ------------------------------------------------------------

    def played_ms(self) -> int:
        """How much of the reply's audio the client has played by now."""
        if self.first_sent_at is None:
            return 0
        sent_ms = 1000.0 * self.sent_samples / self.sample_rate
        elapsed_ms = 1000.0 * (self.clock() - self.first_sent_at)
        return int(min(sent_ms, elapsed_ms))

    def heard_text(self, played_ms: int) -> str:
        """The part of the reply its first `played_ms` of audio said."""
        return heard_text(self.clauses, played_ms, self.sample_rate)
