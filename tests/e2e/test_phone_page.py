"""The Phone page in a real browser: an owner adds a trunk and a number with the
forms, and the page, with trunks, numbers and outbound calls in every state, fits
the window."""

from __future__ import annotations

import os
from typing import Any

import pytest

from telephony.models import OutboundCall, PhoneNumber, SipTrunk
from telephony.services import outbound_call_create
from tests.e2e.test_documents_page import log_in
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [390, 1280])
def test_an_owner_sets_up_a_number_and_the_page_fits(
    live_server: Any, page: Any, tenant_a: Tenant, width: int, tmp_path: Any
) -> None:
    log_in(page, live_server, tenant_a)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/dashboard/phone/")
    # when the owner adds a trunk with the form
    page.fill("#id_name", "Carrier with a rather long descriptive name")
    page.fill("#id_allowed_addresses", "203.0.113.7\n198.51.100.0/24")
    page.fill("#id_outbound_address", "sip.carrier-with-a-long-hostname.example:5060")
    page.fill("#id_caller_id", "+15550100123")
    page.click("text=Add trunk")
    page.wait_for_url("**/dashboard/phone/")
    assert "Added the trunk" in page.inner_text("main")
    # and a number answered by the default persona
    page.fill("#id_number", "+1 555 010 4477")
    page.select_option("#id_persona", label=tenant_a.org.personas.get().name)
    page.click("text=Add number")
    page.wait_for_url("**/dashboard/phone/")
    assert PhoneNumber.objects.get().number == "+15550104477"
    # then, with outbound calls in several states, nothing reaches past the window
    trunk = SipTrunk.objects.get()
    persona = tenant_a.org.personas.get()
    for status, detail in [
        ("completed", "voicemail"),
        ("busy", "486 Busy Here"),
        ("ringing", ""),
    ]:
        row = outbound_call_create(org=tenant_a.org, persona=persona, to="+15550109999")
        OutboundCall.objects.filter(pk=row.pk).update(status=status, detail=detail, trunk=trunk)
    page.goto(f"{live_server.url}/dashboard/phone/")
    text = page.inner_text("main")
    assert "+15550104477" in text and "486 Busy Here" in text
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the Phone page is {overflow}px wider than the window at {width}px"
    if os.environ.get("SCREENSHOTS"):
        page.screenshot(path=str(tmp_path / f"phone-{width}.png"), full_page=True)
        print(tmp_path)
