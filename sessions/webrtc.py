"""WebRTC transport: one aiortc peer per call, in the web process.

`POST /v1/realtime/calls` takes an SDP offer (bearer: an ephemeral client
secret) and answers with the SDP answer. Microphone audio arrives on the
media track (Opus, decoded to 48 kHz stereo) and goes to the session as PCM16;
the agent's audio goes back on our outgoing track, paced as 20 ms frames at
48 kHz. Protocol events travel as JSON on the data channel `oai-events`, which
the client opens. A `WebRTCCall` owns the peer, the session and every task
they need; the module's registry owns the calls until they end.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import fractions
import json
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import aioice.ice
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCDataChannel,
    RTCIceServer,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError
from aiortc.sdp import SessionDescription
from asgiref.sync import sync_to_async
from av import AudioFrame
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from billing.services import quota_guard
from sessions.auth import AuthError, CallGrant, grant_from_client_secret
from sessions.ice import ice_servers
from sessions.models import ClientSecret
from sessions.playout import AudioQueue, FrameClock
from sessions.realtime import new_id
from sessions.realtime.limits import (
    MAX_CHANNEL_BUFFERED_BYTES,
    MAX_INBOUND_MESSAGES,
    MAX_PENDING_EVENTS,
)
from sessions.rtp_input import install_input_buffer
from sessions.runner import call_id_from_session, start_realtime_session
from sessions.wind_down import cancel_others, close_session, settle
from voiceapp.tenants.services import token_hash

log = logging.getLogger(__name__)

RATE = 48000
FRAME_MS = 20
FRAME_SAMPLES = RATE * FRAME_MS // 1000
EVENTS_LABEL = "oai-events"
MAX_OFFER_BYTES = 64 * 1024
CLIENT_GONE = frozenset({"hangup", "lost", "error"})  # end reasons where nobody is listening


# ----- outgoing audio --------------------------------------------------------


class OutputAudioTrack(MediaStreamTrack):
    """Agent audio as 20 ms PCM16 mono frames at 48 kHz, paced against the clock.

    `write()` appends audio at any rate (resampled here); `recv()` hands the
    sender one frame per 20 ms, silence when nothing is queued. The queue is
    small because the engine releases audio only a little ahead of real time;
    `clear()` drops it on barge-in.
    """

    kind = "audio"

    def __init__(self, *, max_buffer_ms: int = 10_000) -> None:
        super().__init__()
        self.queue = AudioQueue(RATE, max_buffer_ms=max_buffer_ms)
        self._clock = FrameClock(FRAME_MS / 1000)

    @property
    def buffered_ms(self) -> int:
        return self.queue.buffered_ms

    @property
    def frames_sent(self) -> int:
        return self.queue.frames_taken

    @property
    def audio_frames_sent(self) -> int:
        """Frames that carried agent audio."""
        return self.queue.audio_frames_taken

    def write(self, pcm: bytes, sample_rate: int) -> None:
        """Queue PCM16 mono audio at `sample_rate`."""
        self.queue.write(pcm, sample_rate)

    def clear(self) -> None:
        """Drop queued audio now (barge-in)."""
        self.queue.clear()

    async def drained(self) -> None:
        """Wait until every queued frame was handed to the sender."""
        await self.queue.drained()

    async def recv(self) -> AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        await self._clock.tick()
        frame = AudioFrame(format="s16", layout="mono", samples=FRAME_SAMPLES)
        frame.planes[0].update(self.queue.take(FRAME_SAMPLES))
        frame.pts = self._clock.frames * FRAME_SAMPLES
        frame.sample_rate = RATE
        frame.time_base = fractions.Fraction(1, RATE)
        return frame


# ----- the transport the realtime session talks to ---------------------------


class Session(Protocol):
    """What this module needs from `sessions.realtime.RealtimeSession`."""

    async def handle_text(self, raw: str) -> None: ...
    def push_audio(self, pcm: bytes, sample_rate: int, channels: int) -> None: ...
    async def run(self) -> None: ...
    async def close(self, reason: str) -> None: ...


class WebRTCTransport:
    """Events on the `oai-events` data channel, audio on the outgoing track.

    Events sent before the client's data channel is open are kept (in order,
    bounded) and delivered when it opens. On an open channel, a client that
    stops reading lets unsent data pile up in the SCTP buffer; past
    `MAX_CHANNEL_BUFFERED_BYTES` the call ends as lost instead.
    """

    name = "webrtc"
    audio_as_events = False

    def __init__(
        self, output: OutputAudioTrack, on_close: Callable[[str], Awaitable[None]]
    ) -> None:
        self.output = output
        self.channel: RTCDataChannel | None = None
        self._pending: deque[str] = deque(maxlen=MAX_PENDING_EVENTS)
        self._on_close = on_close
        self.close_code: int | None = None
        self.close_reason: str | None = None

    def attach(self, channel: RTCDataChannel) -> None:
        self.channel = channel
        if channel.readyState == "open":
            self._drain()
        else:
            channel.on("open", self._drain)

    def _drain(self) -> None:
        channel = self.channel
        while channel is not None and channel.readyState == "open" and self._pending:
            channel.send(self._pending.popleft())

    async def send_event(self, event: dict[str, Any]) -> None:
        text = json.dumps(event, separators=(",", ":"))
        channel = self.channel
        if channel is not None and channel.readyState == "open":
            if channel.bufferedAmount + len(text) > MAX_CHANNEL_BUFFERED_BYTES:
                if self.close_code is None:
                    log.info(
                        "data channel: %d bytes unread; ending the call", channel.bufferedAmount
                    )
                    await self.close(1011, "lost")
                return
            self._drain()
            channel.send(text)
        elif channel is None or channel.readyState == "connecting":
            self._pending.append(text)

    async def send_audio(self, pcm: bytes, sample_rate: int) -> None:
        self.output.write(pcm, sample_rate)

    def flush_audio(self) -> None:
        self.output.clear()

    async def close(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        await self._on_close(reason)


# ----- ICE -------------------------------------------------------------------


def install_loopback_filter() -> None:
    """Have aioice offer only 127.0.0.1 host candidates while WEBRTC_LOOPBACK_ONLY is on.

    aioice looks host addresses up through one module function; we wrap it
    once, on the first peer made with the setting on, and the wrapper reads
    the setting on every call.
    """
    current = aioice.ice.get_host_addresses
    if getattr(current, "loopback_filter", False):
        return

    def host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        if settings.WEBRTC_LOOPBACK_ONLY:
            return ["127.0.0.1"] if use_ipv4 else []
        return current(use_ipv4, use_ipv6)

    host_addresses.loopback_filter = True  # type: ignore[attr-defined]
    aioice.ice.get_host_addresses = host_addresses


def server_ice_servers() -> list[RTCIceServer]:
    """The server peer's ICE servers: the STUN ones from settings, none on loopback.

    Only STUN: it lets a server behind NAT learn its public address; relaying
    is for the browser side, which gets the TURN credentials.
    """
    if settings.WEBRTC_LOOPBACK_ONLY:
        install_loopback_filter()
        return []
    stun: list[str] = []
    for server in ice_servers(user="server"):
        urls = server.get("urls", [])
        for url in [urls] if isinstance(urls, str) else urls:
            if url.startswith("stun:"):
                stun.append(url)
    return [RTCIceServer(urls=stun[:1])] if stun else []


# ----- one call --------------------------------------------------------------


class OfferError(ValueError):
    """The SDP offer cannot be answered."""


def _describe(exc: Exception) -> str:
    """A failed check in aiortc as words for the client (a bare assert has none)."""
    return str(exc) or f"{type(exc).__name__} while reading it"


async def close_peer(pc: RTCPeerConnection) -> None:
    """`pc.close()`, also for a peer whose offer failed halfway: aiortc's close then
    trips over a transceiver that never got a transport, so what it skipped is
    stopped here."""
    try:
        await pc.close()
        return
    except Exception as exc:
        log.debug("closing a half-made peer: %r", exc)
    transports: list[Any] = [t.receiver.transport for t in pc.getTransceivers()]
    if pc.sctp is not None:
        transports.append(pc.sctp.transport)
    for dtls in transports:
        if dtls is None:
            continue
        for transport in (dtls, dtls.transport):  # DTLS, then its ICE transport
            with contextlib.suppress(Exception):
                await transport.stop()


class CallState(enum.Enum):
    NEW = "new"
    CONNECTING = "connecting"  # answered, waiting for ICE and DTLS
    CONNECTED = "connected"
    CLOSING = "closing"
    CLOSED = "closed"


TRANSITIONS = {
    CallState.NEW: {CallState.CONNECTING, CallState.CLOSING},
    CallState.CONNECTING: {CallState.CONNECTED, CallState.CLOSING},
    CallState.CONNECTED: {CallState.CLOSING},
    CallState.CLOSING: {CallState.CLOSED},
    CallState.CLOSED: set(),
}


class WebRTCCall:
    """One peer connection and its realtime session, from offer to hangup.

    Ends when the session ends (its reason), the client hangs up ("hangup":
    it closed the peer, the data channel or the track), ICE/DTLS fails
    ("lost"), or the peer does not connect within `connect_timeout_s`
    ("error"). The end reason goes to the session and the call record.
    """

    def __init__(self, *, connect_timeout_s: float = 15.0) -> None:
        self.id = f"rtc_{uuid.uuid4().hex[:24]}"
        self.state = CallState.NEW
        self.connect_timeout_s = connect_timeout_s
        self.output = OutputAudioTrack()
        self.transport = WebRTCTransport(self.output, self._on_transport_close)
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=server_ice_servers()))
        self.session: Session | None = None
        self.end_reason: str | None = None
        self._connected = asyncio.Event()
        self._ended = asyncio.Event()
        self._closed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._messages: asyncio.Queue[str] = asyncio.Queue(maxsize=MAX_INBOUND_MESSAGES)
        self._inputs: list[MediaStreamTrack] = []
        self.pc.on("track", self._on_track)
        self.pc.on("datachannel", self._on_datachannel)
        self.pc.on("connectionstatechange", self._on_connection_state)

    async def answer(
        self, offer_sdp: str, start_session: Callable[[WebRTCTransport], Awaitable[Session]]
    ) -> str:
        """Apply the offer and create the answer, then start the session; return the answer.

        Everything the offer can break happens before `start_session`, which
        spends the client secret: an offer that cannot be answered is an
        `OfferError` and leaves the secret as it was.
        """
        try:
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
        except Exception as exc:  # aiortc checks offers with asserts as well as ValueErrors
            await close_peer(self.pc)
            raise OfferError(f"the SDP offer cannot be used: {_describe(exc)}") from exc
        audio = [t for t in self.pc.getTransceivers() if t.kind == "audio"]
        if not audio:
            await close_peer(self.pc)
            raise OfferError("the SDP offer has no audio media section")
        try:
            self.pc.addTrack(self.output)
            await self.pc.setLocalDescription(await self.pc.createAnswer())
        except Exception as exc:
            await close_peer(self.pc)
            raise OfferError(f"the SDP offer cannot be answered: {_describe(exc)}") from exc
        try:
            self.session = await start_session(self.transport)
        except BaseException:
            await close_peer(self.pc)
            raise
        self._move(CallState.CONNECTING)
        if self._connected.is_set():  # ICE and DTLS may finish while the session starts
            self._move(CallState.CONNECTED)
        _calls[self.id] = self
        self._spawn(self._message_loop())
        for track in self._inputs:
            self._spawn(self._read_audio(track))
        self._spawn(self._lifetime())
        return str(self.pc.localDescription.sdp)

    def _move(self, state: CallState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise RuntimeError(f"call {self.id}: {self.state.value} -> {state.value} not allowed")
        self.state = state

    # --- peer events ---

    def _on_track(self, track: MediaStreamTrack) -> None:
        # Fired while the offer is applied, before the session exists.
        if track.kind == "audio":
            self._inputs.append(track)
            for receiver in self.pc.getReceivers():
                if receiver.track is track:
                    install_input_buffer(receiver, settings.WEBRTC_INPUT_JITTER_FRAMES)

    def _on_datachannel(self, channel: RTCDataChannel) -> None:
        if channel.label != EVENTS_LABEL:
            log.info("call %s: ignoring data channel %r", self.id, channel.label)
            return
        channel.on("message", self._on_message)
        channel.on("close", lambda: self._finish_soon("hangup"))
        self.transport.attach(channel)

    def _on_message(self, message: str | bytes) -> None:
        if isinstance(message, bytes):
            message = message.decode("utf-8", errors="replace")
        try:
            self._messages.put_nowait(message)
        except asyncio.QueueFull:  # the client sends faster than its events are handled
            busy = {
                "type": "error",
                "event_id": new_id("event"),
                "error": {
                    "type": "invalid_request_error",
                    "code": "rate_limit_exceeded",
                    "message": f"More than {MAX_INBOUND_MESSAGES} events are waiting; "
                    "this one was dropped.",
                    "param": None,
                    "event_id": None,
                },
            }
            self._spawn(self.transport.send_event(busy))

    def _on_connection_state(self) -> None:
        state = self.pc.connectionState
        log.debug("call %s: connection %s", self.id, state)
        if state == "connected":
            self._connected.set()
            if self.state is CallState.CONNECTING:
                self._move(CallState.CONNECTED)
        elif state == "failed":
            self._finish_soon("lost")
        elif state == "closed":
            self._finish_soon("hangup")

    async def _on_transport_close(self, reason: str) -> None:
        self._finish_soon(reason or "hangup")

    def _finish_soon(self, reason: str) -> None:
        if self.end_reason is None:
            self.end_reason = reason
        self._ended.set()

    # --- tasks ---

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read_audio(self, track: MediaStreamTrack) -> None:
        session = self.session
        while session is not None:
            try:
                frame = await track.recv()
            except MediaStreamError:  # the client closed the peer
                self._finish_soon("hangup")
                return
            assert isinstance(frame, AudioFrame)
            pcm = np.ascontiguousarray(frame.to_ndarray()).tobytes()
            try:
                session.push_audio(pcm, frame.sample_rate, len(frame.layout.channels))
            except (ValueError, RuntimeError) as exc:  # the call closed or bad audio
                log.info("call %s: input audio stopped: %s", self.id, exc)
                return

    async def _message_loop(self) -> None:
        while self.session is not None:
            raw = await self._messages.get()
            try:
                await self.session.handle_text(raw)
            except Exception:  # the session answers bad events itself; this is a bug
                log.exception("call %s: handling a client event failed", self.id)

    async def _lifetime(self) -> None:
        assert self.session is not None
        run = asyncio.ensure_future(self.session.run())
        ended = asyncio.ensure_future(self._ended.wait())
        watchdog = asyncio.ensure_future(self._connect_watchdog())
        waits = {run, ended, watchdog}
        try:
            await asyncio.wait({run, ended}, return_when=asyncio.FIRST_COMPLETED)
            if run.done() and self.end_reason is None:
                self.end_reason = self.transport.close_reason or "hangup"
        finally:
            for task in (ended, watchdog):
                task.cancel()
            await self._shutdown(run)
            await asyncio.gather(*waits, return_exceptions=True)

    async def _connect_watchdog(self) -> None:
        try:
            await asyncio.wait_for(self._connected.wait(), self.connect_timeout_s)
        except TimeoutError:
            self._finish_soon("error")

    async def _shutdown(self, run: asyncio.Future[None] | None = None) -> None:
        if self.state in (CallState.CLOSING, CallState.CLOSED):
            return
        self._move(CallState.CLOSING)
        reason = self.end_reason or "closed"
        label = f"call {self.id}"
        log.info("%s: ending (%s)", label, reason)
        await close_session(
            self.session,
            reason,
            label=label,
            timeout_s=5.0,
            output=self.output,
            listening=reason not in CLIENT_GONE,
        )
        await settle(run, label=label, timeout_s=5.0)
        self.output.stop()
        await self.pc.close()
        await cancel_others(self._tasks)
        self._move(CallState.CLOSED)
        self._closed.set()
        _calls.pop(self.id, None)

    async def end(self, reason: str) -> None:
        """End the call now (hangup, server shutdown)."""
        self._finish_soon(reason)
        lifetime_running = any(not t.done() for t in self._tasks)
        if not lifetime_running:
            await self._shutdown()

    async def wait_closed(self) -> None:
        await self._closed.wait()


_calls: dict[str, WebRTCCall] = {}


def active_calls() -> list[WebRTCCall]:
    return list(_calls.values())


_background: set[asyncio.Task[None]] = set()


def _end_in_background(call: WebRTCCall) -> None:
    if call.state is CallState.CLOSED:
        return
    task = asyncio.get_running_loop().create_task(call.end("hangup"), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)


async def close_all(reason: str = "server_shutdown") -> None:
    """End every call of this process (on shutdown)."""
    calls = active_calls()
    for call in calls:
        await call.end(reason)
    for call in calls:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(call.wait_closed(), 10.0)


# ----- HTTP ------------------------------------------------------------------

CORS_HEADERS = {
    # The bearer client secret is the credential (no cookies), and the widget
    # runs on customers' sites: any origin may call.
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Expose-Headers": "Location",
    "Access-Control-Max-Age": "600",
}

ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    503: "server_error",
}


def error_response(
    status: int,
    code: str,
    message: str,
    type_: str | None = None,
    headers: dict[str, str] | None = None,
) -> JsonResponse:
    body = {
        "error": {
            "type": type_ or ERROR_TYPES.get(status, "invalid_request_error"),
            "code": code,
            "message": message,
        }
    }
    return JsonResponse(body, status=status, headers={**CORS_HEADERS, **(headers or {})})


def parse_offer(body: bytes) -> str:
    """The offer's SDP text, checked enough to answer it. Raises OfferError."""
    if not body:
        raise OfferError("the request body must be an SDP offer")
    if len(body) > MAX_OFFER_BYTES:
        raise OfferError(f"the SDP offer is larger than {MAX_OFFER_BYTES} bytes")
    try:
        sdp = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OfferError("the SDP offer is not UTF-8 text") from exc
    if not sdp.lstrip().startswith("v=0"):
        raise OfferError("the SDP offer must start with v=0")
    try:
        parsed = SessionDescription.parse(sdp)
    except Exception as exc:  # the parser fails on bad input with whatever it tripped over
        raise OfferError(f"the SDP offer cannot be parsed: {_describe(exc)}") from exc
    if not any(m.kind == "audio" for m in parsed.media):
        raise OfferError("the SDP offer has no audio media section")
    for media in parsed.media:  # what aiortc would refuse later, after the secret is spent
        ice = media.ice
        if ice is None or not ice.usernameFragment or not ice.password:
            raise OfferError("the SDP offer has no ICE username fragment or password")
        if not media.dtls or not media.dtls.fingerprints:
            raise OfferError("the SDP offer has no DTLS fingerprint")
        if media.kind == "audio" and not media.rtcp_mux:
            raise OfferError("the SDP offer must use RTCP multiplexing (a=rtcp-mux)")
    return sdp


