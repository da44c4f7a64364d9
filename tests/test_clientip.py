"""The client's IP comes from the connection, or with TRUSTED_PROXY_HOPS from
the entries our own proxies appended to X-Forwarded-For: never from what the
client wrote there."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client

from sessions.consumers import RealtimeConsumer
from sessions.models import Call
from tests.support.tenants import Tenant
from voiceapp.clientip import client_ip, client_ip_from_scope
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import PublishableKey
from voiceapp.tenants.services import publishable_key_create, secret_key_create


@pytest.mark.parametrize(
    ("remote", "forwarded", "hops", "expected"),
    [
        ("10.0.0.1", "", 0, "10.0.0.1"),
        ("10.0.0.1", "203.0.113.7", 0, "10.0.0.1"),  # no proxies: the header is the client's
        ("10.0.0.1", "203.0.113.7", 1, "203.0.113.7"),
        ("10.0.0.1", "6.6.6.6, 203.0.113.7", 1, "203.0.113.7"),  # the left part is forged
        ("10.0.0.1", "6.6.6.6, 203.0.113.7, 10.0.0.9", 2, "203.0.113.7"),
        ("10.0.0.1", "203.0.113.7", 2, "203.0.113.7"),  # skipped the outer proxy
        ("10.0.0.1", "", 1, "10.0.0.1"),
        ("10.0.0.1", "not-an-ip", 1, "10.0.0.1"),
        ("10.0.0.1", " 2001:db8::1 ", 1, "2001:db8::1"),
    ],
)
def test_client_ip(remote: str, forwarded: str, hops: int, expected: str) -> None:
    assert client_ip(remote_addr=remote, forwarded_for=forwarded, hops=hops) == expected


def test_scope_reads_repeated_headers_as_one_list(settings) -> None:  # type: ignore[no-untyped-def]
    settings.TRUSTED_PROXY_HOPS = 1
    scope = {
        "client": ("10.0.0.1", 5000),
        "headers": [(b"x-forwarded-for", b"6.6.6.6"), (b"X-Forwarded-For", b"203.0.113.7")],
    }

    assert client_ip_from_scope(scope) == "203.0.113.7"


# --- The widget's per-IP limit ----------------------------------------------------


@pytest.fixture
def widget_key(tenant_a: Tenant, settings) -> PublishableKey:  # type: ignore[no-untyped-def]
    settings.SESSION_START_RATE_LIMIT_PER_MIN = 2
    return publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://shop.example"]
    )


def start_widget(key: PublishableKey, forwarded_for: str, remote: str = "10.0.0.1") -> int:
    response = Client(REMOTE_ADDR=remote).post(
        "/v1/widget/sessions",
        {"key": key.key, "persona": "assistant"},
        content_type="application/json",
        headers={"Origin": "https://shop.example", "X-Forwarded-For": forwarded_for},
    )
    return response.status_code


@pytest.mark.django_db
def test_behind_a_proxy_each_client_has_its_own_limit(widget_key: PublishableKey, settings) -> None:  # type: ignore[no-untyped-def]
    # given one proxy of ours in front (it appends the address it saw)
    settings.TRUSTED_PROXY_HOPS = 1

    # when one visitor uses up the limit, then forges the left of the header
    first = [start_widget(widget_key, "203.0.113.7") for _ in range(3)]
    forged = start_widget(widget_key, "198.51.100.99, 203.0.113.7")
    # and another visitor comes through the same proxy
    other = start_widget(widget_key, "198.51.100.20")

    # then the forger is still limited and the other visitor is not
    assert first == [200, 200, 429]
    assert forged == 429
    assert other == 200


@pytest.mark.django_db
def test_without_proxies_the_header_is_ignored(widget_key: PublishableKey, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TRUSTED_PROXY_HOPS = 0

    codes = [start_widget(widget_key, f"198.51.100.{n}") for n in range(3)]

    assert codes == [200, 200, 429]


# --- The realtime WebSocket records the same address ------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_websocket_call_records_the_client_ip(tenant_a: Tenant, settings) -> None:  # type: ignore[no-untyped-def]
    settings.TRUSTED_PROXY_HOPS = 1
    Persona.objects.filter(org=tenant_a.org).update(agent_speaks_first=False)
    _, raw = secret_key_create(org=tenant_a.org, name="ws")

    async def scenario() -> dict[str, object]:
        communicator = WebsocketCommunicator(
            RealtimeConsumer.as_asgi(),
            "/v1/realtime?model=assistant",
            headers=[
                (b"authorization", f"Bearer {raw}".encode()),
                (b"x-forwarded-for", b"6.6.6.6, 203.0.113.7"),
            ],
        )
        communicator.scope["client"] = ("10.0.0.1", 5000)
        connected, _ = await communicator.connect(timeout=30)  # a loaded machine: not 1 s
        assert connected
        created = json.loads(await communicator.receive_from(timeout=30))
        await communicator.disconnect(code=1000, timeout=10)
        # The call's inference streams linger a few seconds after it ends (no worker
        # runs here to take its prompt read): as a server's loop would, outlive them,
        # or their Redis connections are closed after this loop is gone.
        deadline = asyncio.get_running_loop().time() + 30
        while others := asyncio.all_tasks() - {asyncio.current_task()}:  # they start others
            assert asyncio.get_running_loop().time() < deadline, others
            await asyncio.wait(others, timeout=1)
        return created  # type: ignore[no-any-return]

    created = asyncio.run(scenario())

    assert created["type"] == "session.created"
    assert Call.objects.get().client_info["ip"] == "203.0.113.7"
