"""The SIP endpoint: INVITEs in over UDP and TCP, each answered call a `PhoneCall`.

An INVITE is checked in this order, each failure a final response and
nothing held:

1. the sender's INVITE rate (`InviteLimiter`): 503 with Retry-After;
2. the dialled number (the request URI's user part): 404 when no number
   routes it to a persona;
3. the trunk (`TrunkAuthenticator`): an allowed address, or a digest answer
   (401 with a challenge first); 403 otherwise;
4. the offer: an SDP body with Opus, G722, PCMU or PCMA: 488 otherwise;
5. the call's admission (`start_realtime_session`: quota, the org's cap,
   the inference pool): 503 with Retry-After when busy, 403 when refused.

Then 200 OK with our SDP answer. A retransmitted INVITE still being checked
is ignored; a CANCEL before the answer ends the check and frees what it took."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib.util
import logging
import re
import socket
from dataclasses import dataclass, field
from typing import Any

from aiortp.port_allocator import PortAllocator
from aiosipua import CallSession, IncomingCall, SdpNegotiationError, SipRequest, SipUAS
from aiosipua.headers import parse_address, parse_uri
from aiosipua.transport import TcpSipTransport, UdpSipTransport, _UdpProtocol
from aiosipua.uac import SipUAC
from channels.db import database_sync_to_async
from django.conf import settings

from sessions import services
from sessions.auth import AuthError, CallGrant
from sessions.runner import call_id_from_session, start_realtime_session
from telephony.selectors import NumberRoute, TrunkCredentials, number_route
from telephony.services import trunk_password_of
from telephony.sip.auth import InviteLimiter, TrunkAuthenticator
from telephony.sip.call import PhoneCall
from telephony.sip.outbound import Dialer

log = logging.getLogger(__name__)

db = functools.partial(database_sync_to_async, thread_sensitive=False)

# Wideband where the caller offers it (Opus at 48 kHz, G.722 at 16 kHz: Whisper
# hears them better than 8 kHz), in the caller's order; else G.711. aiortp's Opus
# needs opuslib (and libopus), its G.722 the G722 package.
G722 = 9
NARROWBAND = [0, 8]  # PCMU, PCMA
HAS_G722 = importlib.util.find_spec("G722") is not None


def _opus_works() -> bool:
    try:  # opuslib raises a plain Exception when libopus is missing
        import opuslib  # noqa: F401
    except Exception:
        return False
    return True


HAS_OPUS = _opus_works()
USER_AGENT = "voiceapp"
RETRY_AFTER_S = 5


@dataclass
class SipServerStats:
    """What the server answered, by final status, for logs, metrics and tests."""

    responses: dict[int, int] = field(default_factory=dict)

    def count(self, status: int) -> None:
        self.responses[status] = self.responses.get(status, 0) + 1


def parse_port_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    first, last = int(low), int(high or low)
    if not 1024 <= first < last <= 65535:
        raise ValueError(f"SIP_RTP_PORTS {text!r}: give a range like 20000-20999")
    return first, last


def outgoing_address() -> str:
    """This machine's address towards the internet (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


