"""Starting, recording and resuming calls: the glue between a transport, the
engine and the database. Transports call `start_realtime_session`.

A call's connection is its slot in the org's cap. Only a call whose connection
dropped (ended as `lost`) can be resumed: once per drop, within
CALL_RESUME_WINDOW_S, by the principal that started it. A call whose web process
died (SIGKILL, a lost node) could not mark itself lost: the process's lease on
the call (renewed every OWNER_RENEW_S, lapsing after OWNER_TTL_S) says so, and
the same principal may then take the call over through any other process, with
its history, within the same window. While a call runs, the
key behind it is checked every CALL_KEY_CHECK_S; once it is revoked the call
gets an `error` event and ends."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import uuid
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from billing.services import call_limits, quota_available_s, quota_guard
from sessions import recordings, services
from sessions.actions import PersonaActions
from sessions.auth import AuthError, CallGrant, grant_revocation_sync
from sessions.lifecycle import CallSlots
from sessions.live import LiveStore, live_store
from sessions.models import Call
from sessions.realtime import Limits, RealtimeSession, Transport
from sessions.realtime.actions import Keypad
from sessions.realtime.recorder import Usage
from sessions.realtime.recording import CallAudioCapture, CaptureResult
from sessions.record_buffer import UNREACHABLE, record_buffer
from voiceapp.engine.call import VoiceCall
from voiceapp.engine.tts import VoiceSpec
from voiceapp.engine.writer import load_classifiers
from voiceapp.inference.runtime import (
    call_config_from_persona,
    get_inference,
    persona_endpoint_llm,
    pool_registry,
    route_llm,
    vad_model,
)
from voiceapp.personas.models import Persona, Voice
from voiceapp.personas.selectors import persona_get_for_call
from voiceapp.personas.server_tools import persona_tool_targets

log = logging.getLogger(__name__)

# Call-record writes run in a thread pool: a WebRTC call outlives the HTTP
# request that started it, and with it that request's thread-sensitive executor.
db = functools.partial(database_sync_to_async, thread_sensitive=False)

# Calls whose connection dropped: ended after the resume window unless resumed.
_pending_ends: dict[str, asyncio.Task[None]] = {}


def session_id_for(call_id: str) -> str:
    return f"sess_{uuid.UUID(call_id).hex}"


def call_id_from_session(session_id: str) -> str | None:
    try:
        return str(uuid.UUID(session_id.removeprefix("sess_")))
    except ValueError:
        return None


class DbRecorder:
    """Writes the call record as the session runs, and keeps its live state.

    Record writes go through the call's `RecordBuffer` (sessions/record_buffer.py):
    they return at once, and a database outage delays them instead of losing them.
    Live-state writes to Redis that fail are logged; the call goes on, and the next
    heartbeat puts its slots back (slots also expire by themselves, see live.py)."""

    def __init__(
        self,
        *,
        call_id: str,
        org_id: int,
        persona_id: int,
        generation: int,
        slots: CallSlots,
        principal: str = "",
    ) -> None:
        self.call_id = call_id
        self.slots = slots
        self.org_id = org_id
        self.persona_id = persona_id
        self.generation = generation
        self.principal = principal
        self.history: list[dict[str, str]] = []
        self.buffer = record_buffer(call_id)

    async def user_item(self, item_id: str, text: str, at_s: float) -> None:
        self.buffer.submit(
            "user_item",
            services.call_item_record,
            call_id=self.call_id,
            item_id=item_id,
            role="user",
            text=text,
            at_s=at_s,
        )

    async def assistant_item(self, item_id: str, text: str, at_s: float, interrupted: bool) -> None:
        self.buffer.submit(
            "assistant_item",
            services.call_item_record,
            call_id=self.call_id,
            item_id=item_id,
            role="assistant",
            text=text,
            at_s=at_s,
            interrupted=interrupted,
        )

    async def tool_item(self, item_id: str, at_s: float, tool: dict[str, Any], text: str) -> None:
        self.buffer.submit(
            "tool_item",
            services.call_tool_record,
            call_id=self.call_id,
            item_id=item_id,
            at_s=at_s,
            tool=tool,
            text=text,
        )

    async def truncate(self, item_id: str, text: str) -> None:
        self.buffer.submit(
            "truncate",
            services.call_item_truncate,
            call_id=self.call_id,
            item_id=item_id,
            text=text,
        )

    async def turn(self, response_id: str, status: str, at_s: float, spans: dict[str, Any]) -> None:
        self.buffer.submit(
            "turn",
            services.call_turn_record,
            call_id=self.call_id,
            response_id=response_id,
            status=status,
            at_s=at_s,
            spans=spans,
        )

    async def usage(self, usage: Usage) -> None:
        self.buffer.submit(
            "usage",
            services.call_usage_add,
            call_id=self.call_id,
            asr_seconds=usage.asr_seconds,
            llm_input_tokens=usage.llm_input_tokens,
            llm_output_tokens=usage.llm_output_tokens,
            tts_characters=usage.tts_characters,
        )

    def _touch(self) -> None:
        self.buffer.submit("touch", services.call_touch, call_id=self.call_id, at=timezone.now())

    def _state(self) -> dict[str, Any]:
        return {
            "org_id": self.org_id,
            "persona_id": self.persona_id,
            "history": self.history,
            "generation": self.generation,
            "principal": self.principal,  # who may take the call over if its process dies
        }

    async def alive(self, history: list[dict[str, str]]) -> None:
        self.history = history
        state = self._state()
        await _live(
            "save", live_store().save(self.call_id, state, settings.CALL_RESUME_WINDOW_S + 60)
        )

    async def heartbeat(self) -> None:
        await _live("heartbeat", self.slots.heartbeat())
        self._touch()

    async def release(self) -> None:
        await self.slots.release()

    async def ended(self, reason: str) -> None:
        store = live_store()
        await self.slots.release()
        self._touch()
        if reason != "lost":
            await _live("delete", store.delete(self.call_id))
            self.buffer.submit_end(
                services.call_end, call_id=self.call_id, reason=reason, at=timezone.now()
            )
            # Usually written by now; in a database outage the buffer goes on alone.
            await self.buffer.drain(END_DRAIN_S)
            return
        # The connection dropped: the caller may come back within the window.
        await _live("save", store.save(self.call_id, self._state(), settings.CALL_RESUME_WINDOW_S))
        if self.principal:
            await _live(
                "mark_lost",
                store.mark_lost(
                    self.call_id, principal=self.principal, ttl_s=settings.CALL_RESUME_WINDOW_S
                ),
            )
        previous = _pending_ends.pop(self.call_id, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.ensure_future(self._end_unless_resumed())
        _pending_ends[self.call_id] = task
        task.add_done_callback(
            lambda t: (
                _pending_ends.pop(self.call_id, None)
                if _pending_ends.get(self.call_id) is t
                else None
            )
        )

    async def recording(self, captured: CaptureResult) -> None:
        self.buffer.submit(
            "recording", recordings.call_recording_keep, call_id=self.call_id, captured=captured
        )
        await self.buffer.drain(END_DRAIN_S)

    async def _end_unless_resumed(self) -> None:
        await asyncio.sleep(settings.CALL_RESUME_WINDOW_S)
        ended_at = timezone.now()
        state: dict[str, Any] | None = None
        for attempt in range(LOST_CHECK_TRIES):  # Redis away: wait for it a little
            try:
                state = await live_store().load(self.call_id)
                break
            except Exception as exc:
                log.warning("call %s: its live state is unreadable (%s)", self.call_id, exc)
                await asyncio.sleep(min(2.0, 0.25 * 2**attempt))
        if state is not None and state.get("generation", 0) > self.generation:
            return  # resumed elsewhere
        await _live("delete", live_store().delete(self.call_id))
        self.buffer.submit_end(services.call_end, call_id=self.call_id, reason="lost", at=ended_at)


# How long a hang-up waits for the call's record to be written (within the
# session's close budget); a slower database gets the rest from the buffer alone.
END_DRAIN_S = 1.5
LOST_CHECK_TRIES = 8
# A running call's lease, held by the web process that runs it (see the module's doc).
OWNER_TTL_S = 1.0
OWNER_RENEW_S = 0.25


def process_owner() -> str:
    """This process, as a call's lease names it."""
    return f"{settings.WEB_INSTANCE}:{os.getpid()}"


