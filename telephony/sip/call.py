"""One answered phone call: its RTP stream and its realtime session, from the
200 OK to the BYE.

The call ends when the caller hangs up (BYE: "hangup"), the session ends it
(the agent's goodbye, the idle timeout, the maximum duration, an error: we
let the last words play, then send BYE), the ACK never comes ("lost"), a
transfer goes through ("transferred"), or the server shuts down.

A transfer: the persona's `transfer_call` action speaks the handoff text; once
it has played, we send the caller's side a REFER (RFC 3515) to the persona's
`transfer_to` (a SIP URI, or a number sent to the trunk the call came from)
and follow its NOTIFYs. A final 2xx ends our leg with BYE and records where the
caller went; a failure or no answer within `TRANSFER_WAIT_S` leaves the call
with the agent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiosipua import CallSession, IncomingCall
from aiosipua.uac import SipUAC

from sessions.realtime import new_id
from sessions.wind_down import cancel_others, close_session, settle
from telephony.sip.media import DigitCollector, PhoneAudioOut, PhoneTransport

log = logging.getLogger(__name__)

CLIENT_GONE = frozenset({"hangup", "lost"})  # nobody is listening any more
KEYPAD_PREFIX = "(keypad)"
TRANSFER_WAIT_S = 30.0
HANDOFF_PLAY_WAIT_S = 15.0


def refer_target(transfer_to: str, invite: IncomingCall) -> str:
    """The Refer-To URI: a SIP URI as given; a number at the host the call came from
    (the trunk or PBX routes it)."""
    if transfer_to.startswith(("sip:", "sips:")):
        return transfer_to
    return f"sip:{transfer_to}@{invite.source_addr[0]}:{invite.source_addr[1]}"


class Session(Protocol):
    """What this module needs of `sessions.realtime.RealtimeSession`."""

    id: str

    async def handle_text(self, raw: str) -> None: ...
    def push_audio(self, pcm: bytes, sample_rate: int, channels: int) -> None: ...
    async def run(self) -> None: ...
    async def close(self, reason: str) -> None: ...


def keypad_events(entry: str) -> list[str]:
    """The client events that put a keypad entry in the conversation and ask for a reply."""
    item = {
        "type": "conversation.item.create",
        "event_id": new_id("event"),
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": f"{KEYPAD_PREFIX} {entry}"}],
        },
    }
    reply = {"type": "response.create", "event_id": new_id("event")}
    return [json.dumps(item), json.dumps(reply)]


class PhoneCall:
    def __init__(
        self,
        *,
        invite: IncomingCall,
        rtp: CallSession,
        on_closed: Callable[[PhoneCall], None],
        uac: SipUAC | None = None,
        transfer_to: str = "",
        on_transferred: Callable[[PhoneCall, str], Awaitable[None]] | None = None,
        hang_up_after_greeting: bool = False,
        sending: asyncio.Task[None] | None = None,
        output: PhoneAudioOut | None = None,
        early_audio: bytearray | None = None,
    ) -> None:
        """`early_audio`: what the other side said before the session started (an
        automated menu heard while we found out who answered), heard by the
        session first, with what comes until it starts."""
        self.invite = invite
        self.rtp = rtp
        # an outbound call's stream is already going (silence while it listened)
        self.output = output or PhoneAudioOut(rtp)
        self._sending = sending
        self.transport = PhoneTransport(
            self.output, self._on_transport_close, on_handoff=self._on_handoff
        )
        self.uac = uac
        self.transfer_to = transfer_to
        self.transferred_to: str | None = None
        self._on_transferred = on_transferred
        self._transfer_result: asyncio.Future[tuple[int, str]] | None = None
        self._hang_up_after_greeting = hang_up_after_greeting
        self.digits = DigitCollector(self._keypad)
        self.keypad: list[str] = []
        self.session: Session | None = None
        self.end_reason: str | None = None
        self._on_closed = on_closed
        self._ended = asyncio.Event()
        self._closed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._early = early_audio
        rtp.on_audio = self._on_audio
        rtp.on_dtmf = self._on_dtmf

    @property
    def sip_call_id(self) -> str:
        return self.invite.call_id

    def begin(self, session: Session) -> None:
        """The session started and the call was answered: run it."""
        self.session = session
        if self._early:
            session.push_audio(bytes(self._early), self.output.rate, 1)
        self._early = None
        if self._sending is not None:
            self._tasks.add(self._sending)
        else:
            self._spawn(self.output.run())
        self._spawn(self._lifetime())
        if self._hang_up_after_greeting:
            self._spawn(self._leave_message())

    async def _leave_message(self) -> None:
        """A voicemail: once the message (the call's greeting) has played, hang up."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(60.0):
                await self.transport.replied.wait()
                await asyncio.sleep(0.3)
                await self.output.drained()
        self.finish("voicemail")

    # --- media and signalling events ---

    def _on_audio(self, pcm: bytes, _timestamp: int) -> None:
        session = self.session
        if session is None and self._early is not None:
            self._early.extend(pcm)
            return
        if session is None or self._ended.is_set():
            return
        try:
            session.push_audio(pcm, self.output.rate, 1)
        except (ValueError, RuntimeError) as exc:  # the call closed, or bad audio
            log.debug("phone call %s: input audio dropped: %s", self.sip_call_id, exc)

    def _on_dtmf(self, digit: str, _duration: int) -> None:
        self.press(digit)

    def press(self, digit: str) -> None:
        """A keypad digit from the caller (RFC 4733 or SIP INFO)."""
        if not self._ended.is_set():
            self.digits.press(digit)

    async def _keypad(self, entry: str) -> None:
        session = self.session
        if session is None or self._ended.is_set():
            return
        self.keypad.append(entry)
        log.info("phone call %s: keypad %s", self.sip_call_id, entry)
        for raw in keypad_events(entry):
            await session.handle_text(raw)

    def _on_handoff(self, handoff: dict[str, Any]) -> None:
        if self.transfer_to and self.uac is not None and self._transfer_result is None:
            self._transfer_result = asyncio.get_running_loop().create_future()
            self._spawn(self._transfer())

    def transfer_progress(self, status: int, reason: str) -> None:
        """A NOTIFY about our REFER (a sipfrag status line from the caller's side)."""
        log.info("phone call %s: transfer %d %s", self.sip_call_id, status, reason)
        result = self._transfer_result
        if result is not None and not result.done() and status >= 200:
            result.set_result((status, reason))

    async def _transfer(self) -> None:
        assert self.uac is not None and self._transfer_result is not None
        await asyncio.sleep(0.3)  # the handoff text's audio is queued by now
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HANDOFF_PLAY_WAIT_S):
                await self.output.drained()
        if self._ended.is_set():
            return
        target = refer_target(self.transfer_to, self.invite)
        try:
            self.uac.send_refer(self.invite.dialog, target, self.invite.source_addr)
        except Exception:
            log.exception("phone call %s: the REFER could not be sent", self.sip_call_id)
            return
        log.info("phone call %s: REFER to %s", self.sip_call_id, target)
        try:
            async with asyncio.timeout(TRANSFER_WAIT_S):
                status, reason = await self._transfer_result
        except TimeoutError:
            log.warning(
                "phone call %s: no answer to the transfer; the agent keeps the call",
                self.sip_call_id,
            )
            return
        if 200 <= status < 300:
            self.transferred_to = target
            if self._on_transferred is not None:
                with contextlib.suppress(Exception):
                    await self._on_transferred(self, target)
            self.finish("transferred")
        else:
            log.warning(
                "phone call %s: transfer failed (%d %s); the agent keeps the call",
                self.sip_call_id,
                status,
                reason,
            )

    async def _on_transport_close(self, reason: str) -> None:
        self.finish(reason or "hangup")

    def finish(self, reason: str) -> None:
        if self.end_reason is None:
            self.end_reason = reason
        self._ended.set()

    # --- lifetime ---

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _lifetime(self) -> None:
        assert self.session is not None
        run = asyncio.ensure_future(self.session.run())
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({run, ended}, return_when=asyncio.FIRST_COMPLETED)
            if self.end_reason is None:
                self.end_reason = self.transport.close_reason or "hangup"
        finally:
            ended.cancel()
            await self._shutdown(run)

    async def _shutdown(self, run: asyncio.Future[None]) -> None:
        reason = self.end_reason or "hangup"
        label = f"phone call {self.sip_call_id}"
        log.info("%s: ending (%s)", label, reason)
        self.digits.cancel()
        listening = reason not in CLIENT_GONE
        await close_session(
            self.session,
            reason,
            label=label,
            timeout_s=6.0,
            output=self.output,
            listening=listening,
        )
        if listening:  # we end it: BYE once the last words have played
            with contextlib.suppress(Exception):
                self.invite.hangup()
        await settle(run, label=label, timeout_s=2.0)
        await cancel_others(self._tasks)
        with contextlib.suppress(Exception):
            await self.rtp.close()
        self._closed.set()
        self._on_closed(self)

    async def end(self, reason: str) -> None:
        """End the call now (BYE from the caller, server shutdown)."""
        self.finish(reason)
        await self._closed.wait()

    async def wait_closed(self) -> None:
        await self._closed.wait()
