"""What a real spoken call leaves in the ledger: its seconds, the speech it
transcribed, the tokens it generated and the characters it spoke."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from billing.models import UsageRecord
from sessions.models import Call
from tests.sessions.test_realtime_ws import (
    next_of,
    of_type,
    raw_connect,
    speak_until_done,
)
from tests.support.calls import wait_calls_ended
from tests.support.clips import pcm24
from tests.support.live_server import LiveServer
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.services import secret_key_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


class JsonSocket:
    """A raw WebSocket that sends and yields events as dicts, like the SDK's connection."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    def __aiter__(self) -> JsonSocket:
        return self

    async def __anext__(self) -> dict[str, Any]:
        return dict(json.loads(await self.ws.recv()))

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event))


def test_a_spoken_call_is_billed_with_its_asr_llm_and_tts_usage(
    voice_server: LiveServer, tenant_a: Tenant
) -> None:
    from tests.support.clips import piper_clip

    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.agent_speaks_first = False
    persona.instructions = "You are a helpful geography assistant. Answer in one short sentence."
    persona.save()
    _, raw = secret_key_create(org=tenant_a.org, name="usage")
    clip = piper_clip("What is the capital of France?")
    question = pcm24(clip.samples, clip.rate)

    async def scenario() -> list[dict[str, Any]]:
        ws = await raw_connect(voice_server, raw)
        await next_of(ws, "session.created")
        events = await speak_until_done(JsonSocket(ws), question)
        await ws.close()
        return events

    events = asyncio.run(scenario())
    wait_calls_ended()

    heard = of_type(events, "conversation.item.input_audio_transcription.completed")[0]
    done = of_type(events, "response.done")[0]["response"]
    spoken = of_type(events, "response.output_audio_transcript.done")[0]["transcript"]
    call = Call.objects.get()
    record = UsageRecord.objects.get(call_ref=call.pk)
    assert record.billed_seconds >= 2 and record.end_reason == "hangup"
    assert record.asr_seconds == pytest.approx(heard["usage"]["seconds"], abs=0.01)
    assert record.llm_output_tokens == done["usage"]["output_tokens"] > 0
    # the prompt (persona instructions + question) was counted, in the event and the ledger
    assert call.llm_input_tokens == record.llm_input_tokens == done["usage"]["input_tokens"] > 10
    assert done["usage"]["total_tokens"] == record.llm_input_tokens + record.llm_output_tokens
    cached = done["usage"]["input_token_details"]["cached_tokens"]
    assert 0 <= cached < done["usage"]["input_tokens"]
    assert record.tts_characters == len(spoken) > 0
