"""ICE servers for WebRTC clients: STUN, and TURN with time-limited credentials
in the form coturn's REST API expects (``--use-auth-secret``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any

from django.conf import settings


def turn_credentials(
    *, user: str, secret: str, ttl_s: int, now: float | None = None
) -> tuple[str, str]:
    """username = "<expiry unix time>:<user>", credential = base64(HMAC-SHA1(secret, username))."""
    expires = int((now if now is not None else time.time()) + ttl_s)
    username = f"{expires}:{user}"
    digest = hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()
    return username, base64.b64encode(digest).decode()


def ice_servers(*, user: str) -> list[dict[str, Any]]:
    servers: list[dict[str, Any]] = []
    if settings.WEBRTC_STUN_URLS:
        servers.append({"urls": list(settings.WEBRTC_STUN_URLS)})
    if settings.TURN_URLS and settings.TURN_SECRET:
        username, credential = turn_credentials(
            user=user, secret=settings.TURN_SECRET, ttl_s=settings.TURN_CREDENTIAL_TTL_S
        )
        servers.append(
            {"urls": list(settings.TURN_URLS), "username": username, "credential": credential}
        )
    return servers