class _UdpProtocol311(_UdpProtocol):
    """aiosipua asserts that the datagram transport is an `asyncio.DatagramTransport`,
    which Python 3.11's selector transport is not (it only became one in 3.12)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._owner._udp_transport = transport  # type: ignore[assignment]


class UdpTransport(UdpSipTransport):
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _UdpProtocol311(self), local_addr=self.local_addr
        )
        self._udp_transport = transport


class SipServer:
    def __init__(
        self,
        *,
        host: str | None = None,
        port: int | None = None,
        advertised_host: str | None = None,
        rtp_ports: tuple[int, int] | None = None,
        tcp: bool = True,
    ) -> None:
        self.host = host or settings.SIP_HOST
        self.port = settings.SIP_PORT if port is None else port
        self.advertised_host = (
            advertised_host
            or settings.SIP_ADVERTISED_HOST
            or (outgoing_address() if self.host in ("0.0.0.0", "") else self.host)
        )
        self.ports = PortAllocator(rtp_ports or parse_port_range(settings.SIP_RTP_PORTS))
        self.authenticator = TrunkAuthenticator(
            realm=settings.SIP_REALM,
            key=hashlib.sha256(b"sip nonce\x00" + settings.SECRET_KEY.encode()).digest(),
            password_of=trunk_password_of,
        )
        self.limiter = InviteLimiter(
            per_minute=settings.SIP_INVITES_PER_MINUTE, burst=settings.SIP_INVITE_BURST
        )
        self.stats = SipServerStats()
        self.calls: dict[str, PhoneCall] = {}
        self._checking: dict[str, asyncio.Task[None]] = {}
        self._invites: dict[str, IncomingCall] = {}  # the INVITEs being checked or answered
        self._tasks: set[asyncio.Task[Any]] = set()
        self._uas: list[SipUAS] = []
        self._use_tcp = tcp
        self.dialer: Dialer | None = None
        self._dialing: asyncio.Task[None] | None = None

    # --- start and stop ---

    async def start(self) -> None:
        ephemeral = self.port == 0
        for _ in range(20 if ephemeral else 1):
            udp = UdpTransport(local_addr=(self.host, 0 if ephemeral else self.port))
            await self._listen(udp)
            if ephemeral:  # tests: TCP takes the port UDP got, if it is free for TCP too
                self.port = self._bound_port(udp)
                udp.local_addr = (self.host, self.port)
                for uas in self._uas:
                    uas.advertised_addr = (self.advertised_host, self.port)
                    if uas.uac is not None:
                        uas.uac.advertised_addr = uas.advertised_addr
            if not self._use_tcp:
                break
            try:
                await self._listen(TcpSipTransport(local_addr=(self.host, self.port)))
                break
            except OSError:
                if not ephemeral:
                    raise
                await self.stop()
                self.port = 0
        log.info(
            "SIP listening on %s:%d (UDP%s), advertised as %s",
            self.host,
            self.port,
            ", TCP" if self._use_tcp else "",
            self.advertised_host,
        )

    async def _listen(self, transport: Any) -> None:
        # The UAC on the same transport sends our in-dialog requests (REFER) and
        # reads their responses.
        uac = SipUAC(transport, advertised_addr=(self.advertised_host, self.port))
        uas = SipUAS(
            transport,
            user_agent=USER_AGENT,
            uac=uac,
            advertised_addr=(self.advertised_host, self.port),
        )
        uas.on_invite = self._on_invite
        uas.on_transfer_progress = self._on_transfer_progress
        # aiosipua answers INFO with 405; keypad digits come that way from some PBXs
        uas._handlers["INFO"] = functools.partial(self._on_info, uas)
        uas.on_bye = self._on_bye
        uas.on_cancel = self._on_cancel
        uas.on_ack_timeout = self._on_ack_timeout
        await uas.start()  # raises OSError when the port is taken
        self._uas.append(uas)

    @staticmethod
    def _bound_port(transport: Any) -> int:
        udp = getattr(transport, "_udp_transport", None)
        return int(udp.get_extra_info("sockname")[1]) if udp is not None else 0

    @property
    def udp_uac(self) -> SipUAC | None:
        for uas in self._uas:
            if not getattr(uas.transport, "reliable", False):
                return uas.uac
        return None

    def start_dialing(self) -> None:
        """Dial the queued outbound calls (`POST /api/v1/calls/`) from now on."""
        if self._dialing is None:
            self.dialer = Dialer(self)
            self._dialing = asyncio.ensure_future(self.dialer.run())

    async def stop(self) -> None:
        if self._dialing is not None:
            self._dialing.cancel()
            assert self.dialer is not None
            await self.dialer.stop()
            self._dialing = None
        for task in list(self._checking.values()):
            task.cancel()
        await asyncio.gather(
            *(call.end("server_shutdown") for call in list(self.calls.values())),
            return_exceptions=True,
        )
        for uas in self._uas:
            await uas.stop()
        self._uas.clear()

    # --- signalling callbacks (called synchronously by aiosipua) ---

    def _on_invite(self, invite: IncomingCall) -> None:
        key = invite.call_id
        if key in self.calls or key in self._checking:
            # A retransmission of an INVITE we are answering (UDP resends it after
            # 500 ms): aiosipua has put a new IncomingCall in its place; put ours back,
            # or the ACK would stop the other one's 200 and ours would time out.
            ours = self._invites.get(key)
            for uas in self._uas:
                if ours is not None and uas.transport is invite.transport:
                    uas._calls[key] = ours
            return
        address = invite.source_addr[0]
        if not self.limiter.allow(address):
            log.warning("SIP: INVITE rate from %s exceeded; 503", address)
            self._reject(invite, 503, "Service Unavailable", {"Retry-After": str(RETRY_AFTER_S)})
            return
        if len(self._checking) >= settings.SIP_MAX_PENDING_INVITES:
            log.warning(
                "SIP: %d INVITEs already being checked; 503 to %s", len(self._checking), address
            )
            self._reject(invite, 503, "Service Unavailable", {"Retry-After": str(RETRY_AFTER_S)})
            return
        task = asyncio.ensure_future(self._check_and_answer(invite))
        self._checking[key] = task
        self._invites[key] = invite
        task.add_done_callback(functools.partial(self._checked, key))

    def _checked(self, key: str, _task: asyncio.Task[None]) -> None:
        self._checking.pop(key, None)
        if key not in self.calls:
            self._invites.pop(key, None)

    def _on_bye(self, invite: IncomingCall, _request: SipRequest) -> None:
        call = self.calls.get(invite.call_id)
        if call is not None:
            call.finish("hangup")
        self._forget(invite)

    def _on_cancel(self, request: SipRequest, _addr: tuple[str, int]) -> None:
        task = self._checking.get(request.call_id or "")
        if task is not None:
            task.cancel()

    def _on_info(self, uas: SipUAS, request: SipRequest, _addr: tuple[str, int]) -> None:
        """Keypad digits as SIP INFO (application/dtmf-relay "Signal=5", or
        application/dtmf "5"); other INFO bodies are acknowledged and ignored."""
        call = self.calls.get(request.call_id or "")
        if call is None:
            uas._send_error(request, 481, "Call/Transaction Does Not Exist")
            return
        if not uas._validate_in_dialog(call.invite.dialog, request):
            return
        response = call.invite.dialog.create_response(request, 200, "OK")
        uas.transport.send_reply(response)
        digit = info_digit(request.get_header("content-type") or "", request.text)
        if digit:
            call.press(digit)

    def _on_transfer_progress(self, call_id: str, status: int, reason: str) -> None:
        call = self.calls.get(call_id)
        if call is not None:
            call.transfer_progress(status, reason)

    def _uac_for(self, invite: IncomingCall) -> SipUAC | None:
        for uas in self._uas:
            if uas.transport is invite.transport:
                return uas.uac
        return None

    def _on_ack_timeout(self, invite: IncomingCall) -> None:
        call = self.calls.get(invite.call_id)
        if call is not None:
            call.finish("lost")

    # --- answering ---

    def _reject(
        self,
        invite: IncomingCall,
        status: int,
        reason: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.stats.count(status)
        with contextlib.suppress(Exception):
            invite._send_response(status, reason, extra_headers=headers)
            invite.dialog.terminate()
        self._forget(invite)

    def _forget(self, invite: IncomingCall) -> None:
        for uas in self._uas:
            if uas._calls.get(invite.call_id) is invite:
                uas._calls.pop(invite.call_id, None)
                with contextlib.suppress(Exception):
                    uas._remove_invite_transaction(invite.invite)

    async def _check_and_answer(self, invite: IncomingCall) -> None:
        request = invite.invite
        address = invite.source_addr[0]
        user = _dialled_user(request)
        try:
            route = await db(number_route)(user) if user else None
        except Exception:
            log.exception("SIP: looking up %r failed", user)
            self._reject(invite, 500, "Server Internal Error")
            return
        if route is None:
            log.info("SIP: no number %r (from %s); 404", user, address)
            self._reject(invite, 404, "Not Found")
            return
        verdict = self.authenticator.authorize(
            route.trunks,
            address=address,
            method=request.method,
            authorization=request.get_header("authorization"),
        )
        if verdict.trunk is None:
            if verdict.challenge is not None:
                self._reject(
                    invite,
                    401,
                    "Unauthorized",
                    {"WWW-Authenticate": verdict.challenge.header()},
                )
            else:
                log.warning(
                    "SIP: INVITE for %s from %s matches no trunk; 403", route.number, address
                )
                self._reject(invite, 403, "Forbidden")
            return
        if invite.sdp_offer is None or invite.sdp_offer.audio is None:
            self._reject(
                invite, 488, "Not Acceptable Here", {"Warning": '399 - "SDP offer needed"'}
            )
            return
        await self._answer(invite, route, verdict.trunk)

    async def _answer(
        self, invite: IncomingCall, route: NumberRoute, trunk: TrunkCredentials
    ) -> None:
        assert invite.sdp_offer is not None
        try:
            rtp_port, _ = await self.ports.allocate()
        except RuntimeError:
            log.error("SIP: no free RTP port; 503")
            self._reject(invite, 503, "Service Unavailable", {"Retry-After": str(RETRY_AFTER_S)})
            return
        try:
            rtp = CallSession(
                local_ip=self.host if self.host not in ("", "0.0.0.0") else "0.0.0.0",
                rtp_port=rtp_port,
                offer=invite.sdp_offer,
                advertised_ip=self.advertised_host,
                supported_codecs=_codecs_for(invite.sdp_offer),
                jitter_prefetch=2,
                symmetric_rtp=True,
            )
        except (SdpNegotiationError, ValueError) as exc:
            await self.ports.release(rtp_port)
            log.info("SIP: offer from %s refused: %s", invite.source_addr[0], exc)
            self._reject(
                invite,
                488,
                "Not Acceptable Here",
                {"Warning": '305 - "Opus, G722, PCMU or PCMA needed"'},
            )
            return
        try:
            _prepare_opus(rtp, invite.sdp_offer)
            await rtp.start()  # before the call's audio is set up: the codec's rate
            call = PhoneCall(
                invite=invite,
                rtp=rtp,
                on_closed=self._closed,
                uac=self._uac_for(invite),
                transfer_to=route.transfer_to,
                on_transferred=_record_transfer,
            )
            grant = CallGrant(
                org_id=route.org_id,
                persona_id=route.persona_id,
                persona_slug=route.persona_slug,
                session_config={},
                trunk_id=trunk.id,
                caller_number=_caller_user(invite),
            )
            session = await start_realtime_session(
                grant=grant,
                transport=call.transport,
                keypad=call.output,
                client_info={
                    "called": route.number,
                    "caller": _caller_user(invite),
                    "trunk": trunk.name,
                    "sip_call_id": invite.call_id[:200],
                    "codec": _codec_name(rtp.chosen_payload_type),
                    "remote_address": invite.source_addr[0],
                    "user_agent": (request_header(invite.invite, "user-agent") or "")[:200],
                },
            )
        except AuthError as exc:
            await _close_quietly(rtp)
            await self.ports.release(rtp_port)
            status, reason, headers = _refusal(exc)
            log.info(
                "SIP: call to %s refused: %s (%s); %d", route.number, exc.code, exc.message, status
            )
            self._reject(invite, status, reason, headers)
            return
        except asyncio.CancelledError:  # CANCEL from the caller while we checked
            await _close_quietly(rtp)
            await self.ports.release(rtp_port)
            raise
        except Exception:
            log.exception("SIP: starting the call to %s failed", route.number)
            await _close_quietly(rtp)
            await self.ports.release(rtp_port)
            self._reject(invite, 500, "Server Internal Error")
            return
        call.rtp_port = rtp_port  # type: ignore[attr-defined]
        self.calls[invite.call_id] = call
        invite.accept(rtp.sdp_answer)
        self.stats.count(200)
        log.info(
            "SIP: answered %s -> %s (trunk %s, %s), session %s",
            _caller_user(invite) or "?",
            route.number,
            trunk.name,
            _codec_name(rtp.chosen_payload_type),
            session.id,
        )
        call.begin(session)

    def _closed(self, call: PhoneCall) -> None:
        self.calls.pop(call.sip_call_id, None)
        self._invites.pop(call.sip_call_id, None)
        self._forget(call.invite)
        for uas in self._uas:  # an outbound call's dialog
            if uas.uac is not None:
                uas.uac._calls.pop(call.sip_call_id, None)
        port = getattr(call, "rtp_port", None)
        if port is not None:
            task = asyncio.ensure_future(self.ports.release(port))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


_SIGNAL = re.compile(r"^\s*signal\s*=\s*([0-9*#A-Da-d])\s*$", re.IGNORECASE | re.MULTILINE)


def info_digit(content_type: str, body: str) -> str:
    """The digit a SIP INFO carries, or "" (RFC 2976 bodies as PBXs send them)."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/dtmf-relay":
        found = _SIGNAL.search(body[:1000])
        return found.group(1).upper() if found else ""
    if kind == "application/dtmf":
        text = body.strip()[:2]
        return text.upper() if len(text) == 1 and text in "0123456789*#ABCDabcd" else ""
    return ""


