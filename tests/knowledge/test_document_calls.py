"""A document uploaded through the API is processed and answers a spoken question
in a call: the stock `openai` SDK over /v1/realtime, daphne and a separate
inference worker (the production topology), real models on real audio."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import pytest
import requests
from openai import AsyncOpenAI

from tests.sessions.test_realtime_ws import (
    of_type,
    speak_until_done,
    transcribe_pcm24,
)
from tests.support.calls import wait_calls_ended
from tests.support.clips import pcm24, piper_clip
from tests.support.live_server import LiveServer
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

FAQ = b"""# Rosie's Bakery

## Parking
There is no car park of our own. The town car park on Mill Lane is free for the first hour.

## Cakes
Birthday cakes must be ordered three days ahead.
"""


def upload_and_wait(server: LiveServer, key: str, persona: Persona) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    base = f"{server.url}/api/v1/personas/{persona.pk}/documents/"
    created = requests.post(
        base, headers=headers, files={"file": ("faq.md", FAQ, "text/markdown")}, timeout=30
    )
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + 60
    while True:
        doc = requests.get(f"{base}{created.json()['id']}/", headers=headers, timeout=10).json()
        if doc["status"] not in ("queued", "processing"):
            return dict(doc)
        assert time.monotonic() < deadline, doc
        time.sleep(0.3)


def test_an_uploaded_document_answers_a_spoken_question(
    voice_server: LiveServer, secret_key_a: str, quiet_persona: Persona
) -> None:
    # given a document uploaded through the API and processed
    document = upload_and_wait(voice_server, secret_key_a, quiet_persona)
    assert document["status"] == "ready" and document["passage_count"] == 2
    question = piper_clip("Is there somewhere I can leave my car?")

    # when a caller asks about it by voice
    async def scenario() -> list[dict[str, Any]]:
        client = AsyncOpenAI(base_url=f"{voice_server.url}/v1", api_key=secret_key_a)
        async with client.realtime.connect(model="assistant") as conn:
            created = await conn.recv()
            assert created.type == "session.created"
            return await speak_until_done(conn, pcm24(question.samples, question.rate))

    events = asyncio.run(scenario())
    wait_calls_ended()

    # then the reply is the document's passage, and it is spoken
    said = of_type(events, "response.output_audio_transcript.done")[0]["transcript"]
    assert "Mill Lane" in said, said
    audio = b"".join(
        base64.b64decode(e["delta"]) for e in of_type(events, "response.output_audio.delta")
    )
    heard = asyncio.run(transcribe_pcm24(audio))
    assert "mill lane" in heard or "car park" in heard, heard
