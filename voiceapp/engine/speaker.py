"""Reply speech: a response's clauses synthesized in order, released paced against real time.

The call decides *when* a reply is spoken, paused, resumed or cut off; the
speaker knows *how*. `ReplySpeaker.start(response)` gives a `Speech`: clauses
said into it go to TTS one at a time, in order, while the LLM keeps writing;
their audio is resampled to the call's output rate (the reply's first sound
without the voice's leading silence) and released as `TTSAudio` in `chunk_ms`
pieces, at most `lead_ms` ahead of real time, so that speech over the reply can
stop it with little already sent. A clause with enough of the reply's audio
ahead of it is made in the background (`background_ahead_ms`), so that under
load the cores go to other callers' first words first. Nothing is released before
the response is committed, nor while it is paused (`pause`), and a resumed
reply is paced on from what the caller has heard (`resume`).

A speech's two tasks (synthesis and playout) belong to the call's owner and to
the response's, so cancelling the response stops both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .audio import StreamResampler, float_to_pcm16, trim_leading_quiet
from .frames import Frame, TextClause, TTSAudio
from .inference import Inference, InferenceError
from .response import Response
from .tasks import TaskOwner
from .tts import VoiceSpec

_NOTHING = np.zeros(0, dtype=np.float32)


class ClauseAudio:
    """One clause's audio on its way out, as the voice makes it: in pieces, which
    may be cut mid-word (tts.py makes a clause in windows).

    The pieces are resampled as one signal, the quiet before the first sound is cut
    when `trim` (the caller is waiting for it), and what is handed on is whole
    multiples of `step` samples, so each released piece is `step` long but a
    clause's last."""

    def __init__(self, in_rate: int, out_rate: int, step: int, *, trim: bool) -> None:
        self.rate = out_rate
        self.step = step
        self.total = 0  # samples handed on
        self._resampler = StreamResampler(in_rate, out_rate)
        self._trim = trim
        self._carry = _NOTHING

    def push(self, samples: np.ndarray) -> np.ndarray:
        """What of the clause so far can go out now."""
        out = self._resampler.process(samples)
        if self._trim and len(out):
            out = trim_leading_quiet(out, self.rate)
            self._trim = False
        if len(self._carry):
            out = np.concatenate([self._carry, out])
        cut = len(out) // self.step * self.step
        self._carry = out[cut:]
        self.total += cut
        return out[:cut]

    def end(self) -> np.ndarray:
        """The rest of the clause, once the voice has made all of it."""
        tail = self._resampler.process(_NOTHING, last=True)
        if self._trim and len(tail):
            tail = trim_leading_quiet(tail, self.rate)
        out = np.concatenate([self._carry, tail]) if len(tail) else self._carry
        self._carry = _NOTHING
        self.total += len(out)
        return out


@dataclass(frozen=True, slots=True)
class SpeakerSettings:
    """How a call's replies sound and are released (from its `CallConfig`)."""

    voice: VoiceSpec
    sample_rate: int = 24000  # the call's output rate
    chunk_ms: int = 40  # the size of each released piece
    lead_ms: int = 300  # how far ahead of real time audio may be released
    sequential: bool = False  # the baseline: a clause's audio goes out once all of it is made
    # A clause with at least this much of the reply's audio made ahead of it, not yet
    # heard, is made in the background (a lower priority, inference.synthesize): the
    # caller hears that audio meanwhile. 0: every clause as urgently as the first.
    background_ahead_ms: int = 2000


class Speech:
    """One response's clauses on their way out: `say` each, then `end`.

    Made by `ReplySpeaker.start`, which has already started its synthesis and
    playout.
    """

    def __init__(
        self,
        clauses: asyncio.Queue[str | None],
        synthesis: asyncio.Task[None],
        playout: asyncio.Task[None],
    ) -> None:
        self._clauses = clauses
        self._synthesis = synthesis
        self._playout = playout

    def say(self, clause: str) -> None:
        """Queue a clause; it is synthesized after those said before it."""
        self._clauses.put_nowait(clause)

    def end(self) -> None:
        """No more clauses: synthesis ends after the last one, playout after its audio."""
        self._clauses.put_nowait(None)

    async def synthesized(self) -> None:
        """Return once every clause is synthesized (its audio may still be playing)."""
        await self._synthesis

    async def finished(self) -> None:
        """Return once every clause is synthesized and all its audio released."""
        await asyncio.gather(self._synthesis, self._playout)


