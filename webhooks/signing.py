"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

``webhook-signature`` is ``v1,`` + base64(HMAC-SHA256(key, f"{id}.{timestamp}.{body}")),
the key being the base64-decoded part of the ``whsec_`` secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_generate() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def message_id_generate() -> str:
    return "msg_" + secrets.token_urlsafe(18)


def signature(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(
            secret=secret, msg_id=msg_id, timestamp=timestamp, body=body
        ),
    }
