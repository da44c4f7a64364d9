"""A real call in-process (the runner, a realtime session, the recorder): the
receiver gets call.started and call.ended, signed, with the transcript."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from standardwebhooks import Webhook

from sessions.runner import start_realtime_session
from tests.sessions.test_runner import grant_for, wait_ended
from tests.support.tenants import Tenant
from tests.support.transports import ListTransport
from tests.support.webhook_receiver import Receiver
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_short_call_is_reported_to_the_webhook(tenant_a: Tenant, receiver: Receiver) -> None:
    _, secret = webhook_endpoint_create(
        org=tenant_a.org, url=receiver.url, events=["call.started", "call.ended"]
    )
    grant = grant_for(tenant_a)

    async def call() -> str:
        session = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}
        )
        await session.handle_text(
            '{"type": "conversation.item.create", "item": {"type": "message",'
            ' "role": "user", "content": [{"type": "input_text",'
            ' "text": "Please call me back tomorrow."}]}}'
        )
        await session.close("hangup")
        call_id = str(uuid.UUID(session.id.removeprefix("sess_")))
        await wait_ended(call_id)
        return call_id

    call_id = asyncio.run(call())

    messages = [Webhook(secret).verify(r.body, r.headers) for r in receiver.received]
    assert [m["type"] for m in messages] == ["call.started", "call.ended"]
    assert {m["data"]["call_id"] for m in messages} == {call_id}
    ended = messages[1]["data"]
    assert ended["end_reason"] == "hangup" and ended["persona"] == "assistant"
    assert ended["duration_s"] is not None
    assert ("user", "Please call me back tomorrow.") in [
        (t["role"], t["text"]) for t in ended["transcript"]
    ]