async def _live(what: str, write: Awaitable[Any]) -> None:
    """A live-state write to Redis; failing, it is logged and the call goes on."""
    try:
        await write
    except Exception as exc:
        log.warning("live state %s failed (Redis unreachable?): %s", what, exc)


async def _resolve_voice(voice_id: str) -> VoiceSpec | None:
    voice = await Voice.objects.filter(voice_id=voice_id, is_available=True).afirst()
    return VoiceSpec(voice_id=voice.voice_id, model_path=voice.model_path) if voice else None


async def start_realtime_session(
    *,
    grant: CallGrant,
    transport: Transport,
    client_info: dict[str, str],
    resume: str | None = None,
    keypad: Keypad | None = None,
) -> RealtimeSession:
    """Check the limits, open (or resume) the call record and start the session
    (`keypad`: a phone call's, for the persona's press_keys action). Raises
    AuthError when the call may not start."""
    persona = await db(persona_get_for_call)(org_id=grant.org_id, pk=grant.persona_id)
    store = live_store()
    history: list[dict[str, str]] = []
    generation = 0
    offset_s = 0.0
    if resume:
        call_id = call_id_from_session(resume)
        state = await _claim_lost_call(store, call_id, grant=grant, persona_id=persona.pk)
        assert call_id is not None
        history = list(state.get("history", []))
        generation = int(state.get("generation", 0)) + 1
        started_at = (
            await Call.objects.filter(pk=call_id).values_list("started_at", flat=True).afirst()
        )
        if started_at is not None:
            offset_s = (timezone.now() - started_at).total_seconds()
    else:
        call_id = str(uuid.uuid4())
    slots = CallSlots(store, org_id=grant.org_id, call_id=call_id)
    try:
        await db(quota_guard)(org_id=grant.org_id)
        plan_limits = await db(call_limits)(org_id=grant.org_id)
        await slots.take(cap=plan_limits.max_concurrent_calls, registry=pool_registry())
    except Exception:
        if resume:  # resumable again once there is time, a slot or room in the pool
            await _live(
                "mark_lost",
                store.mark_lost(
                    call_id, principal=grant.principal, ttl_s=settings.CALL_RESUME_WINDOW_S
                ),
            )
        raise
    # What a start that fails from here on must undo, written once: each step that
    # takes something pushes its undoing; a started call keeps none of them.
    async with contextlib.AsyncExitStack() as undo:
        undo.push_async_callback(slots.release)
        session = await _open_session(
            undo,
            grant=grant,
            persona=persona,
            slots=slots,
            call_id=call_id,
            transport=transport,
            client_info=client_info,
            resume=resume,
            history=history,
            generation=generation,
            offset_s=offset_s,
            plan_max_duration_s=plan_limits.max_call_duration_s,
            keypad=keypad,
        )
        undo.pop_all()  # started: from now on the session's close() ends it
    _watch_key(session, grant)
    session.spawn(_end_when_quota_exhausted(session, grant.org_id))
    session.spawn(_hold_lease(session, store, call_id))
    return session


