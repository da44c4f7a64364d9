"""A phone call end to end: baresip (a SIP user agent nobody here wrote) dials a
persona's number over loopback, asks a spoken question, hears the answer (checked
with Whisper), presses a key and hangs up; the call record, its usage and the
call.ended webhook are there. The SIP server and the models run in this process,
as `manage.py sip_server` runs them without Redis."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from bench.baresip import Baresip, Listener, call_wav, free_sip_port
from billing.models import UsageRecord
from sessions.live import live_store
from sessions.models import Call
from telephony import services
from telephony.sip.call import KEYPAD_PREFIX
from telephony.sip.server import SipServer, info_digit
from tests.support.clips import piper_clip, words
from tests.support.processes import free_port
from tests.support.sip import SipClient, sdp_offer
from tests.support.tenants import Tenant
from tests.support.webhook_receiver import Receiver, webhook_receiver
from voiceapp.engine.audio import resample
from voiceapp.personas.services import persona_fact_create
from webhooks.services import webhook_endpoint_create

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
    pytest.mark.usefixtures("embedded_models"),
]

NUMBER = "+15550103000"
CALLER = "+15557654321"
HOURS = "We are open from nine to five, Monday to Friday."


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    with webhook_receiver() as running:
        yield running


@pytest.fixture
def phone_persona(tenant_a: Tenant) -> Any:
    persona = tenant_a.org.personas.get()
    persona_fact_create(persona=persona, question="What are your opening hours?", answer=HOURS)
    trunk = services.trunk_create(
        org=tenant_a.org, name="loopback", allowed_addresses=["127.0.0.1"]
    )
    services.phone_number_create(org=tenant_a.org, number=NUMBER, persona=persona, trunk=trunk)
    return persona


@pytest.fixture
async def sip_server(phone_persona: Any) -> AsyncIterator[SipServer]:
    server = SipServer(host="127.0.0.1", port=0, rtp_ports=(32000, 32999))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        await sync_to_async(connections.close_all)()


@pytest.fixture(scope="module")
def question_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3.5 s for the greeting, the question, then 16 s to answer, press a key and hang up."""
    question = piper_clip("What are your opening hours?")
    rate = question.rate
    quiet = np.zeros
    path = tmp_path_factory.mktemp("phone") / "question.wav"
    return call_wav(
        path,
        [quiet(int(3.5 * rate), np.float32), question.samples, quiet(16 * rate, np.float32)],
        rate,
    )


async def test_a_caller_asks_hears_the_answer_presses_a_key_and_hangs_up(
    tenant_a: Tenant,
    sip_server: SipServer,
    question_wav: Path,
    receiver: Receiver,
    models: Any,
    tmp_path: Path,
) -> None:
    await sync_to_async(webhook_endpoint_create)(
        org=tenant_a.org, url=receiver.url, events=["call.started", "call.ended"]
    )
    phone = Baresip(tmp_path / "baresip", caller=CALLER, port=free_sip_port())
    result = await phone.call(
        f"sip:{NUMBER}@127.0.0.1:{sip_server.port}", question_wav, digits=[(13.0, "1")]
    )
    assert result.established, result.output[-3000:]
    assert result.ended_at is not None, result.output[-3000:]
    assert "PCMU" in result.output

    # It heard the greeting and the answer, in the persona's voice.
    audio, rate = result.heard()
    heard = await models.transcribe(resample(audio, rate, 16000), "en")
    said = words(heard.text)
    assert len(said & words(HOURS)) >= 5, heard.text
    assert {"help", "today"} & said, heard.text  # the greeting

    call = await _ended_call(tenant_a)
    assert call.transport == "sip" and call.source == "phone"
    assert call.caller_number == CALLER and call.key_name == "loopback"
    assert call.end_reason == "hangup"
    assert call.client_info["called"] == NUMBER and call.client_info["codec"] == "PCMU"
    items = [(i.role, i.text) async for i in call.items.order_by("at_s")]
    user_lines = [text for role, text in items if role == "user"]
    assert any({"opening", "hours"} <= words(text) for text in user_lines), items
    assert f"{KEYPAD_PREFIX} 1" in user_lines, items
    assert any(role == "assistant" and "nine" in text.lower() for role, text in items), items
    assert call.duration_s is not None and 15 < call.duration_s < 40
    usage = await UsageRecord.objects.aget(call_id=call.pk)
    assert usage.billed_seconds >= 15 and usage.asr_seconds > 0

    ended = await _webhook(receiver, "call.ended")
    assert ended["data"]["call_id"] == str(call.pk)
    assert sip_server.calls == {}
    assert sip_server.ports._allocated == set()


