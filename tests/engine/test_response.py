"""A response's states, held-back frames and tasks (no models: the call decides when)."""

import asyncio

import pytest

from voiceapp.engine.frames import (
    ErrorFrame,
    Frame,
    Interruption,
    LLMToken,
    ResponseDone,
    ResponseStarted,
    TranscriptFinal,
)
from voiceapp.engine.inference import InferenceError
from voiceapp.engine.response import IllegalTransition, Response, ResponseState
from voiceapp.engine.tracing import TurnTrace


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def new_response(out: list[Frame], *, speculative: bool = True, **kwargs: object) -> Response:
    clock = kwargs.pop("clock", Clock())
    return Response(
        "resp_1",
        "item_1",
        TurnTrace(clock=clock),  # type: ignore[arg-type]
        out.append,
        speculative=speculative,
        sample_rate=1000,
        clock=clock,  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


def announce(response: Response) -> None:
    response.emit(TranscriptFinal("item_1", "When do you open?", 1.0))
    response.emit(ResponseStarted(response.id))
    response.emit(LLMToken(response.id, "At nine."))


async def test_held_frames_are_released_in_order_on_commit() -> None:
    # given a speculative response that produced its transcript, start and a token
    out: list[Frame] = []
    response = new_response(out)
    announce(response)
    # then nothing went out yet and its audio may not start
    assert out == [] and len(response.held) == 3 and not response.committed.is_set()
    # when it is committed
    response.commit()
    # then the held frames go out in order, later ones go straight out, audio may start
    response.emit(LLMToken(response.id, " See you."))
    assert [type(f) for f in out] == [TranscriptFinal, ResponseStarted, LLMToken, LLMToken]
    assert response.state is ResponseState.ACTIVE and response.held == ()
    assert response.committed.is_set()


async def test_a_failure_while_speculative_emits_nothing() -> None:
    # given a speculative response holding its ResponseStarted
    out: list[Frame] = []
    response = new_response(out)
    announce(response)
    # when its ASR or LLM fails
    announced = response.fail(InferenceError("worker gone", "inference_unavailable"))
    # then the client never hears of it, and its held frames are gone
    assert announced is False and out == [] and response.held == ()
    assert response.state is ResponseState.CANCELLED
    # and it can no longer be committed
    with pytest.raises(IllegalTransition, match="cancelled -> active"):
        response.commit()


async def test_a_failure_while_active_ends_it_with_an_error() -> None:
    out: list[Frame] = []
    response = new_response(out, speculative=False)
    response.text = "At nine"
    assert response.fail(InferenceError("tts crashed", "tts_error")) is True
    error, done = out
    assert isinstance(error, ErrorFrame) and error.code == "tts_error"
    assert isinstance(done, ResponseDone) and (done.status, done.text) == ("failed", "At nine")


async def test_done_releases_the_stripped_text_once() -> None:
    # given an active response that generated a reply
    out: list[Frame] = []
    response = new_response(out, speculative=False)
    response.text = "At nine. "
    # when it finishes twice (a late completion after its end)
    first = response.done("completed")
    second = response.done("completed")
    # then one ResponseDone went out, with the text, and the second call changed nothing
    assert first == "At nine." and second is None
    (frame,) = out
    assert isinstance(frame, ResponseDone) and frame.status == "completed"
    assert frame.text == "At nine." and response.state is ResponseState.DONE
    # and a later cancel or failure does not reopen it
    assert response.cancel() is None and response.fail(InferenceError("late")) is False
    assert response.state is ResponseState.DONE and len(out) == 1


async def test_illegal_transitions_raise() -> None:
    out: list[Frame] = []
    never_committed = new_response(out)
    with pytest.raises(IllegalTransition, match="never committed"):
        never_committed.done("completed")
    active = new_response(out, speculative=False)
    with pytest.raises(IllegalTransition, match="active -> active"):
        active.commit()
    discarded = new_response(out)
    discarded.discard()
    with pytest.raises(IllegalTransition, match="done -> done"):
        discarded.discard()
    with pytest.raises(IllegalTransition, match="done -> active"):
        discarded.commit()
    assert out == []


async def test_a_speculative_cancel_is_silent_and_stops_its_tasks() -> None:
    # given a speculative response with a running task
    out: list[Frame] = []
    response = new_response(out)
    announce(response)
    task = response.tasks.spawn(asyncio.sleep(3600))
    await asyncio.sleep(0)
    # when the caller resumes speaking and it is cancelled
    assert response.cancel() is None
    # then nothing went out and its task is cancelled
    await asyncio.wait([task], timeout=5.0)
    assert task.cancelled() and out == [] and response.held == ()
    assert response.state is ResponseState.CANCELLED


async def test_an_interrupted_spoken_reply_keeps_only_what_was_heard() -> None:
    # given an active spoken reply of two 1 s clauses, 2 s of audio sent 1.5 s ago
    clock = Clock()
    out: list[Frame] = []
    response = new_response(out, speculative=False, clock=clock)
    response.text = "We open at nine. On Sundays we open at ten and close early."
    response.clauses = [
        ("We open at nine.", 1000),
        ("On Sundays we open at ten and close early.", 1000),
    ]
    response.sent_samples = 2000
    response.first_sent_at = clock.now
    clock.now += 1.5
    # when the caller interrupts it
    cancelled = response.cancel(interrupted=True)
    # then the interruption and the cancelled ResponseDone carry the heard part
    assert cancelled is not None and cancelled.played_ms == 1500
    assert cancelled.heard == "We open at nine. On Sundays we open"  # 4.5 of 9 words: 4
    interruption, done = out
    assert isinstance(interruption, Interruption) and interruption.audio_played_ms == 1500
    assert isinstance(done, ResponseDone) and done.status == "cancelled"
    assert interruption.heard_text == done.text == cancelled.heard


async def test_a_cancelled_text_reply_keeps_every_token() -> None:
    out: list[Frame] = []
    response = new_response(out, speculative=False, speak=False)
    response.text = "Once upon a time there was a sea "
    cancelled = response.cancel(interrupted=False)
    assert cancelled is not None and cancelled.heard == "Once upon a time there was a sea"
    (done,) = out
    assert isinstance(done, ResponseDone) and done.text == cancelled.heard


async def test_an_unannounced_cancel_sends_nothing() -> None:
    out: list[Frame] = []
    response = new_response(out, speculative=False)
    response.text = "At nine."
    assert response.cancel(announce=False) is None and out == []
    assert response.state is ResponseState.CANCELLED


async def test_a_tool_call_is_output_held_like_words_and_never_sent_once_cancelled() -> None:
    from voiceapp.engine.frames import ToolCallMade
    from voiceapp.engine.tools import ToolCall

    out: list[Frame] = []
    response = new_response(out)
    call = ToolCall("call_1", "lookup_order", '{"order_number": "48213"}')
    response.call(call)
    # held while speculative, kept for the history, timed in the trace
    assert out == [] and response.tool_calls == [call]
    assert "tool_call" in response.trace.marks
    response.commit()
    assert out == [ToolCallMade("resp_1", "call_1", "lookup_order", call.arguments)]

    cut: list[Frame] = []
    cancelled = new_response(cut)
    cancelled.call(call)
    cancelled.cancel()
    assert not any(isinstance(f, ToolCallMade) for f in cut)
