"""Postgres unreachable for 10 s mid-call: the call goes on, its record is
buffered and written when the database returns, nothing lost, the end last."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest

from sessions.models import Call, CallItem, CallTurn
from tests.support.calls import wait_calls_ended
from tests.support.faults import (
    FaultStack,
    connect,
    events_until_done,
    next_of,
    stream_audio,
)
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(150), pytest.mark.slow]

OUTAGE_S = 10.0


def test_postgres_outage_buffers_the_call_record(
    fault_server: FaultStack, secret_key_a: str, quiet_persona: Persona, question_pcm: bytes
) -> None:
    async def scenario() -> dict[str, Any]:
        # given a call in progress
        ws = await connect(fault_server, secret_key_a)
        await next_of(ws, "session.created")

        # when the server's database goes away for 10 s
        fault_server.proxy.cut()
        cut_at = time.monotonic()
        # then the caller's spoken question is still answered
        sender = asyncio.ensure_future(stream_audio(ws, question_pcm))
        try:
            events = await events_until_done(ws, timeout_s=OUTAGE_S * 3)
        finally:
            sender.cancel()
        answered_s = time.monotonic() - cut_at
        # and the caller hangs up while the database is still away
        await ws.close()
        hung_up_s = time.monotonic() - cut_at
        await asyncio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - cut_at)))
        fault_server.proxy.restore()
        return {"events": events, "answered_s": answered_s, "hung_up_s": hung_up_s}

    result = asyncio.run(scenario())
    restored = time.monotonic()
    wait_calls_ended(timeout_s=20)
    flushed_s = time.monotonic() - restored
    events = result["events"]
    assert result["hung_up_s"] < OUTAGE_S, "the question was answered only after the outage"

    # then everything the caller saw is in the call's record
    heard = [
        e["transcript"]
        for e in events
        if e["type"] == "conversation.item.input_audio_transcription.completed"
    ]
    said = [e["transcript"] for e in events if e["type"] == "response.output_audio_transcript.done"]
    done = events[-1]["response"]
    assert done["status"] == "completed" and heard and said
    call = Call.objects.get()
    items = list(CallItem.objects.filter(call=call).order_by("at_s"))
    assert [(i.role, i.text) for i in items] == [("user", heard[0]), ("assistant", said[0])]
    turn = CallTurn.objects.get(call=call)
    assert (turn.response_id, turn.status) == (done["id"], "completed")
    assert call.asr_seconds > 0
    assert call.llm_input_tokens == done["usage"]["input_tokens"]
    assert call.llm_output_tokens == done["usage"]["output_tokens"]
    assert call.tts_characters == len(said[0])
    # and the end, written last, keeps the time the caller hung up, not the flush's
    assert call.end_reason == "hangup"
    assert call.duration_s is not None and call.duration_s < result["hung_up_s"] + 5
    # the buffer says so once its last write is in, which may be a moment after the
    # end (the last write) is seen in the database
    pattern = rf"call {call.pk}: record complete; (\d+) writes were buffered"
    for _ in range(50):
        log = fault_server.web_log()
        summary = re.search(pattern, log)
        if summary:
            break
        time.sleep(0.1)
    assert summary, log[-3000:]
    print(
        f"\npostgres outage {OUTAGE_S:.0f} s: answered {result['answered_s']:.1f} s into it; "
        f"{summary.group(1)} record writes buffered; record complete {flushed_s:.1f} s "
        f"after the database returned; {fault_server.proxy.refused} connections refused"
    )
