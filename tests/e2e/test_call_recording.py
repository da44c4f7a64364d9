"""The call page's recording player in Chromium: it loads the org's audio through
the dashboard, and a transcript line seeks it to where that line starts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions.realtime.recording import RATE
from tests.support.calls import make_call
from tests.support.live_server import LiveServer
from tests.support.recordings import record_audio
from tests.support.tenants import PASSWORD, Tenant
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def test_a_transcript_line_seeks_the_recording(
    voice_server: LiveServer,
    page: Any,
    console: list[str],
    requested: list[str],
    tenant_a: Tenant,
    settings: Any,
) -> None:
    # given a recorded call in the live server's storage: the caller's line has no
    # mark (seek to when it was written), the agent's reply is marked at 3 s
    from tests.support.clips import piper_clip
    from voiceapp.engine.audio import resample

    settings.MEDIA_ROOT = voice_server.media
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    call = make_call(
        persona,
        started_at=timezone.now() - timedelta(minutes=2),
        items=[
            ("user", "Are you open today?", 1.5, False),
            ("assistant", "Yes, until six.", 4.2, False),
        ],
    )
    question, answer = piper_clip("Are you open today?"), piper_clip("Yes, until six.")
    recording = record_audio(
        call,
        caller=resample(question.samples, question.rate, RATE),
        agent=resample(answer.samples, answer.rate, RATE),
        at_s=3.0,
        agent_item="item_1",
    )
    assert recording.marks == {"item_1": 3.0}
    # and the owner logged in to the dashboard
    page.goto(f"{voice_server.url}/accounts/login/")
    page.fill("input[name=login]", tenant_a.owner.email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dashboard/")

    # when they open the call and the player has read the file
    page.goto(f"{voice_server.url}/dashboard/calls/{call.pk}/")
    page.wait_for_function("document.getElementById('call-audio').readyState >= 1", timeout=15_000)
    duration = page.evaluate("document.getElementById('call-audio').duration")
    # and click the agent's line, then the caller's
    page.locator(".transcript li[data-item='item_1']").click()
    at_reply = page.evaluate("document.getElementById('call-audio').currentTime")
    page.locator(".transcript li[data-item='item_0']").click()
    at_question = page.evaluate("document.getElementById('call-audio').currentTime")

    # then the player holds the whole call and jumps to each line's start
    assert abs(duration - recording.duration_s) < 0.2, (duration, console[-10:])
    assert 3.0 <= at_reply < 3.5, at_reply
    assert 1.5 <= at_question < 2.0, at_question
    assert not [line for line in console if line.startswith("pageerror")], console
    assert f"{voice_server.url}/dashboard/calls/{call.pk}/recording.ogg" in requested
