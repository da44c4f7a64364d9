"""The OpenAI-Realtime WebSocket endpoint: ``/v1/realtime?model=<persona slug>``.

Thin: authenticate, hand events to the `RealtimeSession`, send what it gives
back. The consumer itself is the session's transport."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from autobahn.exception import Disconnected
from channels.generic.websocket import AsyncWebsocketConsumer

from sessions.auth import AuthError, grant_from_client_secret, grant_from_secret_key
from sessions.realtime import RealtimeSession, new_id
from sessions.runner import start_realtime_session
from voiceapp.clientip import client_ip_from_scope

log = logging.getLogger(__name__)

SECRET_SUBPROTOCOL = "openai-insecure-api-key."
# 4503 for server_busy: ASGI servers let an application close only with 1000 or
# 3000-4999 (daphne refuses 1013, "try again later", with an exception)
CLOSE_CODES = {400: 4000, 401: 4001, 402: 4002, 403: 4003, 404: 4004, 429: 4029, 503: 4503}


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


class RealtimeConsumer(AsyncWebsocketConsumer):
    name = "websocket"
    audio_as_events = True
    session: RealtimeSession | None = None
    # Nothing is ever sent to a call's socket through the channel layer. Left on,
    # the consumer would listen there too, and a Redis restart would close every
    # call's socket (no alias: no layer, see channels' get_channel_layer).
    channel_layer_alias = None

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        model = query.get("model", [None])[0]
        resume = query.get("resume", [None])[0]
        offered = list(self.scope.get("subprotocols", []))
        client_secret = next(
            (p[len(SECRET_SUBPROTOCOL) :] for p in offered if p.startswith(SECRET_SUBPROTOCOL)),
            None,
        )
        await self.accept(subprotocol="realtime" if "realtime" in offered else None)
        try:
            authorization = _header(self.scope, b"authorization")
            if authorization:
                scheme, _, raw = authorization.partition(" ")
                if scheme.lower() != "bearer" or not raw.strip():
                    raise AuthError("invalid_api_key", "Use “Authorization: Bearer sk_...”.")
                grant = await grant_from_secret_key(raw.strip(), model=model)
            elif client_secret:
                grant = await grant_from_client_secret(client_secret, model=model)
            else:
                raise AuthError(
                    "missing_api_key",
                    "Authenticate with “Authorization: Bearer sk_...” or a client secret "
                    "subprotocol “openai-insecure-api-key.ek_...”.",
                )
            info = {
                "ip": client_ip_from_scope(self.scope),
                "user_agent": _header(self.scope, b"user-agent")[:300],
                "origin": _header(self.scope, b"origin")[:200],
            }
            self.session = await start_realtime_session(
                grant=grant, transport=self, client_info=info, resume=resume
            )
        except AuthError as exc:
            await self.send_event(
                {
                    "type": "error",
                    "event_id": new_id("event"),
                    "error": {**exc.as_error(), "param": None, "event_id": None},
                }
            )
            await self.close(code=CLOSE_CODES.get(exc.status, 4000), reason=exc.code)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.session is None:
            return
        if text_data is None:
            await self.session.send_error(
                "invalid_event", "Send events as JSON text frames, not binary frames."
            )
            return
        await self.session.handle_text(text_data)

    async def disconnect(self, code: int) -> None:
        if self.session is not None:
            reason = "hangup" if code in (1000, 1001) else "lost"
            await self.session.close(self.session.end_reason or reason)

    # ----- Transport -----------------------------------------------------------

    async def send_event(self, event: dict[str, Any]) -> None:
        try:
            await self.send(text_data=json.dumps(event, separators=(",", ":")))
        except Disconnected:
            # The client hung up while an event was on its way: `disconnect` ends the
            # call with the client's reason (a hang-up is no server error).
            log.info("client gone: %s not sent", event.get("type"))

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None:
        raise NotImplementedError("the WebSocket carries audio as events")

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        await super().close(code=code, reason=reason)
