"""The SIP endpoint's refusals, in-process on loopback with a hand-built SIP client:
each gets a clean final response, the server stays up, and no call slot is held.
Calls that are answered (models, audio) are in test_phone_call.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiosipua.sdp import parse_sdp
from asgiref.sync import sync_to_async
from django.db import connections

from billing.models import Plan
from billing.services import subscription_for
from sessions.live import live_store
from sessions.models import Call
from telephony import services
from telephony.sip.server import SipServer, _codecs_for
from tests.support.sip import SipClient, options, sdp_offer
from tests.support.tenants import Tenant

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

NUMBER = "+15550102000"


@pytest.fixture
def phone_setup(tenant_a: Tenant) -> dict[str, Any]:
    persona = tenant_a.org.personas.get()
    by_address = services.trunk_create(
        org=tenant_a.org, name="carrier", allowed_addresses=["127.0.0.1"]
    )
    services.phone_number_create(org=tenant_a.org, number=NUMBER, persona=persona, trunk=by_address)
    digest = services.trunk_create(
        org=tenant_a.org, name="pbx", username="pbx-trunk", password="s3cret-pass"
    )
    services.phone_number_create(org=tenant_a.org, number="sales", persona=persona, trunk=digest)
    elsewhere = services.trunk_create(
        org=tenant_a.org, name="far", allowed_addresses=["203.0.113.0/24"]
    )
    services.phone_number_create(
        org=tenant_a.org, number="+15550102999", persona=persona, trunk=elsewhere
    )
    return {"org": tenant_a.org, "persona": persona}


@pytest.fixture
async def server(settings: Any, phone_setup: dict[str, Any]) -> AsyncIterator[SipServer]:
    settings.SIP_INVITE_BURST = 5
    settings.SIP_INVITES_PER_MINUTE = 6
    sip = SipServer(host="127.0.0.1", port=0, rtp_ports=(31000, 31999))
    await sip.start()
    try:
        yield sip
    finally:
        await sip.stop()
        await sync_to_async(connections.close_all)()


async def still_answers(client: SipClient) -> None:
    client.send(options(client.host, client.port, client.local_port))
    response = await client.any_response()
    assert response.status_code == 200


async def no_slot_held(org_id: int) -> None:
    assert await live_store().active(org_id=org_id) == 0
    assert await Call.objects.filter(org_id=org_id).acount() == 0


async def test_unknown_number_is_404(server: SipServer, phone_setup: dict[str, Any]) -> None:
    async with SipClient("127.0.0.1", server.port) as client:
        for user in ("+15559999999", "nobody", "%00", "a" * 300):
            invite = client.invite(user)
            client.send(invite.request(body=sdp_offer([0])))
            response = await client.final(invite.call_id)
            assert response.status_code == 404, user
        await still_answers(client)
    await no_slot_held(phone_setup["org"].pk)


async def test_number_found_in_any_form(server: SipServer, phone_setup: dict[str, Any]) -> None:
    """Carriers send "+1555...", "1555..." or the number as stored: all route. With the
    org's only slot taken, the call is refused for capacity (503), which shows the
    number and the trunk were accepted, and the refusal holds nothing."""
    org = phone_setup["org"]
    await sync_to_async(_cap_calls)(org, 1)
    store = live_store()
    assert await store.acquire(org_id=org.pk, call_id="someone-else", cap=1)
    try:
        async with SipClient("127.0.0.1", server.port) as client:
            for user in ("+15550102000", "15550102000"):
                invite = client.invite(user)
                client.send(invite.request(body=sdp_offer([0])))
                response = await client.final(invite.call_id)
                assert response.status_code == 503, user
                assert response.get_header("retry-after")
        assert await store.active(org_id=org.pk) == 1
    finally:
        await store.release(org_id=org.pk, call_id="someone-else")
    await no_slot_held(org.pk)


def _cap_calls(org: Any, cap: int) -> None:
    plan = Plan.objects.create(
        slug=f"cap-{org.pk}", name="Capped", max_concurrent_calls=cap, included_seconds=60_000
    )
    subscription = subscription_for(org_id=org.pk)
    subscription.plan = plan
    subscription.save(update_fields=["plan"])


async def test_address_not_allowed_is_403(server: SipServer, phone_setup: dict[str, Any]) -> None:
    async with SipClient("127.0.0.1", server.port) as client:
        invite = client.invite("+15550102999")  # its trunk sends from 203.0.113.0/24
        client.send(invite.request(body=sdp_offer([0])))
        assert (await client.final(invite.call_id)).status_code == 403
    await no_slot_held(phone_setup["org"].pk)


async def test_digest_trunk(server: SipServer, phone_setup: dict[str, Any]) -> None:
    org = phone_setup["org"]
    await sync_to_async(_cap_calls)(org, 1)
    store = live_store()
    assert await store.acquire(org_id=org.pk, call_id="someone-else", cap=1)
    try:
        async with SipClient("127.0.0.1", server.port) as client:
            invite = client.invite("sales")
            client.send(invite.request(body=sdp_offer([0])))
            challenge = await client.final(invite.call_id)
            assert challenge.status_code == 401
            assert 'realm="voiceapp"' in (challenge.get_header("www-authenticate") or "")
            client.send(invite.ack(challenge))

            wrong = invite.next_attempt()
            client.send(
                wrong.request(
                    body=sdp_offer([0]),
                    authorization=wrong.answer_challenge(challenge, "pbx-trunk", "wrong"),
                )
            )
            assert (await client.final(wrong.call_id)).status_code == 403

            right = wrong.next_attempt()
            client.send(
                right.request(
                    body=sdp_offer([0]),
                    authorization=right.answer_challenge(challenge, "pbx-trunk", "s3cret-pass"),
                )
            )
            # Past the trunk: refused only because the org's one slot is taken.
            assert (await client.final(right.call_id)).status_code == 503
    finally:
        await store.release(org_id=org.pk, call_id="someone-else")
    await no_slot_held(org.pk)


async def test_codec_we_do_not_speak_is_488(server: SipServer, phone_setup: dict[str, Any]) -> None:
    async with SipClient("127.0.0.1", server.port) as client:
        invite = client.invite(NUMBER)
        client.send(invite.request(body=sdp_offer([18, 3])))  # G.729 and GSM only
        response = await client.final(invite.call_id)
        assert response.status_code == 488
        no_sdp = client.invite(NUMBER)
        client.send(no_sdp.request())
        assert (await client.final(no_sdp.call_id)).status_code == 488
        await still_answers(client)
    await no_slot_held(phone_setup["org"].pk)
    assert server.ports._allocated == set()  # the RTP port it tried is free again


async def test_malformed_sip_leaves_the_server_up(
    server: SipServer, phone_setup: dict[str, Any]
) -> None:
    async with SipClient("127.0.0.1", server.port) as client:
        for junk in (
            b"",
            b"\x00\xff" * 100,
            b"INVITE\r\n\r\n",
            b"INVITE sip:x SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:1;branch=z9hG4bKx\r\n\r\n",
            b"SIP/2.0 200 OK\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"INVITE sip:+15550102000@127.0.0.1 SIP/2.0\r\nContent-Length: 99999\r\n\r\nx",
        ):
            client.send(junk)
        missing = client.invite(NUMBER)
        raw = missing.request(body=sdp_offer([0])).replace(b"CSeq: 1 INVITE\r\n", b"")
        client.send(raw)
        assert (await client.final(missing.call_id)).status_code == 400
        await still_answers(client)
    await no_slot_held(phone_setup["org"].pk)


async def test_invite_flood_is_rate_limited(server: SipServer, phone_setup: dict[str, Any]) -> None:
    async with SipClient("127.0.0.1", server.port) as client:
        statuses = []
        for _ in range(40):
            invite = client.invite("+15559999999")
            client.send(invite.request(body=sdp_offer([0])))
            statuses.append((await client.final(invite.call_id)).status_code)
        assert statuses[:5] == [404] * 5  # the burst is looked up
        assert set(statuses[5:]) == {503}  # the rest refused before any lookup
        assert server.stats.responses[503] == 35
        await still_answers(client)  # OPTIONS are not INVITEs
    await no_slot_held(phone_setup["org"].pk)


async def test_invites_beyond_those_being_checked_get_503(
    server: SipServer, phone_setup: dict[str, Any], settings: Any
) -> None:
    """INVITEs from many addresses at once are bounded too: past
    SIP_MAX_PENDING_INVITES being checked, the next is refused before any lookup, and
    holds no RTP port."""
    settings.SIP_MAX_PENDING_INVITES = 0
    async with SipClient("127.0.0.1", server.port) as client:
        invite = client.invite(NUMBER)
        client.send(invite.request(body=sdp_offer([0])))
        refused = await client.final(invite.call_id)
        assert refused.status_code == 503 and refused.get_header("retry-after")
        await still_answers(client)
    await no_slot_held(phone_setup["org"].pk)
    assert server.ports._allocated == set()


def test_wideband_codecs_are_chosen_where_offered() -> None:
    """Opus (under the caller's dynamic payload type) and G.722 before G.711."""
    opus = (
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
        "m=audio 4000 RTP/AVP 96 9 0 101\r\na=rtpmap:96 opus/48000/2\r\n"
        "a=rtpmap:9 G722/8000\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n"
    )
    assert _codecs_for(parse_sdp(opus)) == [96, 9]
    assert _codecs_for(parse_sdp(sdp_offer([0, 8]))) == [0, 8]
    assert _codecs_for(parse_sdp(sdp_offer([8, 9]))) == [9]
