"""The dashboard's widget page places a live test call for a logged-in member."""

from __future__ import annotations

from typing import Any

import pytest

from sessions.models import Call
from tests.support.live_server import LiveServer
from tests.support.tenants import PASSWORD, Tenant
from voiceapp.personas.models import Persona
from voiceapp.personas.services import persona_create

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
    # and the call is listed on the Calls page, marked as a dashboard test
    page.goto(f"{voice_server.url}/dashboard/calls/")
    row = page.locator("tbody tr").first.inner_text()
    assert "Assistant" in row and "test" in row and "Dashboard" in row, row


def _log_in(page: Any, server: LiveServer, tenant: Tenant) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=login]", tenant.owner.email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dashboard/")


@pytest.mark.slow
def test_talk_to_a_persona_from_the_persona_list(
    voice_server: LiveServer, page: Any, console: list[str], tenant_a: Tenant
) -> None:
    # given a member on the persona list, with two personas
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.agent_speaks_first = False
    persona.instructions = "You are a helpful geography assistant. Answer in one short sentence."
    persona.save()
    persona_create(org=tenant_a.org, name="Sales", instructions="Sell things.", greeting="Hi")
    _log_in(page, voice_server, tenant_a)
    page.goto(f"{voice_server.url}/dashboard/personas/")
    # when they press "Talk to this persona" on the assistant's row
    row = page.locator("tbody tr").filter(has_text="assistant")
    row.get_by_role("button", name="Talk to Assistant").click()
    # then a call with that persona starts at once: the question is captioned and answered
    user = page.locator(".line.user .text").filter(has_text="capital").first
    try:
        user.wait_for(timeout=60_000)
    except Exception:
        raise AssertionError(f"no caption; page said: {console[-20:]}") from None
    page.locator(".line.agent .text").first.wait_for(timeout=30_000)
    assert (
        page.locator("[data-test-call][data-voice-agent]").get_attribute("data-voice-agent")
        == "assistant"
    )
    page.keyboard.press("Escape")
    # and it is recorded as a dashboard test call with that persona
    call = Call.objects.get(org=tenant_a.org)
    assert (call.source, call.persona_name) == ("test", "Assistant")
