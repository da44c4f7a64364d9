"""Signatures per Standard Webhooks, checked by the reference library."""

from __future__ import annotations

import base64
import json
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from webhooks.signing import headers, message_id_generate, secret_generate


def test_secrets_are_whsec_and_32_random_bytes() -> None:
    first, second = secret_generate(), secret_generate()

    assert first.startswith("whsec_") and first != second
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 32
    assert message_id_generate().startswith("msg_")


def test_the_reference_library_verifies_our_signature() -> None:
    secret = secret_generate()
    body = json.dumps(
        {"type": "call.ended", "data": {"call_id": "c1", "text": "héllo"}}, ensure_ascii=False
    ).encode()
    signed = headers(secret=secret, msg_id="msg_abc", timestamp=int(time.time()), body=body)

    assert set(signed) == {"webhook-id", "webhook-timestamp", "webhook-signature"}
    assert signed["webhook-signature"].startswith("v1,")
    assert Webhook(secret).verify(body, signed) == json.loads(body)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace(b"c1", b"c2"), signed)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret_generate()).verify(body, signed)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, {**signed, "webhook-id": "msg_other"})
