"""Call records for tests: written through the services the call loop uses, then
moved to a chosen time (the services stamp the current time)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from billing.models import UsageRecord
from billing.services import billed_seconds
from sessions.auth import CallGrant
from sessions.models import Call
from sessions.services import call_end, call_item_record, call_start, call_turn_record
from voiceapp.personas.models import Persona


def make_call(
    persona: Persona,
    *,
    started_at: datetime,
    duration_s: float | None = 10.0,
    end_reason: str = "hangup",
    items: Sequence[tuple[str, str, float, bool]] = (),
    turns: Sequence[dict[str, Any]] = (),
    grant: CallGrant | None = None,
) -> Call:
    """A call with ``persona`` that started at ``started_at`` and, unless
    ``duration_s`` is None, ended ``duration_s`` later with ``end_reason``.
    ``grant`` stands for the credential that placed it (none by default)."""
    grant = grant or CallGrant(
        org_id=persona.org_id, persona_id=persona.pk, persona_slug=persona.slug, session_config={}
    )
    call = call_start(call_id=str(uuid.uuid4()), grant=grant, transport="websocket", client_info={})
    for n, (role, text, at_s, interrupted) in enumerate(items):
        call_item_record(
            call_id=str(call.pk),
            item_id=f"item_{n}",
            role=role,
            text=text,
            at_s=at_s,
            interrupted=interrupted,
        )
    for n, spans in enumerate(turns):
        call_turn_record(
            call_id=str(call.pk),
            response_id=f"resp_{n}",
            status="completed",
            at_s=float(n),
            spans=spans,
        )
    if duration_s is not None:
        call_end(call_id=str(call.pk), reason=end_reason)
        ended_at = started_at + timedelta(seconds=duration_s)
        Call.objects.filter(pk=call.pk).update(
            started_at=started_at,
            ended_at=ended_at,
            last_seen_at=ended_at,
            duration_s=duration_s,
        )
        billed = billed_seconds(duration_s)  # its ledger row, as if billed at that time
        UsageRecord.objects.filter(call_ref=call.pk).update(
            started_at=started_at,
            ended_at=ended_at,
            billed_seconds=billed,
            included_seconds=billed,
            overage_seconds=0,
        )
    else:
        Call.objects.filter(pk=call.pk).update(started_at=started_at, last_seen_at=started_at)
    call.refresh_from_db()
    return call


def wait_calls_ended(timeout_s: float = 20) -> None:
    """Wait for a live server's last writes of its calls, so that a test's teardown
    (which empties every table) does not race them: each call's end, written after
    its socket closes (later, after a database outage), then its analysis, written
    once the end is committed. A flush that meets a write still under way can
    deadlock with it and leave rows to the next test."""
    from sessions.models import CallAnalysis

    deadline = time.monotonic() + timeout_s
    while open_calls := list(Call.objects.filter(ended_at=None).values_list("pk", flat=True)):
        assert time.monotonic() < deadline, f"calls not ended after hang-up: {open_calls}"
        time.sleep(0.1)
    while unanalysed := list(
        Call.objects.exclude(pk__in=CallAnalysis.objects.values("call_id")).values_list(
            "pk", flat=True
        )
    ):
        assert time.monotonic() < deadline, f"ended calls without their analysis: {unanalysed}"
        time.sleep(0.1)
