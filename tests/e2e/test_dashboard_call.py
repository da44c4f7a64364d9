"""The dashboard's widget page places a live test call for a logged-in member."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import PASSWORD, LiveServer, Tenant
from voiceapp.personas.models import Persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.mark.slow
def test_member_test_call_from_the_widget_page(
    voice_server: LiveServer, page: Any, console: list[str], tenant_a: Tenant
) -> None:
    # given a member logged in to the dashboard, with a persona that answers briefly
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.agent_speaks_first = False
    persona.instructions = "You are a helpful geography assistant. Answer in one short sentence."
    persona.save()
    page.goto(f"{voice_server.url}/accounts/login/")
    page.fill("input[name=login]", tenant_a.owner.email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dashboard/")
    # when they open the widget page, which has no publishable key yet, and press Test call
    page.goto(f"{voice_server.url}/dashboard/widget/")
    assert "Test call" in page.locator("main").inner_text()
    page.locator("button.launcher").click()
    # then the fake microphone's question shows in the captions, and the agent answers
    user = page.locator(".line.user .text").filter(has_text="capital").first
    try:
        user.wait_for(timeout=60_000)
    except Exception:
        raise AssertionError(f"no caption; page said: {console[-20:]}") from None
    page.locator(".line.agent .text").first.wait_for(timeout=30_000)
    page.keyboard.press("Escape")
    # and the call is listed on the Calls page
    page.goto(f"{voice_server.url}/dashboard/calls/")
    assert "Assistant" in page.locator("table").inner_text()