class ReplySpeaker:
    """Synthesizes a call's replies and releases their audio, paced against real time.

    `out` receives the `TTSAudio` frames; `tasks` is the call's owner, which keeps
    every task a speech starts; `fail` ends a response whose synthesis failed (the
    call's own bookkeeping goes with it). `settings` may be replaced between
    replies: a reply's voice, rate and piece size are those it started with, the
    lead is read as each piece goes.
    """

    def __init__(
        self,
        settings: SpeakerSettings,
        inference: Inference,
        out: Callable[[Frame], None],
        tasks: TaskOwner,
        *,
        fail: Callable[[Response, InferenceError], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._inference = inference
        self._out = out
        self._tasks = tasks
        self._fail = fail
        self._clock = clock
        self.last_spoken: Response | None = None  # the latest reply whose audio began to go out

    def start(self, response: Response) -> Speech:
        """Start synthesizing and playing out `response`; say its clauses into the result."""
        clauses: asyncio.Queue[str | None] = asyncio.Queue()
        synthesis = self._tasks.spawn(self._synthesize(response, clauses))
        response.tasks.add(synthesis)
        playout = self._tasks.spawn(self._playout(response))
        response.tasks.add(playout)
        return Speech(clauses, synthesis, playout)

    def pause(self, response: Response) -> None:
        """Stop releasing the reply's audio; what was sent plays out at the client."""
        response.playing.clear()

    def resume(self, response: Response) -> None:
        """Release the reply again from where it paused, paced as if it had not stopped."""
        if response.first_sent_at is not None:
            # The client played what it had during the pause: pace on from what it heard.
            response.first_sent_at = self._clock() - response.played_ms() / 1000.0
        response.playing.set()

    async def _synthesize(self, response: Response, clauses: asyncio.Queue[str | None]) -> None:
        """Synthesize clauses in order; audio goes to the response's queue at the output rate."""
        settings = self.settings
        trace = response.trace
        step = max(1, settings.chunk_ms * settings.sample_rate // 1000)
        index = 0
        try:
            while (clause := await clauses.get()) is not None:
                response.emit(TextClause(response.id, clause, index))
                if not response.speak:
                    response.clauses.append((clause, 0))
                    index += 1
                    continue
                trace.mark("tts_start")
                made = sum(samples for _, samples in response.clauses)  # at the output rate
                ahead_ms = 1000.0 * made / settings.sample_rate - response.played_ms()
                background = 0 < settings.background_ahead_ms <= ahead_ms
                stream = self._inference.synthesize(clause, settings.voice, background=background)
                # the caller is waiting for the first clause's sound: its lead-in is cut
                audio: ClauseAudio | None = None
                whole: list[np.ndarray] = []  # the baseline releases audio once all is made
                try:
                    async for chunk in stream:
                        if audio is None:
                            audio = ClauseAudio(
                                chunk.sample_rate, settings.sample_rate, step, trim=index == 0
                            )
                        self._deliver(response, index, audio.push(chunk.samples), whole)
                    if audio is not None:
                        self._deliver(response, index, audio.end(), whole)
                finally:
                    await stream.aclose()
                if whole:
                    trace.mark("tts_first_audio")
                    response.audio.put_nowait((index, np.concatenate(whole)))
                response.clauses.append((clause, audio.total if audio else 0))
                index += 1
        except InferenceError as exc:
            self._fail(response, exc)
        finally:
            response.audio.put_nowait(None)

    def _deliver(
        self, response: Response, index: int, out: np.ndarray, whole: list[np.ndarray]
    ) -> None:
        if not len(out):
            return
        if self.settings.sequential:
            whole.append(out)
            return
        response.trace.mark("tts_first_audio")
        response.audio.put_nowait((index, out))

    async def _playout(self, response: Response) -> None:
        """Release audio in `chunk_ms` pieces, at most `lead_ms` ahead, once committed."""
        rate = self.settings.sample_rate
        step = max(1, self.settings.chunk_ms * rate // 1000)
        await response.committed.wait()
        while (item := await response.audio.get()) is not None:
            index, samples = item
            for start in range(0, len(samples), step):
                piece = samples[start : start + step]
                await self._paced(response, rate)
                if not response.active:
                    return
                if response.first_sent_at is None:
                    response.first_sent_at = self._clock()
                    self.last_spoken = response
                    response.trace.mark("first_audio_sent", response.first_sent_at)
                response.sent_samples += len(piece)
                self._out(TTSAudio(response.id, float_to_pcm16(piece), rate, index))

    async def _paced(self, response: Response, rate: int) -> None:
        """Return when the next piece may go: not paused, at most `lead_ms` ahead
        (`rate`: the one the reply's audio was made at)."""
        lead_ms = self.settings.lead_ms
        while True:
            await response.playing.wait()
            if response.first_sent_at is None:
                return
            sent_ms = 1000.0 * response.sent_samples / rate
            ahead_ms = sent_ms - 1000.0 * (self._clock() - response.first_sent_at)
            if ahead_ms <= lead_ms:
                return
            await asyncio.sleep((ahead_ms - lead_ms) / 1000.0)
            if response.playing.is_set():
                return