@pytest.mark.parametrize(
    ("module", "codec", "rate", "channels"),
    [("g722", "G722", 16000, 1), ("opus", "opus", 48000, 2)],
)
async def test_a_wideband_caller_is_answered_in_its_codec(
    tenant_a: Tenant,
    sip_server: SipServer,
    models: Any,
    tmp_path: Path,
    module: str,
    codec: str,
    rate: int,
    channels: int,
) -> None:
    """A caller that offers a wideband codec first (an HD-voice phone or PBX: G.722;
    a softphone: Opus) is answered in it, which Whisper hears better than 8 kHz."""
    question = piper_clip("What are your opening hours?")
    at = question.rate
    quiet = np.zeros
    wav = call_wav(
        tmp_path / "question.wav",
        [quiet(int(3.5 * at), np.float32), question.samples, quiet(12 * at, np.float32)],
        at,
        out_rate=rate,  # baresip plays a file at the codec's rate and channels
        channels=channels,
    )
    phone = Baresip(tmp_path / "hd", caller=CALLER, port=free_sip_port(), codecs=(module, "g711"))
    result = await phone.call(f"sip:{NUMBER}@127.0.0.1:{sip_server.port}", wav, timeout_s=40)
    assert result.established, result.output[-3000:]
    assert f"Set audio decoder: {codec} {rate}Hz" in result.output, result.output[-3000:]
    audio, rate = result.heard()
    heard = await models.transcribe(resample(audio, rate, 16000), "en")
    assert len(words(heard.text) & words(HOURS)) >= 5, heard.text
    call = await _ended_call(tenant_a)
    assert call.client_info["codec"] == codec
    items = [(i.role, i.text) async for i in call.items.order_by("at_s")]
    assert any({"opening", "hours"} <= words(t) for r, t in items if r == "user"), items


async def test_back_to_back_phone_calls_at_capacity_one_are_never_refused(
    tenant_a: Tenant, sip_server: SipServer, settings: Any, tmp_path: Path
) -> None:
    """One call at a time for the organization: callers who dial one after another
    all get in, the slot of each is free within a second of its end, whether the
    caller hung up or the call ran past its maximum duration (the server's BYE)."""
    settings.ORG_MAX_CONCURRENT_CALLS = 1
    persona = await tenant_a.org.personas.aget()
    persona.agent_speaks_first = False
    await persona.asave()
    quiet = call_wav(tmp_path / "quiet.wav", [np.zeros(3 * 8000, np.float32)], 8000)
    long = call_wav(tmp_path / "long.wav", [np.zeros(20 * 8000, np.float32)], 8000)
    store = live_store()
    freed: list[float] = []
    usual = persona.max_call_duration_s
    for n, (wav, max_s) in enumerate([(quiet, usual), (quiet, usual), (long, 4), (quiet, usual)]):
        persona.max_call_duration_s = max_s
        await persona.asave()
        phone = Baresip(tmp_path / f"caller{n}", caller=CALLER, port=free_sip_port())
        result = await phone.call(f"sip:{NUMBER}@127.0.0.1:{sip_server.port}", wav, timeout_s=30)
        assert result.established, f"call {n}: {result.output[-1500:]}"
        assert result.ended_at is not None
        for _ in range(200):
            if await store.active(org_id=tenant_a.org.pk) == 0:
                break
            await asyncio.sleep(0.02)
        freed.append(time.monotonic() - result.ended_at)
    print("phone slots free after baresip saw the end: " + ", ".join(f"{s:.2f} s" for s in freed))
    reasons = [
        r async for r in Call.objects.order_by("started_at").values_list("end_reason", flat=True)
    ]
    assert reasons == ["hangup", "hangup", "max_duration", "hangup"], reasons
    # baresip reports the end once it has its answer to the BYE; 0.5 s more to close files
    assert max(freed) < 1.0 + 0.5, freed


HANDOFF = "I will put you through to the front desk now."


