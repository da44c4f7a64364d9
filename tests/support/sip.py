"""A bare SIP client over UDP for tests: builds requests by hand (so a test can
send what no user agent would) and reads the responses with aiosipua's parser."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from aiosipua import SipMessage, SipResponse
from aiosipua.auth import SipDigestAuth, build_credentials
from aiosipua.headers import parse_auth, stringify_auth

PCMU_OFFER = (
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "m=audio {port} RTP/AVP {payloads} 101\r\n{rtpmaps}"
    "a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n"
)
RTPMAPS = {0: "PCMU/8000", 8: "PCMA/8000", 9: "G722/8000", 18: "G729/8000", 3: "GSM/8000"}


def sdp_offer(payloads: list[int], port: int = 40000) -> str:
    rtpmaps = "".join(f"a=rtpmap:{pt} {RTPMAPS[pt]}\r\n" for pt in payloads)
    return PCMU_OFFER.format(port=port, payloads=" ".join(map(str, payloads)), rtpmaps=rtpmaps)


@dataclass
class Invite:
    """One INVITE's identity: retransmissions and the ACK reuse it."""

    to: str
    host: str
    port: int
    local_port: int
    from_user: str = "15550001111"
    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    branch: str = field(default_factory=lambda: "z9hG4bK" + uuid.uuid4().hex[:16])
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    cseq: int = 1

    @property
    def uri(self) -> str:
        return f"sip:{self.to}@{self.host}:{self.port}"

    def request(self, *, body: str = "", authorization: str | None = None) -> bytes:
        headers = [
            f"INVITE {self.uri} SIP/2.0",
            f"Via: SIP/2.0/UDP 127.0.0.1:{self.local_port};branch={self.branch};rport",
            "Max-Forwards: 70",
            f"From: <sip:{self.from_user}@127.0.0.1>;tag={self.tag}",
            f"To: <{self.uri}>",
            f"Call-ID: {self.call_id}",
            f"CSeq: {self.cseq} INVITE",
            f"Contact: <sip:{self.from_user}@127.0.0.1:{self.local_port}>",
            "User-Agent: voiceapp-tests",
        ]
        if authorization:
            headers.append(f"Authorization: {authorization}")
        if body:
            headers.append("Content-Type: application/sdp")
        headers.append(f"Content-Length: {len(body.encode())}")
        return ("\r\n".join(headers) + "\r\n\r\n" + body).encode()

    def answer_challenge(self, response: SipResponse, username: str, password: str) -> str:
        challenge = parse_auth(response.get_header("www-authenticate") or "")
        creds = build_credentials(SipDigestAuth(username, password), challenge, "INVITE", self.uri)
        assert creds is not None
        return stringify_auth(creds)

    def next_attempt(self) -> Invite:
        """The same call asked again (after a 401): a new transaction."""
        return Invite(
            self.to,
            self.host,
            self.port,
            self.local_port,
            self.from_user,
            self.call_id,
            tag=self.tag,
            cseq=self.cseq + 1,
        )

    def in_dialog(
        self, method: str, ok: SipResponse, cseq: int, *, body: str = "", content_type: str = ""
    ) -> bytes:
        """A request inside the dialog the 200 OK `ok` made (BYE, INFO...)."""
        lines = [
            f"{method} {self.uri} SIP/2.0",
            f"Via: SIP/2.0/UDP 127.0.0.1:{self.local_port};branch={_branch()};rport",
            "Max-Forwards: 70",
            f"From: <sip:{self.from_user}@127.0.0.1>;tag={self.tag}",
            f"To: {ok.get_header('to')}",
            f"Call-ID: {self.call_id}",
            f"CSeq: {cseq} {method}",
        ]
        if body:
            lines.append(f"Content-Type: {content_type}")
        lines.append(f"Content-Length: {len(body.encode())}")
        return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()

    def ack(self, response: SipResponse) -> bytes:
        to = response.get_header("to") or f"<{self.uri}>"
        lines = [
            f"ACK {self.uri} SIP/2.0",
            f"Via: SIP/2.0/UDP 127.0.0.1:{self.local_port};branch={self.branch};rport",
            "Max-Forwards: 70",
            f"From: <sip:{self.from_user}@127.0.0.1>;tag={self.tag}",
            f"To: {to}",
            f"Call-ID: {self.call_id}",
            f"CSeq: {self.cseq} ACK",
            "Content-Length: 0",
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _branch() -> str:
    return "z9hG4bK" + uuid.uuid4().hex[:16]


def options(host: str, port: int, local_port: int) -> bytes:
    lines = [
        f"OPTIONS sip:{host}:{port} SIP/2.0",
        f"Via: SIP/2.0/UDP 127.0.0.1:{local_port};branch=z9hG4bK{uuid.uuid4().hex[:16]};rport",
        "Max-Forwards: 70",
        f"From: <sip:probe@127.0.0.1>;tag={uuid.uuid4().hex[:8]}",
        f"To: <sip:{host}:{port}>",
        f"Call-ID: {uuid.uuid4().hex}",
        "CSeq: 1 OPTIONS",
        "Content-Length: 0",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, queue: asyncio.Queue[SipResponse]) -> None:
        self.queue = queue

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        try:
            message = SipMessage.parse(data)
        except Exception:
            return
        if isinstance(message, SipResponse):
            self.queue.put_nowait(message)


class SipClient:
    """Sends datagrams to the server and collects its responses."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.responses: asyncio.Queue[SipResponse] = asyncio.Queue()
        self._transport: asyncio.DatagramTransport | None = None
        self.local_port = 0

    async def __aenter__(self) -> SipClient:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Protocol(self.responses), local_addr=("127.0.0.1", 0)
        )
        self._transport = transport  # type: ignore[assignment]
        self.local_port = transport.get_extra_info("sockname")[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._transport is not None:
            self._transport.close()

    def invite(self, to: str, **kwargs: object) -> Invite:
        return Invite(to, self.host, self.port, self.local_port, **kwargs)  # type: ignore[arg-type]

    def send(self, data: bytes) -> None:
        assert self._transport is not None
        self._transport.sendto(data, (self.host, self.port))

    async def final(self, call_id: str, timeout_s: float = 10.0) -> SipResponse:
        """The next final (>= 200) response for `call_id`; provisional ones are skipped."""
        async with asyncio.timeout(timeout_s):
            while True:
                response = await self.responses.get()
                if response.call_id == call_id and response.status_code >= 200:
                    return response

    async def any_response(self, timeout_s: float = 5.0) -> SipResponse:
        async with asyncio.timeout(timeout_s):
            return await self.responses.get()
