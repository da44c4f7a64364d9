"""Outbound calls: the SIP server claims queued `OutboundCall`s and dials them.

For each: an RTP port and a PCMU offer, an INVITE to the trunk's outbound
address (answering its digest challenge with the trunk's username and
password), progress recorded and sent as `call.progress` (dialing, ringing,
then answered / voicemail / screening, or busy / no_answer / failed). Once
answered, `AnsweringDetector` listens to the callee's first seconds:

- a person (or silence): the call becomes a realtime session like an inbound
  one, the persona's greeting first;
- a call-screening assistant: the same, the agent introduces itself to it;
- an automated menu (ivr): the same without the greeting, and what the menu
  said while we listened is heard by the session too, so a persona with
  `press_keys` can choose its option;
- a voicemail greeting: `BeepDetector` waits for the beep, then the persona's
  `voicemail_message` is said and we hang up; with no message we hang up at once.

When the call ends the outbound call is `completed`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from aiosipua import CallSession, SipDigestAuth, build_sdp
from aiosipua.uac import SipUAC
from channels.db import database_sync_to_async
from django.conf import settings

from sessions.auth import AuthError, CallGrant
from sessions.runner import call_id_from_session, start_realtime_session
from telephony import services
from telephony.models import OutboundCall
from telephony.services import outbound_target
from telephony.sip.answering import Answer, AnsweringDetector, BeepDetector
from telephony.sip.call import PhoneCall
from telephony.sip.media import PhoneAudioOut
from voiceapp.inference.runtime import get_inference, vad_model

if TYPE_CHECKING:
    from telephony.sip.server import SipServer

log = logging.getLogger(__name__)
db = functools.partial(database_sync_to_async, thread_sensitive=False)

POLL_S = 0.5
DETECT_MAX_S = 6.0
BEEP_MAX_S = 30.0


@dataclass
class Job:
    id: int
    org_id: int
    persona_id: int
    persona_slug: str
    to: str
    trunk_id: int
    trunk_name: str
    address: str
    caller_id: str
    username: str
    password: str
    voicemail_message: str
    transfer_to: str


def _claim() -> list[Job]:
    jobs = []
    for row in services.outbound_calls_claim():
        trunk = row.trunk
        jobs.append(
            Job(
                id=row.pk,
                org_id=row.org_id,
                persona_id=row.persona_id,
                persona_slug=row.persona.slug,
                to=row.to,
                trunk_id=trunk.pk,
                trunk_name=trunk.name,
                address=trunk.outbound_address,
                caller_id=trunk.caller_id,
                username=trunk.username,
                password=services.trunk_password_of(trunk) if trunk.username else "",
                voicemail_message=row.persona.voicemail_message,
                transfer_to=row.persona.transfer_to,
            )
        )
    return jobs


class OutboundLeg:
    """An answered outbound dialog, with the face `PhoneCall` needs of an inbound one."""

    def __init__(self, call: Any, uac: SipUAC) -> None:
        self._call = call
        self._uac = uac
        self.dialog = call.dialog
        self.source_addr = call.remote_addr
        self.transport = call.transport

    @property
    def call_id(self) -> str:
        return str(self._call.call_id)

    def hangup(self) -> None:
        self._call.hangup(self._uac)


class Dialer:
    def __init__(self, server: SipServer) -> None:
        self.server = server
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        while True:
            try:
                jobs = await db(_claim)()
            except Exception:
                log.exception("outbound: claiming queued calls failed")
                jobs = []
            for job in jobs:
                task = asyncio.ensure_future(self._dial(job))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            await asyncio.sleep(POLL_S)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)

    async def _progress(
        self, job: Job, status: str, detail: str = "", call_id: str | None = None
    ) -> None:
        log.info("outbound %d to %s: %s %s", job.id, job.to, status, detail)
        try:
            await db(services.outbound_call_progress)(
                outbound_id=job.id, status=status, detail=detail, call_id=call_id
            )
        except Exception:
            log.exception("outbound %d: recording %s failed", job.id, status)

    async def _dial(self, job: Job) -> None:
        server = self.server
        uac = server.udp_uac
        if uac is None:
            await self._progress(job, "failed", "the SIP server has no UDP transport")
            return
        try:
            host, port = outbound_target(job.address)
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=2)
            remote = (str(infos[0][4][0]), port)
        except (ValueError, OSError) as exc:
            await self._progress(job, "failed", f"trunk address {job.address!r}: {exc}")
            return
        try:
            rtp_port, _ = await server.ports.allocate()
        except RuntimeError:
            await self._progress(job, "failed", "no free RTP port")
            return
        release = True
        try:
            offer = build_sdp("0.0.0.0", rtp_port, 0, "PCMU", advertised_ip=server.advertised_host)
            from_user = job.caller_id or "voiceapp"
            out = uac.send_invite(
                f"sip:{from_user}@{server.advertised_host}:{server.port}",
                f"sip:{job.to}@{host}:{port}",
                remote,
                offer,
                user_agent="voiceapp",
                auth=SipDigestAuth(job.username, job.password) if job.username else None,
            )
            ringing = asyncio.Event()
            out.on_ringing = lambda _c: ringing.set()
            ring_task = asyncio.ensure_future(self._on_ring(job, ringing))
            try:
                await out.wait_answered(timeout=settings.OUTBOUND_RING_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(Exception):
                    out.cancel(uac)
                await self._progress(
                    job, "no_answer", f"no answer in {settings.OUTBOUND_RING_TIMEOUT_S:.0f} s"
                )
                return
            except RuntimeError:
                code = out._reject_code
                status = (
                    "busy"
                    if code in (486, 600, 603)
                    else ("no_answer" if code in (408, 480, 487) else "failed")
                )
                await self._progress(job, status, f"{code} {out._reject_reason}".strip())
                return
            finally:
                ring_task.cancel()
            if out.sdp_answer is None:
                with contextlib.suppress(Exception):
                    out.hangup(uac)
                await self._progress(job, "failed", "answered without SDP")
                return
            rtp = CallSession(
                local_ip="0.0.0.0",
                rtp_port=rtp_port,
                offer=out.sdp_answer,  # their answer says where to send and which codec
                advertised_ip=server.advertised_host,
                supported_codecs=[0, 8],
                jitter_prefetch=2,
                symmetric_rtp=True,
            )
            await rtp.start()
            leg = OutboundLeg(out, uac)
            release = False
            await self._answered(job, leg, rtp, rtp_port)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("outbound %d: dialing failed", job.id)
            await self._progress(job, "failed", f"{type(exc).__name__}: {exc}"[:200])
        finally:
            if release:
                await server.ports.release(rtp_port)

    async def _on_ring(self, job: Job, ringing: asyncio.Event) -> None:
        await ringing.wait()
        await self._progress(job, "ringing")

    async def _answered(self, job: Job, leg: OutboundLeg, rtp: CallSession, rtp_port: int) -> None:
        # Our side of the stream starts at once (silence while we listen): carriers and
        # NATs expect media from an answered call, and the callee hears no gap.
        output = PhoneAudioOut(rtp)
        sending = asyncio.ensure_future(output.run())
        try:
            await self._answered_with(job, leg, rtp, rtp_port, output, sending)
        except BaseException:
            sending.cancel()
            raise

    async def _answered_with(
        self,
        job: Job,
        leg: OutboundLeg,
        rtp: CallSession,
        rtp_port: int,
        output: PhoneAudioOut,
        sending: asyncio.Task[None],
    ) -> None:
        heard = bytearray()  # the callee's audio from the answer on
        answer = await self._detect(rtp, heard)
        kind = {"silence": "answered", "human": "answered", "ivr": "answered"}.get(
            answer.kind, answer.kind
        )
        await self._progress(job, kind, _describe(answer))
        greeting: str | None = None
        if kind == "voicemail":
            if not job.voicemail_message:
                sending.cancel()
                leg.hangup()
                await rtp.close()
                await self.server.ports.release(rtp_port)
                await self._progress(job, "completed", "voicemail: hung up, no message set")
                return
            if not answer.beep_heard:
                await self._await_beep(rtp)
            greeting = job.voicemail_message
        elif answer.kind == "ivr":
            greeting = ""  # a machine waiting for keys: the persona listens first
        grant = CallGrant(
            org_id=job.org_id,
            persona_id=job.persona_id,
            persona_slug=job.persona_slug,
            session_config={},
            trunk_id=job.trunk_id,
            caller_number=job.to,
            greeting=greeting,
        )
        call = PhoneCall(
            invite=leg,  # type: ignore[arg-type]
            rtp=rtp,
            on_closed=functools.partial(self._closed, job, rtp_port),
            uac=leg._uac,
            transfer_to=job.transfer_to,
            hang_up_after_greeting=kind == "voicemail",
            sending=sending,
            output=output,
            early_audio=heard if answer.kind == "ivr" else None,
        )
        try:
            session = await start_realtime_session(
                grant=grant,
                transport=call.transport,
                keypad=call.output,
                client_info={
                    "direction": "outbound",
                    "called": job.to,
                    "trunk": job.trunk_name,
                    "sip_call_id": leg.call_id[:200],
                    "answered_by": answer.kind,
                },
            )
        except AuthError as exc:  # quota, the org's cap, a busy pool: we cannot talk now
            sending.cancel()
            leg.hangup()
            await rtp.close()
            await self.server.ports.release(rtp_port)
            await self._progress(job, "failed", f"{exc.code}: {exc.message}")
            return
        self.server.calls[leg.call_id] = call
        call.rtp_port = rtp_port  # type: ignore[attr-defined]
        await self._progress(job, kind, _describe(answer), call_id_from_session(session.id))
        call.begin(session)

    async def _detect(self, rtp: CallSession, heard_pcm: bytearray) -> Answer:
        """Who answered; what they said goes on into `heard_pcm` until the call
        takes the stream."""
        inference = await get_inference()
        vad = await asyncio.to_thread(vad_model)

        async def transcribe(samples: np.ndarray) -> str:
            result = await inference.transcribe(samples, "en")
            return str(result.text or result.discarded)

        detector = AnsweringDetector(vad, transcribe)
        heard: asyncio.Queue[bytes] = asyncio.Queue()

        def hear(pcm: bytes, _ts: int) -> None:
            heard_pcm.extend(pcm)
            heard.put_nowait(pcm)

        rtp.on_audio = hear
        try:
            async with asyncio.timeout(DETECT_MAX_S):
                while True:
                    detector.push(await heard.get())
                    while not heard.empty():
                        detector.push(heard.get_nowait())
                    answer = await detector.step()
                    if answer is not None:
                        return answer
        except TimeoutError:
            return Answer("human", detector.t)
        finally:
            rtp.on_audio = lambda pcm, _ts: heard_pcm.extend(pcm)
            with contextlib.suppress(Exception):
                await inference.close()

    async def _await_beep(self, rtp: CallSession) -> None:
        beeps = BeepDetector(await asyncio.to_thread(vad_model))
        done = asyncio.Event()

        def hear(pcm: bytes, _ts: int) -> None:
            if beeps.push(pcm):
                done.set()

        rtp.on_audio = hear
        try:
            async with asyncio.timeout(BEEP_MAX_S):
                await done.wait()
        except TimeoutError:
            log.info("outbound: no beep or pause within %.0f s; speaking anyway", BEEP_MAX_S)
        finally:
            rtp.on_audio = None

    def _closed(self, job: Job, rtp_port: int, call: PhoneCall) -> None:
        self.server._closed(call)
        task = asyncio.ensure_future(self._progress(job, "completed", call.end_reason or ""))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _describe(answer: Answer) -> str:
    heard = f": {answer.transcript[:120]!r}" if answer.transcript else ""
    return f"{answer.kind} after {answer.at_s:.1f} s{heard}"


__all__ = ["Dialer", "OutboundCall"]
