"""Quotas and plan limits where calls start and while they run: the WebSocket
consumer, the HTTP endpoints that start calls, and a call cut off mid-way."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import websockets
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.db import connections
from django.test import Client as DjangoClient

from billing.models import Plan, Subscription, UsageRecord
from billing.services import subscription_for, subscription_set_remaining
from sessions.auth import AuthError, client_secret_create, grant_from_secret_key_sync
from sessions.consumers import RealtimeConsumer
from sessions.models import Call
from sessions.runner import start_realtime_session
from tests.sessions.test_realtime_ws import of_type, raw_connect
from tests.support.calls import wait_calls_ended
from tests.support.live_server import LiveServer
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from voiceapp.personas.models import Persona
from voiceapp.tenants.services import publishable_key_create, secret_key_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def use_plan(tenant: Tenant, **fields: Any) -> Plan:
    plan = Plan.objects.create(
        name=fields.pop("name", "Test"), slug=fields.pop("slug", "test"), **fields
    )
    sub = subscription_for(org_id=tenant.org.pk)
    Subscription.objects.filter(pk=sub.pk).update(plan=plan)
    return plan


async def receive_until_close(communicator: WebsocketCommunicator, timeout_s: float) -> Any:
    events: list[dict[str, Any]] = []
    while True:
        message = await communicator.receive_output(timeout=timeout_s)
        if message["type"] == "websocket.close":
            return events, message
        events.append(json.loads(message["text"]))


# --- At the start ----------------------------------------------------------------


def test_a_websocket_call_without_quota_gets_an_error_then_closes(
    tenant_a: Tenant, quiet_persona: Persona
) -> None:
    # given an org on a hard-capped plan with nothing left
    _, raw = secret_key_create(org=tenant_a.org, name="ws")
    call_command("set_quota", org=tenant_a.org.slug, seconds=0)

    async def scenario() -> Any:
        communicator = WebsocketCommunicator(
            RealtimeConsumer.as_asgi(),
            "/v1/realtime?model=assistant",
            headers=[(b"authorization", f"Bearer {raw}".encode())],
        )
        connected, _ = await communicator.connect(timeout=30)  # a loaded machine: not 1 s
        assert connected
        result = await receive_until_close(communicator, timeout_s=30)
        # as daphne does once the server has closed: the consumer then ends itself
        # (cancelling it instead can hang on the Redis channel layer's receive)
        await communicator.disconnect(code=1000, timeout=10)
        return result

    # when a call is placed
    events, close = asyncio.run(scenario())

    # then it gets one error event, the socket closes, and no call was opened
    assert [e["type"] for e in events] == ["error"]
    assert events[0]["error"]["code"] == "insufficient_quota"
    assert close["code"] == 4002
    assert not Call.objects.exists()


def test_http_starts_without_quota_are_402(
    tenant_a: Tenant, quiet_persona: Persona, client: DjangoClient
) -> None:
    _, raw = secret_key_create(org=tenant_a.org, name="server")
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.example"]
    )
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=0)

    made = client.post(
        "/v1/realtime/client_secrets",
        {"session": {"type": "realtime", "model": "assistant"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    widget = client.post(
        "/v1/widget/sessions",
        {"key": pk.key, "persona": "assistant"},
        content_type="application/json",
        headers={"Origin": "https://shop.example"},
    )

    assert made.status_code == 402 and made.json()["error"]["code"] == "insufficient_quota"
    assert widget.status_code == 402 and widget.json()["error"]["code"] == "insufficient_quota"
    assert widget.headers["Access-Control-Allow-Origin"] == "https://shop.example"

    # and with time left both work again
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=60)
    again = client.post(
        "/v1/realtime/client_secrets",
        {"session": {"type": "realtime", "model": "assistant"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert again.status_code == 200


async def test_a_webrtc_offer_without_quota_is_402(
    tenant_a: Tenant, quiet_persona: Persona
) -> None:
    from bench.rtc import Client as Peer
    from sessions import webrtc
    from tests.sessions.test_webrtc import post_offer

    secret = (
        await sync_to_async(client_secret_create)(org=tenant_a.org, persona=quiet_persona, ttl_s=60)
    )[1]
    await sync_to_async(subscription_set_remaining)(org_id=tenant_a.org.pk, seconds=0)
    webrtc.install_loopback_filter()
    peer = Peer()
    try:
        reply = await post_offer(await peer.offer(), secret)
    finally:
        await peer.close()
        await sync_to_async(connections.close_all)()

    assert reply.status_code == 402
    assert json.loads(reply.content)["error"]["code"] == "insufficient_quota"
    assert not await Call.objects.aexists()


def test_calls_in_progress_count_against_the_quota(
    tenant_a: Tenant, quiet_persona: Persona
) -> None:
    # given 20 s left and a call that has run for 30 s
    _, raw = secret_key_create(org=tenant_a.org, name="k")
    grant = grant_from_secret_key_sync(raw, model="assistant")
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=20)

    async def scenario() -> str:
        first = await start_realtime_session(grant=grant, transport=ListTransport(), client_info={})
        try:
            started_at = (await Call.objects.aget()).started_at
            await Call.objects.aupdate(started_at=started_at - timedelta(seconds=30))
            try:
                second = await start_realtime_session(
                    grant=grant, transport=ListTransport(), client_info={}
                )
            except AuthError as exc:
                return exc.code
            await second.close("hangup")
            return "started"
        finally:
            await first.close("hangup")

    assert asyncio.run(scenario()) == "insufficient_quota"


def test_the_plans_cap_and_max_duration_apply(tenant_a: Tenant, quiet_persona: Persona) -> None:
    quiet_persona.max_call_duration_s = 600
    quiet_persona.save()
    use_plan(tenant_a, included_seconds=3600, max_concurrent_calls=1, max_call_duration_s=120)
    _, raw = secret_key_create(org=tenant_a.org, name="k")
    grant = grant_from_secret_key_sync(raw, model="assistant")

    async def scenario() -> tuple[float, str]:
        first = await start_realtime_session(grant=grant, transport=ListTransport(), client_info={})
        try:
            try:
                await start_realtime_session(grant=grant, transport=ListTransport(), client_info={})
            except AuthError as exc:
                return first.limits.max_duration_s, exc.code
            return first.limits.max_duration_s, "started"
        finally:
            await first.close("hangup")

    assert asyncio.run(scenario()) == (120, "concurrency_limit")


# --- During the call ---------------------------------------------------------------


def test_a_plan_with_overage_runs_past_the_included_time(
    tenant_a: Tenant, quiet_persona: Persona
) -> None:
    use_plan(tenant_a, included_seconds=3600, overage_price_per_minute=Decimal("0.05"))
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=0)
    _, raw = secret_key_create(org=tenant_a.org, name="k")
    grant = grant_from_secret_key_sync(raw, model="assistant")

    async def scenario() -> ListTransport:
        transport = ListTransport()
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        await asyncio.sleep(2.5)
        await session.close("hangup")
        return transport

    transport = asyncio.run(scenario())

    assert transport.closed is None  # the server did not end it
    record = UsageRecord.objects.get()
    assert record.end_reason == "hangup"
    assert record.included_seconds == 0 and record.overage_seconds == record.billed_seconds >= 3


def test_a_call_is_cut_off_when_the_quota_runs_out(
    voice_server: LiveServer, tenant_a: Tenant, quiet_persona: Persona
) -> None:
    # given an org with 4 s of included time left on a plan without overage
    _, raw = secret_key_create(org=tenant_a.org, name="cut")
    call_command("set_quota", org=tenant_a.org.slug, seconds=4)

    async def scenario() -> tuple[list[dict[str, Any]], float, int | None]:
        ws = await raw_connect(voice_server, raw)
        started = time.monotonic()
        events = []
        with pytest.raises(websockets.ConnectionClosed):
            async with asyncio.timeout(60):
                while True:
                    events.append(json.loads(await ws.recv()))
        return events, time.monotonic() - started, ws.close_code

    # when the call runs
    events, lasted, code = asyncio.run(scenario())
    wait_calls_ended()

    # then it hears a goodbye, gets the error, and the call ends cleanly, billed once
    assert 4 <= lasted < 30
    goodbye = of_type(events, "response.output_audio_transcript.done")[0]["transcript"]
    assert "minutes" in goodbye.lower()
    assert of_type(events, "response.output_audio.delta"), "the notice was not spoken"
    assert of_type(events, "error")[-1]["error"]["code"] == "insufficient_quota"
    assert code == 1000
    call = Call.objects.get()
    assert call.end_reason == "quota_exhausted"
    record = UsageRecord.objects.get()
    assert record.call_ref == call.pk and record.included_seconds == 4
    assert record.tts_characters >= len(goodbye)
    assert Subscription.objects.get(org=tenant_a.org).remaining_seconds == 0


def test_a_dropped_call_cannot_resume_without_quota_but_stays_resumable(
    tenant_a: Tenant, quiet_persona: Persona, settings: Any
) -> None:
    settings.CALL_RESUME_WINDOW_S = 5
    _, raw = secret_key_create(org=tenant_a.org, name="k")
    grant = grant_from_secret_key_sync(raw, model="assistant")

    async def start(resume: str | None = None) -> Any:
        return await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}, resume=resume
        )

    async def scenario() -> tuple[str, bool]:
        dropped = await start()
        await dropped.close("lost")
        await sync_to_async(subscription_set_remaining)(org_id=tenant_a.org.pk, seconds=0)
        try:
            await start(resume=dropped.id)
            refused = "resumed"
        except AuthError as exc:
            refused = exc.code
        await sync_to_async(subscription_set_remaining)(org_id=tenant_a.org.pk, seconds=60)
        resumed = await start(resume=dropped.id)
        await resumed.close("hangup")
        return refused, resumed.id == dropped.id

    assert asyncio.run(scenario()) == ("insufficient_quota", True)
