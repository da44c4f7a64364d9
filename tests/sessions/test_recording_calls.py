"""Recorded calls end to end: a WebSocket call to daphne with a separate inference
worker, real speech in and out; the recording is read back from storage and heard."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import numpy as np
import pytest

from sessions.models import Call, CallItem, CallRecording
from tests.sessions.test_realtime_ws import (
    raw_connect,
    stream_audio,
    transcribe_pcm24,
)
from tests.support.calls import wait_calls_ended
from tests.support.live_server import LiveServer
from tests.support.recordings import decode
from tests.support.tenants import Tenant
from voiceapp.engine.audio import resample
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def wait_recording(call: Call, timeout_s: float = 30) -> CallRecording:
    """The server encodes the recording after the call ends: wait for it."""
    deadline = time.monotonic() + timeout_s
    while (recording := CallRecording.objects.filter(call=call).first()) is None:
        assert time.monotonic() < deadline, "no recording was made"
        time.sleep(0.2)
    return recording


async def until_done(ws: Any, count: int, timeout_s: float = 60) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout_s):
        while sum(e["type"] == "response.done" for e in events) < count:
            events.append(json.loads(await ws.recv()))
    return events


def pcm24(samples: np.ndarray, rate: int) -> bytes:
    return (np.clip(resample(samples, rate, 24000), -1, 1) * 32767).astype("<i2").tobytes()


def test_a_recorded_call_keeps_what_both_sides_said(
    voice_server: LiveServer,
    secret_key_a: str,
    tenant_a: Tenant,
    question_pcm: bytes,
    settings: Any,
) -> None:
    # given a persona that records calls, says so and greets the caller
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.instructions = "You are a helpful geography assistant. Answer in one short sentence."
    persona.greeting = "Hello, how can I help?"
    persona.agent_speaks_first = True
    persona.record_calls = True
    persona.recording_notice = "This call is recorded."
    persona.save()
    settings.MEDIA_ROOT = voice_server.media

    # when a caller hears the greeting, asks a question, hears the answer and hangs up
    async def scenario() -> list[dict[str, Any]]:
        ws = await raw_connect(voice_server, secret_key_a)
        try:
            greeting = await until_done(ws, 1)
            await asyncio.sleep(0.5)  # the greeting plays out
            sender = asyncio.ensure_future(
                stream_audio(lambda e: ws.send(json.dumps(e)), question_pcm)
            )
            answer = await until_done(ws, 1)
            sender.cancel()
            await asyncio.sleep(1.0)  # the answer plays out
            return greeting + answer
        finally:
            await ws.close()

    events = asyncio.run(scenario())
    wait_calls_ended()
    call = Call.objects.get(org=tenant_a.org)
    recording = wait_recording(call)

    # then the recording is Ogg Opus as long as the call, with speech on both channels
    assert call.duration_s is not None
    codec, rate, audio = decode(recording.file.path)
    assert codec == "opus" and audio.shape[1] == 2
    assert abs(len(audio) / rate - call.duration_s) < 1.5, (len(audio) / rate, call.duration_s)
    assert abs(recording.duration_s - len(audio) / rate) < 0.1
    left, right = audio[:, 0], audio[:, 1]
    assert float(np.sqrt(np.mean(left**2))) > 0.01
    assert float(np.sqrt(np.mean(right**2))) > 0.01
    # and on the left one hears the caller's question, on the right the notice and the answer
    caller_heard = asyncio.run(transcribe_pcm24(pcm24(left, rate)))
    agent_heard = asyncio.run(transcribe_pcm24(pcm24(right, rate)))
    assert {"capital", "france"} <= set(caller_heard.replace("?", " ").split()), caller_heard
    assert "recorded" in agent_heard, agent_heard
    # and each transcript line is marked where it starts in the audio, before it was written
    items = list(CallItem.objects.filter(call=call))
    assert [i.role for i in items] == ["assistant", "user", "assistant"]
    for item in items:
        assert 0 <= recording.marks[item.item_id] <= item.at_s, (item.role, recording.marks)
    user = items[1]
    start = recording.marks[user.item_id]
    assert float(np.sqrt(np.mean(left[int(start * rate) : int((start + 1) * rate)] ** 2))) > 0.01
    assert not any(voice_server.spool.iterdir())  # type: ignore[union-attr]
    assert any(e["type"] == "response.output_audio.delta" for e in events)


def test_a_call_is_not_recorded_when_the_persona_does_not_record(
    voice_server: LiveServer, secret_key_a: str, tenant_a: Tenant, question_pcm: bytes
) -> None:
    # given the default persona, which does not record calls
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    assert persona.record_calls is False

    # when a caller talks for a moment and hangs up
    async def scenario() -> None:
        ws = await raw_connect(voice_server, secret_key_a)
        try:
            await stream_audio(lambda e: ws.send(json.dumps(e)), question_pcm[: 24000 * 2])
        finally:
            await ws.close()

    asyncio.run(scenario())
    wait_calls_ended()

    # then the call has no recording and nothing was spooled
    assert Call.objects.filter(org=tenant_a.org).count() == 1
    assert not CallRecording.objects.exists()
    assert not any(voice_server.spool.iterdir())  # type: ignore[union-attr]
