"""Who may go on with a call: resuming only what dropped, once, by the same key,
in a slot of its own; and calls that end when their key is revoked."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from sessions.auth import (
    AuthError,
    CallGrant,
    client_secret_create,
    grant_from_client_secret_sync,
    grant_from_secret_key_sync,
)
from sessions.consumers import RealtimeConsumer
from sessions.live import live_store
from sessions.models import Call
from sessions.runner import start_realtime_session
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import PublishableKey, SecretKey
from voiceapp.tenants.services import (
    publishable_key_create,
    publishable_key_revoke,
    secret_key_create,
    secret_key_revoke,
)

pytestmark = pytest.mark.django_db(transaction=True)


def key_grant(tenant: Tenant, name: str = "calls") -> tuple[SecretKey, CallGrant]:
    key, raw = secret_key_create(org=tenant.org, name=name)
    return key, grant_from_secret_key_sync(raw, model="assistant")


def call_id_of(session_id: str) -> str:
    return str(uuid.UUID(session_id.removeprefix("sess_")))


async def start(grant: CallGrant, resume: str | None = None) -> Any:
    return await start_realtime_session(
        grant=grant, transport=ListTransport(), client_info={}, resume=resume
    )


async def refusal(grant: CallGrant, resume: str) -> str:
    try:
        session = await start(grant, resume=resume)
    except AuthError as exc:
        return exc.code
    await session.close("hangup")
    return "resumed"


# --- Resume ----------------------------------------------------------------------


def test_a_connected_call_cannot_be_resumed_past_the_cap(
    tenant_a: Tenant, quiet_persona: Persona, settings
) -> None:  # type: ignore[no-untyped-def]
    # given an org at its cap of two connected calls
    settings.ORG_MAX_CONCURRENT_CALLS = 2
    _, grant = key_grant(tenant_a)

    async def scenario() -> tuple[list[str], int]:
        first, second = await start(grant), await start(grant)
        try:
            # when more sockets try to "resume" a call that is still connected
            codes = [await refusal(grant, first.id) for _ in range(3)]
            active = await live_store().active(org_id=grant.org_id)
        finally:
            await first.close("hangup")
            await second.close("hangup")
        return codes, active

    codes, active = asyncio.run(scenario())

    # then each is refused, and the org still has two calls
    assert codes == ["resume_not_possible"] * 3
    assert active == 2


def test_a_lost_call_resumes_once_per_drop(
    tenant_a: Tenant, quiet_persona: Persona, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_RESUME_WINDOW_S = 5
    _, grant = key_grant(tenant_a)

    async def scenario() -> tuple[bool, list[str], str]:
        first = await start(grant)
        await first.close("lost")
        resumed = await start(grant, resume=first.id)
        # a second socket for the same drop, while the resumed one runs
        again_while_live = await refusal(grant, first.id)
        await resumed.close("lost")  # a new drop: resumable again, once
        after_second_drop = [await refusal(grant, first.id), await refusal(grant, first.id)]
        return resumed.id == first.id, after_second_drop, again_while_live

    same_call, after_second_drop, again_while_live = asyncio.run(scenario())

    assert same_call
    assert again_while_live == "resume_not_possible"
    assert after_second_drop == ["resumed", "resume_not_possible"]


def test_a_resumed_call_takes_a_slot(tenant_a: Tenant, quiet_persona: Persona, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ORG_MAX_CONCURRENT_CALLS = 1
    settings.CALL_RESUME_WINDOW_S = 5
    _, grant = key_grant(tenant_a)

    async def scenario() -> tuple[str, str]:
        dropped = await start(grant)
        await dropped.close("lost")
        other = await start(grant)  # the freed slot is taken by a new call
        at_cap = await refusal(grant, dropped.id)
        await other.close("hangup")
        # the refusal did not spend the drop: with a free slot it resumes
        return at_cap, await refusal(grant, dropped.id)

    at_cap, with_room = asyncio.run(scenario())

    assert at_cap == "concurrency_limit"
    assert with_room == "resumed"


def test_only_the_same_key_resumes(tenant_a: Tenant, quiet_persona: Persona, settings) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_RESUME_WINDOW_S = 5
    _, grant = key_grant(tenant_a, "first")
    _, other_key_grant = key_grant(tenant_a, "second")

    async def scenario() -> tuple[str, str]:
        session = await start(grant)
        await session.close("lost")
        return await refusal(other_key_grant, session.id), await refusal(grant, session.id)

    other, same = asyncio.run(scenario())

    assert other == "resume_not_possible"
    assert same == "resumed"


def test_a_widget_call_resumes_only_with_its_publishable_key(
    tenant_a: Tenant, quiet_persona: Persona, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_RESUME_WINDOW_S = 5
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.example"]
    )
    other_pk = publishable_key_create(
        org=tenant_a.org, name="other", allowed_origins=["https://shop.example"]
    )

    def widget_grant(key: PublishableKey) -> CallGrant:
        _, raw = client_secret_create(
            org=tenant_a.org, persona=quiet_persona, ttl_s=60, publishable_key=key
        )
        return grant_from_client_secret_sync(raw, model="assistant")

    grants = [widget_grant(pk), widget_grant(other_pk), widget_grant(pk)]

    async def scenario() -> tuple[str, str]:
        session = await start(grants[0])
        await session.close("lost")
        return await refusal(grants[1], session.id), await refusal(grants[2], session.id)

    other, same = asyncio.run(scenario())

    assert other == "resume_not_possible"
    assert same == "resumed"


# --- Revocation --------------------------------------------------------------------


async def wait_closed(transport: ListTransport, timeout_s: float) -> float:
    started = time.monotonic()
    while transport.closed is None:
        assert time.monotonic() - started < timeout_s, "the call did not end"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


def test_revoking_a_secret_key_ends_its_live_calls(
    tenant_a: Tenant, quiet_persona: Persona
) -> None:
    # given a running call on a secret key (the default check interval)
    key, grant = key_grant(tenant_a)
    _, other_grant = key_grant(tenant_a, "untouched")

    async def scenario() -> tuple[float, ListTransport, ListTransport, int]:
        transport, bystander = ListTransport(), ListTransport()
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        other = await start_realtime_session(grant=other_grant, transport=bystander, client_info={})
        await asyncio.sleep(0.5)
        # when the key is revoked
        await database_sync_to_async(secret_key_revoke)(key=key)
        took = await wait_closed(transport, timeout_s=5.0)
        await session.ended.wait()
        active = await live_store().active(org_id=grant.org_id)
        await other.close("hangup")
        return took, transport, bystander, active

    took, transport, bystander, active = asyncio.run(scenario())

    # then within 5 s the caller gets an error event, then the socket closes
    assert took < 5.0
    errors = [e for e in transport.events if e["type"] == "error"]
    assert [e["error"]["code"] for e in errors] == ["api_key_revoked"]
    assert transport.events[-1] is errors[-1]
    assert transport.closed == (1000, "revoked")
    call = Call.objects.get(pk=call_id_of(transport.events[0]["session"]["id"]))
    assert call.end_reason == "revoked" and call.ended_at is not None
    assert active == 1  # only the other key's call holds a slot
    assert bystander.closed is None
    assert not [e for e in bystander.events if e["type"] == "error"]


def test_revoking_a_publishable_key_ends_its_widget_calls(
    tenant_a: Tenant, quiet_persona: Persona, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.CALL_KEY_CHECK_S = 0.5
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.example"]
    )
    _, raw = client_secret_create(
        org=tenant_a.org, persona=quiet_persona, ttl_s=60, publishable_key=pk
    )
    grant = grant_from_client_secret_sync(raw, model="assistant")

    async def scenario() -> ListTransport:
        transport = ListTransport()
        session = await start_realtime_session(grant=grant, transport=transport, client_info={})
        await database_sync_to_async(publishable_key_revoke)(key=pk)
        await wait_closed(transport, timeout_s=3.0)
        await session.ended.wait()
        return transport

    transport = asyncio.run(scenario())

    assert [e["error"]["code"] for e in transport.events if e["type"] == "error"] == [
        "publishable_key_revoked"
    ]
    assert Call.objects.get().end_reason == "revoked"


def test_client_secrets_die_with_the_key_that_minted_them(
    tenant_a: Tenant, quiet_persona: Persona, client
) -> None:  # type: ignore[no-untyped-def]
    # given client secrets minted by a secret key (over HTTP) and by a widget key
    key, raw_key = secret_key_create(org=tenant_a.org, name="server")
    made = client.post(
        "/v1/realtime/client_secrets",
        {"session": {"type": "realtime", "model": "assistant"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw_key}"},
    )
    assert made.status_code == 200, made.content
    pk = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.example"]
    )
    widget = client.post(
        "/v1/widget/sessions",
        {"key": pk.key, "persona": "assistant"},
        content_type="application/json",
        headers={"Origin": "https://shop.example"},
    )
    assert widget.status_code == 200, widget.content

    # when both keys are revoked before the secrets are used
    secret_key_revoke(key=key)
    publishable_key_revoke(key=pk)

    # then neither secret opens a call
    codes = []
    for raw in (made.json()["value"], widget.json()["client_secret"]["value"]):
        with pytest.raises(AuthError) as exc:
            grant_from_client_secret_sync(raw, model="assistant")
        codes.append(exc.value.code)
    assert codes == ["client_secret_revoked", "client_secret_revoked"]


def test_client_secrets_remember_who_minted_them(
    tenant_a: Tenant, quiet_persona: Persona, client
) -> None:  # type: ignore[no-untyped-def]
    key, raw_key = secret_key_create(org=tenant_a.org, name="server")
    made = client.post(
        "/v1/realtime/client_secrets",
        {"session": {"type": "realtime", "model": "assistant"}},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw_key}"},
    )

    grant = grant_from_client_secret_sync(made.json()["value"], model="assistant")

    assert grant.secret_key_id == key.pk
    assert grant.principal == f"sk:{key.pk}"


def test_a_websocket_call_on_a_revoked_key_gets_an_error_then_closes(
    tenant_a: Tenant, quiet_persona: Persona
) -> None:
    key, raw = secret_key_create(org=tenant_a.org, name="ws")

    async def scenario() -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
        communicator = WebsocketCommunicator(
            RealtimeConsumer.as_asgi(),
            "/v1/realtime?model=assistant",
            headers=[(b"authorization", f"Bearer {raw}".encode())],
        )
        connected, _ = await communicator.connect(timeout=30)  # a loaded machine: not 1 s
        assert connected
        events = [json.loads(await communicator.receive_from(timeout=30))]
        await database_sync_to_async(secret_key_revoke)(key=key)
        revoked_at = time.monotonic()
        while True:
            message = await communicator.receive_output(timeout=6)
            if message["type"] == "websocket.close":
                took = time.monotonic() - revoked_at
                break
            events.append(json.loads(message["text"]))
        # as daphne does once the server has closed: the consumer then ends itself
        # (cancelling it instead can hang on the Redis channel layer's receive)
        await communicator.disconnect(code=1000, timeout=10)
        # the server's end of the call is recorded by its own task: let it run
        async with asyncio.timeout(15):
            while await Call.objects.filter(ended_at=None).aexists():  # noqa: ASYNC110
                await asyncio.sleep(0.1)  # a database row to poll, not an event
        return took, events, message

    took, events, close = asyncio.run(scenario())

    assert took < 5.0
    assert events[0]["type"] == "session.created"
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "api_key_revoked"
    assert close["code"] == 1000
    assert Call.objects.get().end_reason == "revoked"