async def _hold_lease(session: RealtimeSession, store: LiveStore, call_id: str) -> None:
    """Renew this process's lease on the call while it runs; give it up at the end
    (a process that dies cannot, and the lease lapses after OWNER_TTL_S)."""
    owner = process_owner()
    try:
        while not session.ended.is_set():
            await _live("own", store.own(call_id, owner, ttl_s=OWNER_TTL_S))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(OWNER_RENEW_S):
                    await session.ended.wait()
    finally:
        await _live("disown", store.disown(call_id, owner))


async def _open_session(
    undo: contextlib.AsyncExitStack,
    *,
    grant: CallGrant,
    persona: Persona,
    slots: CallSlots,
    call_id: str,
    transport: Transport,
    client_info: dict[str, str],
    resume: str | None,
    history: list[dict[str, str]],
    generation: int,
    offset_s: float,
    plan_max_duration_s: int | None,
    keypad: Keypad | None,
) -> RealtimeSession:
    """The call's record, models and session, started; what fails on the way is
    undone through `undo`."""
    if resume:
        pending = _pending_ends.pop(call_id, None)
        if pending is not None:
            pending.cancel()
    limits = Limits(
        max_duration_s=min(
            persona.max_call_duration_s, plan_max_duration_s or persona.max_call_duration_s
        ),
        idle_timeout_s=persona.idle_timeout_s,
        max_message_bytes=settings.REALTIME_MAX_MESSAGE_BYTES,
    )
    # The audio of a resumed call is not recorded: its first connection's is kept.
    capture: CallAudioCapture | None = None
    if persona.record_calls and not resume:
        capture = CallAudioCapture(
            await asyncio.to_thread(recordings.spool_path, call_id),
            max_seconds=limits.max_duration_s + recordings.GOODBYE_ALLOWANCE_S,
        )
        undo.callback(capture.discard)
    if not resume:
        await db(services.call_start)(
            call_id=call_id, grant=grant, transport=transport.name, client_info=client_info
        )

    async def record_failed_start() -> None:  # a resumed call's end is no longer pending
        with contextlib.suppress(Exception):
            await db(services.call_end)(call_id=call_id, reason="error")

    undo.push_async_callback(record_failed_start)
    recorder = DbRecorder(
        call_id=call_id,
        org_id=grant.org_id,
        persona_id=persona.pk,
        generation=generation,
        slots=slots,
        principal=grant.principal,
    )
    await recorder.alive(history)
    endpoint_llm = await db(persona_endpoint_llm)(persona)
    inference = route_llm(await get_inference(), endpoint_llm)
    actions = PersonaActions(
        call_id=call_id,
        enabled=persona.actions or [],
        handoff_text=persona.handoff_text,
        handoff_url=persona.handoff_url,
        tools=await db(persona_tool_targets)(persona=persona),
        keypad=keypad,
    )
    config = call_config_from_persona(persona, own_llm=endpoint_llm is not None)
    config = replace(
        config, actions=actions.specs(), llm=replace(config.llm, tools=actions.specs())
    )
    if grant.greeting is not None:  # outbound: a voicemail message, or none for a menu
        config = replace(config, greeting=grant.greeting)
    await asyncio.to_thread(load_classifiers)  # off the event loop, once a process
    call = VoiceCall(config, inference, await asyncio.to_thread(vad_model))
    for message in history:
        call.add_message(message["role"], message["content"])
    session = RealtimeSession(
        session_id=session_id_for(call_id),
        persona_slug=persona.slug,
        call=call,
        inference=inference,
        transport=transport,
        limits=limits,
        recorder=recorder,
        resolve_voice=_resolve_voice,
        elapsed_offset_s=offset_s,
        public=bool(grant.origin),  # a widget (publishable-key) caller
        capture=capture,
        actions=actions,
    )
    await session.start()
    if grant.session_config:
        await session.handle_text(_as_update(grant.session_config))
    if not resume:
        session.greet(notice=persona.recording_notice if capture is not None else "")
    return session