@sync_to_async
def _usable_client_secret_org(raw: str, *, model: str | None) -> int | None:
    """The organization of `raw` when it looks like a live client secret for `model`,
    without spending it: a cheap check before any peer is made. Spending it is the
    real check."""
    if not raw.startswith("ek_") or len(raw) > 128:
        return None
    secret = (
        ClientSecret.objects.filter(
            value_hash=token_hash(raw), used_at=None, expires_at__gt=timezone.now()
        )
        .select_related("persona")
        .first()
    )
    if secret is None or (model and model != secret.persona.slug):
        return None
    return int(secret.org_id)


def _bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _client_info(request: HttpRequest) -> dict[str, str]:
    return {
        "ip": request.META.get("REMOTE_ADDR", ""),
        "user_agent": request.headers.get("User-Agent", "")[:300],
        "origin": request.headers.get("Origin", "")[:200],
    }


@csrf_exempt
async def calls_create(request: HttpRequest) -> HttpResponse:
    """`POST /v1/realtime/calls`: SDP offer in, SDP answer out (201, Location)."""
    if request.method == "OPTIONS":
        return HttpResponse(status=204, headers=CORS_HEADERS)
    if request.method != "POST":
        return error_response(405, "method_not_allowed", "Use POST with an SDP offer.")
    if request.content_type != "application/sdp":
        return error_response(
            415, "unsupported_media_type", "Send the SDP offer with Content-Type: application/sdp."
        )
    try:
        offer = parse_offer(request.body)
    except OfferError as exc:
        return error_response(400, "invalid_offer", str(exc))
    token = _bearer(request)
    if token is None:
        return error_response(
            401, "missing_authorization", "Send an ephemeral client secret as a Bearer token."
        )
    model = request.GET.get("model")
    grant: CallGrant | None = None
    try:
        org_id = await _usable_client_secret_org(token, model=model)
        if org_id is None:
            # Spending it fails with the exact reason (used, expired, another persona...).
            grant = await grant_from_client_secret(token, model=model)
            org_id = grant.org_id
        await sync_to_async(quota_guard)(org_id=org_id)  # before any media work
    except AuthError as exc:
        return error_response(exc.status, exc.code, exc.message, headers=exc.headers)

    call = WebRTCCall(connect_timeout_s=settings.WEBRTC_CONNECT_TIMEOUT_S)
    info = _client_info(request)

    async def start(transport: WebRTCTransport) -> Session:
        # Called once the answer exists: only an offer we can answer spends the secret.
        spent = grant or await grant_from_client_secret(token, model=model)
        session: Session = await start_realtime_session(
            grant=spent, transport=transport, client_info=info
        )
        return session

    # The call outlives this request: run it in a fresh context, not in the
    # request's (whose thread-sensitive executor is shut down with the response).
    loop = asyncio.get_running_loop()
    answering = loop.create_task(call.answer(offer, start), context=contextvars.Context())
    try:
        answer = await asyncio.shield(answering)
    except asyncio.CancelledError:  # the client went away while we answered
        answering.add_done_callback(lambda _: _end_in_background(call))
        raise
    except OfferError as exc:
        return error_response(400, "invalid_offer", str(exc))
    except AuthError as exc:
        return error_response(exc.status, exc.code, exc.message, headers=exc.headers)
    except Exception:
        log.exception("call %s: could not answer the offer", call.id)
        return error_response(
            500, "server_error", "The call could not be started; try again.", "server_error"
        )
    call_id = call_id_from_session(str(getattr(call.session, "id", ""))) or call.id
    return HttpResponse(
        answer,
        status=201,
        content_type="application/sdp",
        headers={**CORS_HEADERS, "Location": f"/v1/realtime/calls/{call_id}"},
    )
