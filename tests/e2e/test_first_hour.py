"""A new business owner's first hour, in Chromium: sign up, make a persona, hear its
greeting, make a key, call the persona from the dashboard, and play the call back.

With SCREENSHOT_DIR set, the walk also saves the pages the README shows
(`SCREENSHOT_DIR=docs/screenshots ./dev test tests/e2e/test_first_hour.py`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from sessions.models import Call, CallRecording
from tests.support.live_server import LiveServer
from voiceapp.personas.models import Persona

OWNER_PASSWORD = "sourdough-rises-at-dawn-42"
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300), pytest.mark.slow]


def snapshot(page: Any, name: str) -> None:
    folder = os.environ.get("SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_sign_up_to_a_recorded_test_call(
    voice_server: LiveServer, page: Any, console: list[str], settings: Any
) -> None:
    settings.MEDIA_ROOT = voice_server.media  # the recording is the live server's file
    url = voice_server.url
    page.set_viewport_size({"width": 1280, "height": 900})
    # given a visitor who signs up
    page.goto(f"{url}/accounts/signup/")
    page.fill("input[name=organization_name]", "Corner Bakery")
    page.fill("input[name=email]", "owner@corner-bakery.test")
    page.fill("input[name=password1]", OWNER_PASSWORD)
    page.fill("input[name=password2]", OWNER_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/dashboard/")

    # when they make a persona that records its calls and answers briefly
    page.goto(f"{url}/dashboard/personas/new/")
    page.fill("input[name=name]", "Geography desk")
    page.fill(
        "[name=instructions]",
        "You are a helpful geography assistant. Answer in one short sentence.",
    )
    page.fill("[name=greeting]", "Hello, this is the geography desk.")
    page.uncheck("input[name=agent_speaks_first]")
    page.check("input[name=record_calls]")
    page.fill("[name=recording_notice]", "This call is recorded.")
    page.get_by_role("button", name="Create persona").click()
    page.wait_for_url(f"{url}/dashboard/personas/")
    persona = Persona.objects.get(slug="geography-desk")
    assert persona.record_calls and persona.voice is not None, "the default voice was preselected"

    # and preview its greeting on the persona page
    page.goto(f"{url}/dashboard/personas/{persona.pk}/")
    page.get_by_role("button", name=re.compile("Hear the greeting")).click()
    page.wait_for_function(
        "(() => { const a = document.querySelector('.voice-preview audio');"
        " return a && !a.hidden && a.readyState >= 1 && a.duration > 1; })()",
        timeout=60_000,
    )

    # and create a secret key, shown once
    page.goto(f"{url}/dashboard/keys/")
    page.get_by_label("Name").first.fill("backend")
    page.locator("form").filter(has=page.locator("#id_secret_name")).locator(
        "button[type=submit]"
    ).click()
    assert re.search(r"sk_[A-Za-z0-9_\-]{20,}", page.locator("main").inner_text())

    # and talk to the persona from its page: the fake microphone asks a question
    page.goto(f"{url}/dashboard/personas/{persona.pk}/")
    page.get_by_role("button", name="Talk to this persona").click()
    user = page.locator(".line.user .text").filter(has_text="capital").first
    try:
        user.wait_for(timeout=90_000)
        page.locator(".line.agent .text").last.wait_for(timeout=30_000)
        page.wait_for_timeout(3000)  # let the reply play a little
    except Exception:
        raise AssertionError(f"no caption or answer; page said: {console[-20:]}") from None
    page.keyboard.press("Escape")

    # then the call is on the Calls page as a dashboard test call of that persona
    call = _ended_call(persona)
    page.goto(f"{url}/dashboard/calls/")
    row = page.locator("tbody tr").first.inner_text()
    assert "Geography desk" in row and "test" in row.lower(), row
    snapshot(page, "calls-list")

    # and its page plays the recording of both sides
    recording = _recording_of(call)
    page.goto(f"{url}/dashboard/calls/{call.pk}/")
    page.wait_for_function("document.getElementById('call-audio').readyState >= 1", timeout=15_000)
    duration = page.evaluate("document.getElementById('call-audio').duration")
    assert abs(duration - recording.duration_s) < 0.5, (duration, recording.duration_s)
    page.evaluate("document.getElementById('call-audio').play()")
    page.wait_for_function(
        "document.getElementById('call-audio').currentTime > 1.0", timeout=15_000
    )
    transcript = page.locator(".transcript").inner_text()
    assert "capital" in transcript.lower(), transcript
    snapshot(page, "call-detail")
    assert not [line for line in console if line.startswith("pageerror")], console


def _ended_call(persona: Persona, timeout_s: float = 30.0) -> Call:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        call = Call.objects.filter(persona=persona).exclude(ended_at=None).first()
        if call is not None:
            return call
        time.sleep(0.2)
    raise AssertionError(f"the call did not end: {list(Call.objects.values('ended_at'))}")


def _recording_of(call: Call, timeout_s: float = 30.0) -> CallRecording:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        recording = CallRecording.objects.filter(call=call).first()
        if recording is not None:
            return recording
        time.sleep(0.2)
    raise AssertionError("the call's recording was not encoded")