async def _claim_lost_call(
    store: LiveStore, call_id: str | None, *, grant: CallGrant, persona_id: int
) -> dict[str, Any]:
    """The saved state of a lost call that `grant` may resume; the lost marker
    is taken, so no second socket can resume the same drop."""
    refused = AuthError(
        "resume_not_possible",
        "That call cannot be resumed: it is still connected, it ended, or it belongs to "
        "someone else.",
        404,
    )
    if call_id is None:
        raise refused
    if not await store.claim_lost(call_id, principal=grant.principal):
        return await _take_orphaned_call(store, call_id, grant=grant, persona_id=persona_id)
    state = await store.load(call_id)
    if (
        state is None
        or state.get("org_id") != grant.org_id
        or state.get("persona_id") != persona_id
    ):
        if state is not None:  # another persona of the same key: leave it resumable
            await store.mark_lost(
                call_id, principal=grant.principal, ttl_s=settings.CALL_RESUME_WINDOW_S
            )
        raise refused
    return state


async def _take_orphaned_call(
    store: LiveStore, call_id: str, *, grant: CallGrant, persona_id: int
) -> dict[str, Any]:
    """The saved state of a call whose web process died, taken over by this one:
    same principal, organization and persona, and no lease left on it. The dead
    process's slots are freed, for the resumed call to take them again."""
    refused = AuthError(
        "resume_not_possible",
        "That call cannot be resumed: it is still connected, it ended, or it belongs to "
        "someone else.",
        404,
    )
    state = await store.load(call_id)
    if (
        state is None
        or not grant.principal
        or state.get("principal") != grant.principal
        or state.get("org_id") != grant.org_id
        or state.get("persona_id") != persona_id
    ):
        raise refused
    if not await store.take_orphan(call_id, process_owner(), ttl_s=OWNER_TTL_S):
        raise refused  # its process is alive: the call is still connected
    log.info("call %s: taken over from a web process that stopped", call_id)
    await store.release(org_id=grant.org_id, call_id=call_id)
    await store.release_pool(call_id=call_id)
    return state