async def test_a_caller_who_asks_for_a_person_is_transferred_by_refer(
    tenant_a: Tenant, sip_server: SipServer, models: Any, tmp_path: Path
) -> None:
    """The persona's transfer_call action says the handoff text, then REFERs the caller
    to the front desk: a third user agent gets the call, ours ends, and the record
    shows where the caller went."""
    ask = piper_clip("Can I talk to a real person, please?")
    rate = ask.rate
    wav = call_wav(
        tmp_path / "ask.wav",
        [np.zeros(rate, np.float32), ask.samples, np.zeros(20 * rate, np.float32)],
        rate,
    )
    quiet = call_wav(tmp_path / "desk.wav", [np.zeros(30 * rate, np.float32)], rate)
    desk_phone = Baresip(tmp_path / "desk", caller="frontdesk", port=free_sip_port())
    async with Listener(desk_phone, quiet) as desk:
        await sync_to_async(_hands_over_to)(tenant_a, desk.uri)
        caller = Baresip(tmp_path / "caller", caller=CALLER, port=free_sip_port())
        result = await caller.call(f"sip:{NUMBER}@127.0.0.1:{sip_server.port}", wav, timeout_s=60)
        assert result.established, result.output[-3000:]
        call = await _ended_call(tenant_a)
        for _ in range(50):
            if "Call established" in desk.output:
                break
            await asyncio.sleep(0.1)
        assert "Call established" in desk.output, desk.output[-2000:]
        assert CALLER in desk.output  # the caller's own user agent rang the desk
    assert call.end_reason == "transferred" and call.transferred_to == desk.uri
    items = [(i.role, i.text) async for i in call.items.order_by("at_s")]
    assert ("assistant", HANDOFF) in items, items
    assert any(role == "tool" and text.startswith("transfer_call") for role, text in items)
    # the caller heard the handoff text before the transfer
    audio, heard_rate = result.heard()
    heard = await models.transcribe(resample(audio, heard_rate, 16000), "en")
    assert {"front", "desk"} <= words(heard.text), heard.text


def _hands_over_to(tenant: Tenant, uri: str) -> None:
    persona = tenant.org.personas.get()
    persona.actions = ["take_message", "transfer_call"]
    persona.handoff_text = HANDOFF
    persona.transfer_to = uri
    persona.agent_speaks_first = False
    persona.temperature = 0.0
    persona.save()


async def test_keypad_digits_as_sip_info(
    tenant_a: Tenant, sip_server: SipServer, phone_persona: Any
) -> None:
    """Some PBXs send keypad digits as SIP INFO (application/dtmf-relay) rather than
    RFC 4733 packets: they reach the conversation the same way."""
    async with SipClient("127.0.0.1", sip_server.port) as client:
        invite = client.invite(NUMBER, from_user=CALLER)
        offer = invite.request(body=sdp_offer([0], port=free_port()))
        client.send(offer)
        client.send(offer)  # retransmitted, as over UDP before the answer comes
        ok = await client.final(invite.call_id, timeout_s=30)
        assert ok.status_code == 200
        client.send(invite.ack(ok))
        # the INVITE aiosipua tracks (whose 200 the ACK stops) is the one we answered
        (uas,) = [
            u
            for u in sip_server._uas
            if u.transport is sip_server.calls[invite.call_id].invite.transport
        ]
        assert uas._calls[invite.call_id] is sip_server.calls[invite.call_id].invite
        client.send(
            invite.in_dialog(
                "INFO",
                ok,
                2,
                body="Signal=7\r\nDuration=160\r\n",
                content_type="application/dtmf-relay",
            )
        )
        assert (await client.final(invite.call_id)).status_code == 200
        stranger = client.invite(NUMBER)  # an INFO for no call of ours
        client.send(
            stranger.in_dialog(
                "INFO", ok, 1, body="Signal=1", content_type="application/dtmf-relay"
            )
        )
        assert (await client.final(stranger.call_id)).status_code == 481
        await asyncio.sleep(2.5)  # the entry goes in after 1.5 s without another digit
        client.send(invite.in_dialog("BYE", ok, 3))
        assert (await client.final(invite.call_id)).status_code == 200
    call = await _ended_call(tenant_a)
    assert call.end_reason == "hangup"
    items = [(i.role, i.text) async for i in call.items.order_by("at_s")]
    assert ("user", f"{KEYPAD_PREFIX} 7") in items, items


def test_info_bodies() -> None:
    assert info_digit("application/dtmf-relay", "Signal=5\r\nDuration=160\r\n") == "5"
    assert info_digit("Application/DTMF-Relay; charset=x", "signal = #") == "#"
    assert info_digit("application/dtmf", "9") == "9"
    assert info_digit("application/dtmf-relay", "Signal=55") == ""
    assert info_digit("application/media_control+xml", "<x/>") == ""


async def _ended_call(tenant: Tenant) -> Call:
    for _ in range(100):
        call = await Call.objects.filter(org=tenant.org).afirst()
        if call is not None and call.ended_at is not None:
            return call
        await asyncio.sleep(0.1)
    raise AssertionError("no ended call")


async def _webhook(receiver: Receiver, kind: str) -> dict[str, Any]:
    for _ in range(100):
        for item in receiver.received:
            body = json.loads(item.body)
            if body.get("type") == kind:
                return dict(body)
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {kind} webhook; got {[r.body[:80] for r in receiver.received]}")
