"""Mutated SIP messages at the SIP endpoint (in-process, loopback UDP and TCP): the
server never crashes or answers 5xx other than 503, keeps answering OPTIONS, and
holds no call, slot or RTP port afterwards.

FUZZ_SIP_MESSAGES sets how many (500 by default, the suite's slice; `./dev bench
fuzz` sends 5,000), FUZZ_SEED the seed (printed, so a failure can be replayed).
Every INVITE that gets past the checks meets an organization whose one call slot
is taken, so none is answered: the fuzz is about parsing and refusing."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from sessions.live import live_store
from sessions.models import Call
from telephony import services
from telephony.sip.server import SipServer
from tests.support.sip import SipClient, options, sdp_offer
from tests.support.tenants import Tenant
from tests.telephony.test_sip_server import _cap_calls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

MESSAGES = int(os.environ.get("FUZZ_SIP_MESSAGES", "500"))
SEED = int(os.environ.get("FUZZ_SEED") or random.randrange(2**32))
NUMBER = "+15550104000"

TOKENS = [
    "",
    "0",
    "-1",
    "x",
    ":",
    ";",
    "<",
    ">",
    "@",
    "%00",
    "\t",
    "99999999999999999999",
    "sip:",
    "sips:x@y",
    "SIP/3.0",
    "INVITE",
    "z9hG4bK",
    "a" * 3000,
    "\u00e9",
    "\\",
    '"',
]
HEADERS = [
    "Via",
    "From",
    "To",
    "Call-ID",
    "CSeq",
    "Contact",
    "Max-Forwards",
    "Content-Length",
    "Content-Type",
    "Authorization",
    "Route",
    "Record-Route",
    "Session-Expires",
    "Require",
    "Supported",
    "Allow",
    "Expires",
    "Event",
    "Refer-To",
    "X-Room-ID",
]
METHODS = [
    "INVITE",
    "ACK",
    "BYE",
    "CANCEL",
    "OPTIONS",
    "REGISTER",
    "INFO",
    "UPDATE",
    "PRACK",
    "REFER",
    "NOTIFY",
    "SUBSCRIBE",
    "MESSAGE",
    "FOO",
    "",
]


def mutate(message: bytes, rng: random.Random) -> bytes:
    text = message.decode()
    head, _, body = text.partition("\r\n\r\n")
    lines = head.split("\r\n")
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(9)
        i = rng.randrange(len(lines))
        if kind == 0:  # drop a header
            if i:
                lines.pop(i)
        elif kind == 1:  # duplicate one
            lines.insert(i, lines[i])
        elif kind == 2:  # a header's value replaced
            name = lines[i].split(":", 1)[0] if i else rng.choice(HEADERS)
            lines[i] = f"{name}: {rng.choice(TOKENS)}"
        elif kind == 3:  # a new header
            lines.insert(max(1, i), f"{rng.choice(HEADERS)}: {rng.choice(TOKENS)}")
        elif kind == 4:  # the request line's parts
            parts = lines[0].split(" ")
            parts[rng.randrange(len(parts))] = rng.choice(TOKENS + METHODS)
            lines[0] = " ".join(parts)
        elif kind == 5:  # the SDP body mangled
            body_lines = body.split("\r\n")
            j = rng.randrange(len(body_lines))
            body_lines[j] = rng.choice(
                [*TOKENS, "m=audio 0 RTP/AVP", "c=IN IP4 0.0.0.0", "m=video 1 RTP/AVP 96"]
            )
            body = "\r\n".join(body_lines)
        elif kind == 6:  # bytes flipped
            raw = bytearray("\r\n".join(lines).encode())
            for _ in range(rng.randint(1, 8)):
                raw[rng.randrange(len(raw))] = rng.randrange(256)
            lines = raw.decode(errors="replace").split("\r\n") or [""]
        elif kind == 7:  # line endings
            lines[i] = lines[i] + rng.choice(["\n", "\r", " \r\n ", ""])
        else:  # the Content-Length lies
            lines.append(f"Content-Length: {rng.choice([0, 1, len(body) + 50, 10**9])}")
    data = ("\r\n".join(lines) + "\r\n\r\n" + body).encode(errors="replace")
    if rng.random() < 0.05:
        data = data[: rng.randrange(len(data) + 1)]
    return data


@pytest.fixture
async def server(settings: Any, tenant_a: Tenant) -> AsyncIterator[SipServer]:
    settings.SIP_INVITE_BURST = 100_000  # the fuzz is one address
    persona = await tenant_a.org.personas.aget()
    trunk = await sync_to_async(services.trunk_create)(
        org=tenant_a.org, name="fuzz", allowed_addresses=["127.0.0.1"]
    )
    await sync_to_async(services.phone_number_create)(
        org=tenant_a.org, number=NUMBER, persona=persona, trunk=trunk
    )
    await sync_to_async(_cap_calls)(tenant_a.org, 1)
    sip = SipServer(host="127.0.0.1", port=0, rtp_ports=(33000, 33999))
    # What earlier tests left to the garbage collector is collected now, not while
    # the test reads the asyncio log for this server's own tasks.
    gc.collect()
    await sip.start()
    try:
        yield sip
    finally:
        await sip.stop()
        await sync_to_async(connections.close_all)()


async def test_mutated_sip_messages(
    server: SipServer, tenant_a: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(SEED)
    print(f"fuzz sip: seed {SEED}, {MESSAGES} messages")
    store = live_store()
    org_id = tenant_a.org.pk
    assert await store.acquire(org_id=org_id, call_id="the-only-slot", cap=1)
    statuses: dict[int, int] = {}
    try:
        async with SipClient("127.0.0.1", server.port) as client:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            for n in range(MESSAGES):
                invite = client.invite(NUMBER)
                data = mutate(invite.request(body=sdp_offer([0, 8])), rng)
                if n % 10 == 9:  # every tenth over TCP; the server may drop the connection
                    if writer.is_closing() or reader.at_eof():
                        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                    try:
                        writer.write(data)
                        await writer.drain()
                    except ConnectionError:
                        writer.close()
                        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                else:
                    client.send(data)
                if n % 50 == 49:
                    await asyncio.sleep(0.05)  # let the checks (database reads) keep up
            for _ in range(300):  # every INVITE under check gets its answer
                if not server._checking:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            while not client.responses.empty():
                status = client.responses.get_nowait().status_code
                statuses[status] = statuses.get(status, 0) + 1
            writer.close()
            for _ in range(50):  # the server still answers
                client.send(options(client.host, client.port, client.local_port))
                try:
                    if (await client.any_response(timeout_s=0.5)).status_code == 200:
                        break
                except TimeoutError:
                    continue
            else:
                raise AssertionError("the server stopped answering OPTIONS")
    finally:
        await store.release(org_id=org_id, call_id="the-only-slot")
    print(f"fuzz sip: responses over UDP {dict(sorted(statuses.items()))}")
    print(f"fuzz sip: INVITEs refused by the server {dict(sorted(server.stats.responses.items()))}")
    assert not {s for s in statuses if s >= 500} - {503}, statuses
    assert server.calls == {} and not server._checking
    assert server.ports._allocated == set()
    assert await store.active(org_id=org_id) == 0
    assert await Call.objects.filter(org_id=org_id).acount() == 0
    crashes = [
        r
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.name.startswith(("telephony", "sessions", "asyncio"))
    ]
    assert not crashes, [r.getMessage() for r in crashes[:5]]