async def _record_transfer(call: PhoneCall, target: str) -> None:
    call_id = call_id_from_session(call.session.id) if call.session is not None else None
    if call_id is not None:
        await db(services.call_transferred)(call_id=call_id, target=target)


def request_header(request: SipRequest, name: str) -> str | None:
    with contextlib.suppress(Exception):
        return request.get_header(name)
    return None


def _dialled_user(request: SipRequest) -> str:
    with contextlib.suppress(Exception):
        return parse_uri(request.uri).user or ""
    return ""


def _caller_user(invite: IncomingCall) -> str:
    with contextlib.suppress(Exception):
        address = parse_address(request_header(invite.invite, "from") or "")
        return (address.uri.user or "")[:64]
    return ""


def _codecs_for(offer: Any) -> list[int]:
    """The payload types we may answer with: the wideband codecs the caller offers
    (Opus under whatever dynamic payload type it gave it), else G.711."""
    wideband = []
    for codec in offer.audio.codecs if offer.audio is not None else []:
        if codec.payload_type == G722 and HAS_G722:
            wideband.append(G722)
        elif _is_opus(codec) and HAS_OPUS:
            wideband.append(codec.payload_type)
    return wideband or NARROWBAND


def _is_opus(codec: Any) -> bool:
    return bool(
        codec.encoding_name.lower() == "opus"
        and codec.clock_rate == 48000
        and 96 <= codec.payload_type <= 127
    )