def _watch_key(session: RealtimeSession, grant: CallGrant) -> None:
    if grant.secret_key_id is None and grant.publishable_key_id is None:
        return
    session.spawn(_end_when_revoked(session, grant))


async def _end_when_revoked(session: RealtimeSession, grant: CallGrant) -> None:
    """Check the call's key until the call ends; end it once the key is revoked."""
    while not session.ended.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(settings.CALL_KEY_CHECK_S):
                await session.ended.wait()
        if session.ended.is_set() or session.end_reason:
            return
        try:
            revoked = await db(grant_revocation_sync)(grant)
        except UNREACHABLE as exc:  # checked again next time; the call goes on
            log.warning("session %s: could not check its key: %s", session.id, exc)
            continue
        except Exception:
            log.exception("session %s: could not check its key", session.id)
            continue
        if revoked is not None:
            log.info("session %s: %s, ending it", session.id, revoked.code)
            with contextlib.suppress(Exception):
                await session.send_error(revoked.code, revoked.message)
            await session.end("revoked", goodbye=False)
            return


async def _end_when_quota_exhausted(session: RealtimeSession, org_id: int) -> None:
    """On a plan without overage, end the call (with a spoken notice) once the
    organization's included time, less its other calls in progress, runs out."""
    while not session.ended.is_set():
        try:
            available = await db(quota_available_s)(org_id=org_id)
        except UNREACHABLE as exc:
            log.warning("session %s: could not check the quota: %s", session.id, exc)
            available = None
        except Exception:
            log.exception("session %s: could not check the quota", session.id)
            available = None
        if available is not None and available <= 0:
            log.info("session %s: the organization's quota is used up, ending it", session.id)
            await session.end("quota_exhausted")
            return
        wait = settings.BILLING_QUOTA_CHECK_S
        if available is not None:
            wait = max(0.2, min(wait, available))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await session.ended.wait()
        if session.end_reason:
            return


def _as_update(config: dict[str, Any]) -> str:
    session = {k: v for k, v in config.items() if k not in ("model", "type")}
    return json.dumps({"type": "session.update", "session": {"type": "realtime", **session}})
