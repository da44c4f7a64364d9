"""Writes for call records. Called from the call loop through
``database_sync_to_async``; each write is small and committed at once, so a
web process that dies loses at most the turn in flight."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from billing.services import usage_record_create
from sessions.auth import CallGrant
from sessions.models import Call, CallItem, CallTurn
from voiceapp.engine.tracing import SPAN_NAMES
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import PublishableKey, SecretKey
from webhooks.services import call_event_on_commit

STORED_SPANS = [name for name in SPAN_NAMES if name != "send_ms"]


def call_start(
    *, call_id: str, grant: CallGrant, transport: str, client_info: dict[str, str]
) -> Call:
    persona = Persona.objects.get(pk=grant.persona_id, org_id=grant.org_id)
    source, key_name = call_source(grant)
    call = Call.objects.create(
        id=call_id,
        org_id=grant.org_id,
        persona=persona,
        persona_name=persona.name,
        transport=transport,
        client_info=client_info,
        source=source,
        origin=grant.origin[:200],
        key_name=key_name[:100],
    )
    call_event_on_commit(call_id=call_id, org_id=grant.org_id, event_type="call.started")
    return call


def call_source(grant: CallGrant) -> tuple[str, str]:
    """Where a call comes from, and the name of the key that placed it: the
    credential behind the grant decides (a client secret carries its minter's)."""
    if grant.user_id is not None:
        return str(Call.Source.TEST), ""
    if grant.publishable_key_id is not None:
        name = PublishableKey.objects.filter(pk=grant.publishable_key_id).values_list(
            "name", flat=True
        )
        return str(Call.Source.WIDGET), name.first() or ""
    if grant.secret_key_id is not None:
        name = SecretKey.objects.filter(pk=grant.secret_key_id).values_list("name", flat=True)
        return str(Call.Source.API), name.first() or ""
    return "", ""


def call_touch(*, call_id: str, at: datetime | None = None) -> None:
    """The call was alive at `at` (now by default; a buffered write brings its own time)."""
    Call.objects.filter(pk=call_id, ended_at=None).update(last_seen_at=at or timezone.now())


def call_item_record(
    *, call_id: str, item_id: str, role: str, text: str, at_s: float, interrupted: bool = False
) -> None:
    CallItem.objects.update_or_create(
        call_id=call_id,
        item_id=item_id,
        defaults={"role": role, "text": text, "at_s": round(at_s, 3), "interrupted": interrupted},
    )


def call_item_truncate(*, call_id: str, item_id: str, text: str) -> None:
    CallItem.objects.filter(call_id=call_id, item_id=item_id).update(text=text, interrupted=True)


def call_turn_record(
    *, call_id: str, response_id: str, status: str, at_s: float, spans: dict[str, Any]
) -> None:
    values = {name: spans.get(name) for name in STORED_SPANS}
    CallTurn.objects.create(
        call_id=call_id,
        response_id=response_id,
        status=status,
        at_s=round(at_s, 3),
        spans=spans,
        **values,
    )


def call_usage_add(
    *,
    call_id: str,
    asr_seconds: float = 0.0,
    llm_input_tokens: int = 0,
    llm_output_tokens: int = 0,
    tts_characters: int = 0,
) -> None:
    """Add to what a call used so far (billed from these when it ends)."""
    Call.objects.filter(pk=call_id).update(
        asr_seconds=F("asr_seconds") + asr_seconds,
        llm_input_tokens=F("llm_input_tokens") + llm_input_tokens,
        llm_output_tokens=F("llm_output_tokens") + llm_output_tokens,
        tts_characters=F("tts_characters") + tts_characters,
    )


@transaction.atomic
def call_end(*, call_id: str, reason: str, at: datetime | None = None) -> Call | None:
    """Close the call and bill it, in one transaction: a call is ended and in
    the ledger, or neither (and then the reconciliation closes it later). `at`:
    when it ended, for an end written late (after a database outage); now by default."""
    call = Call.objects.select_for_update().filter(pk=call_id).first()
    if call is None or call.ended_at is not None:
        return call
    call.ended_at = max(at or timezone.now(), call.started_at)
    call.last_seen_at = call.ended_at
    call.duration_s = round((call.ended_at - call.started_at).total_seconds(), 2)
    call.end_reason = reason
    call.save(update_fields=["ended_at", "last_seen_at", "duration_s", "end_reason"])
    usage_record_create(call=call)
    call_event_on_commit(call_id=call_id, org_id=call.org_id, event_type="call.ended")
    return call


def calls_reconcile(*, stale_after_s: float) -> int:
    """Close and bill calls whose process stopped reporting: their duration is
    the last time they were seen alive."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_s)
    closed = 0
    for call_id in Call.objects.filter(ended_at=None, last_seen_at__lt=cutoff).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            call = Call.objects.select_for_update().filter(pk=call_id, ended_at=None).first()
            if call is None or call.last_seen_at >= cutoff:
                continue  # ended, or came back to life, meanwhile
            call.ended_at = call.last_seen_at
            call.duration_s = round((call.last_seen_at - call.started_at).total_seconds(), 2)
            call.end_reason = Call.EndReason.LOST
            call.save(update_fields=["ended_at", "duration_s", "end_reason"])
            usage_record_create(call=call)
            call_event_on_commit(call_id=str(call.pk), org_id=call.org_id, event_type="call.ended")
            closed += 1
    return closed