def _prepare_opus(rtp: CallSession, offer: Any) -> None:
    """Opus chosen: aiortp makes its codec by payload type number, so the caller's
    dynamic one is registered for Opus; our answer names it as RFC 7587 has it
    (opus/48000/2: aiosipua leaves out the channels, and callers then find no match)."""
    pt = rtp.chosen_payload_type
    chosen = next((c for c in offer.audio.codecs if c.payload_type == pt), None)
    if chosen is None or not _is_opus(chosen):
        return
    from aiortp.codecs import register_codec
    from aiortp.codecs.opus import OpusCodec

    register_codec(pt, OpusCodec)
    audio = rtp.sdp_answer.audio
    if audio is not None:
        maps = audio.attributes.get("rtpmap", [])
        audio.attributes["rtpmap"] = [
            f"{pt} opus/48000/2" if m.split()[0] == str(pt) else m for m in maps
        ]


def _codec_name(payload_type: int) -> str:
    names = {0: "PCMU", 8: "PCMA", 9: "G722"}
    return names.get(payload_type, "opus" if 96 <= payload_type <= 127 else str(payload_type))


def _refusal(exc: AuthError) -> tuple[int, str, dict[str, str]]:
    if exc.status in (429, 503):
        return 503, "Service Unavailable", {"Retry-After": str(exc.retry_after or RETRY_AFTER_S)}
    return 403, "Forbidden", {"Warning": f'399 - "{exc.code}"'}


async def _close_quietly(rtp: CallSession) -> None:
    with contextlib.suppress(Exception):
        await rtp.close()
