"""Outbound phone calls end to end: `POST /api/v1/calls/`, the SIP server dials a
baresip that answers. One answers as a person ("Hello?"): the agent greets it. One
plays a voicemail greeting with a beep: it is detected as voicemail and the
persona's message is left after the beep (heard in the callee's recording). The SIP
server and the models run in this process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import Client

from bench.baresip import Baresip, Listener, call_wav, free_sip_port
from bench.voicemail_cases import CASES, answered
from sessions.models import Call
from telephony import services
from telephony.models import OutboundCall
from telephony.sip.server import SipServer
from tests.support.clips import piper_clip, words
from tests.support.tenants import Tenant
from voiceapp.engine.audio import read_wav, resample

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
    pytest.mark.usefixtures("embedded_models"),
]

MESSAGE = "Hello, this is the bakery calling about your order. Please call us back."


@pytest.fixture
async def sip_server() -> AsyncIterator[SipServer]:
    server = SipServer(host="127.0.0.1", port=0, rtp_ports=(35000, 35999), tcp=False)
    await server.start()
    server.start_dialing()
    try:
        yield server
    finally:
        await server.stop()
        await sync_to_async(connections.close_all)()


def _set_up(tenant: Tenant, callee_port: int) -> None:
    persona = tenant.org.personas.get()
    persona.voicemail_message = MESSAGE
    persona.save()
    services.trunk_create(
        org=tenant.org,
        name="carrier",
        allowed_addresses=["127.0.0.1"],
        outbound_address=f"127.0.0.1:{callee_port}",
        caller_id="+15550100123",
    )


async def _place(secret_key: str, to: str) -> int:
    response = await sync_to_async(Client().post)(
        "/api/v1/calls/",
        data={"to": to, "persona": "assistant"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret_key}"},
    )
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    return int(response.json()["id"])


async def _finished(outbound_id: int, timeout_s: float = 90) -> OutboundCall:
    for _ in range(int(timeout_s * 10)):
        row = await OutboundCall.objects.aget(pk=outbound_id)
        if row.status in OutboundCall.FINAL:
            return row
        await asyncio.sleep(0.1)
    raise AssertionError(f"outbound call still {row.status}: {row.detail}")


async def test_voicemail_is_detected_and_the_message_left_after_the_beep(
    tenant_a: Tenant, secret_key_a: str, sip_server: SipServer, models: Any, tmp_path: Path
) -> None:
    case = next(c for c in CASES if c.name == "vm_sarah")
    greeting, beep_end = answered(case, tmp_path / "cases")
    wav = call_wav(tmp_path / "greeting.wav", [greeting, np.zeros(8 * 8000, np.float32)], 8000)
    callee = Baresip(tmp_path / "callee", caller="+15550109876", port=free_sip_port())
    async with Listener(callee, wav):
        await sync_to_async(_set_up)(tenant_a, callee.port)
        outbound = await _finished(await _place(secret_key_a, "+15550109876"))
    assert outbound.status == "completed", outbound.detail
    assert outbound.detail == "voicemail"  # how the call ended
    call = await Call.objects.aget(pk=outbound.call_id)
    assert call.end_reason == "voicemail" and call.source == "phone"
    assert call.client_info["answered_by"] == "voicemail"
    # the mailbox recorded the message, after the beep
    dumps = sorted((tmp_path / "callee").glob("dump-*-dec.wav"))
    audio, rate = read_wav(dumps[0])
    assert beep_end is not None
    after = audio[int(beep_end * rate) :]
    heard = await models.transcribe(resample(after, rate, 16000), "en")
    assert len(words(heard.text) & words(MESSAGE)) >= 6, heard.text
    before = audio[: int((beep_end - 0.5) * rate)]
    assert np.abs(before).max() < 0.05  # nothing said over the greeting


async def test_a_person_who_answers_is_greeted(
    tenant_a: Tenant, secret_key_a: str, sip_server: SipServer, models: Any, tmp_path: Path
) -> None:
    hello = piper_clip("Hello?")
    wav = call_wav(
        tmp_path / "hello.wav",
        [
            np.zeros(hello.rate // 2, np.float32),
            hello.samples,
            np.zeros(8 * hello.rate, np.float32),
        ],
        hello.rate,
    )
    callee = Baresip(tmp_path / "callee", caller="+15550109877", port=free_sip_port())
    async with Listener(callee, wav):
        await sync_to_async(_set_up)(tenant_a, callee.port)
        outbound = await _finished(await _place(secret_key_a, "+15550109877"))
    call = await Call.objects.aget(pk=outbound.call_id)
    assert call.client_info["answered_by"] == "human" and call.caller_number == "+15550109877"
    dumps = sorted((tmp_path / "callee").glob("dump-*-dec.wav"))
    audio, rate = read_wav(dumps[0])
    heard = await models.transcribe(resample(audio, rate, 16000), "en")
    assert {"help", "today"} & words(heard.text), heard.text  # the persona's greeting
    assert not words(MESSAGE) & {"bakery", "order"} & words(heard.text)


MENU = (
    "Thank you for calling Acme Heating. For sales, press one. For repairs, press two. "
    "For billing, press three."
)
GOAL = "You are calling Acme Heating for a customer whose boiler is broken, to book a repair."


async def test_an_automated_menu_is_answered_with_the_key_for_what_the_call_is_for(
    tenant_a: Tenant, secret_key_a: str, sip_server: SipServer, tmp_path: Path
) -> None:
    """The callee is a phone menu: it is told apart from a person and a mailbox, the
    agent does not greet it, and the persona's press_keys sends the key of the option
    its instructions ask for, as RFC 4733 events the callee's baresip receives."""
    menu = piper_clip(MENU)
    wav = call_wav(
        tmp_path / "menu.wav",
        [np.zeros(menu.rate // 2, np.float32), menu.samples, np.zeros(12 * menu.rate, np.float32)],
        menu.rate,
    )
    callee = Baresip(tmp_path / "callee", caller="+15550109878", port=free_sip_port())
    async with Listener(callee, wav) as menu_line:
        await sync_to_async(_set_up)(tenant_a, callee.port)
        await sync_to_async(_navigates_menus)(tenant_a)
        outbound = await _finished(await _place(secret_key_a, "+15550109878"))
        output = menu_line.output
    call = await Call.objects.aget(pk=outbound.call_id)
    assert call.client_info["answered_by"] == "ivr", outbound.detail
    rows = [i async for i in call.items.order_by("at_s")]
    items = [(i.role, i.text) for i in rows]
    tools = [text for role, text in items if role == "tool"]
    assert tools and tools[0].startswith("press_keys"), items
    # (what the action gave back says whether the keys went out or the call ended first)
    actions = [i.tool for i in rows if i.role == "tool"]
    assert "received event: '2' (end=1)" in output, (actions, output[-3000:])
    assert not any(f"received event: '{k}'" in output for k in "013456789*#"), output[-3000:]
    first = next(role for role, _ in items if role != "user")
    assert first == "tool", items  # the agent said nothing to the menu before it pressed


def _navigates_menus(tenant: Tenant) -> None:
    persona = tenant.org.personas.get()
    persona.instructions = GOAL
    persona.actions = ["press_keys"]
    persona.save()
