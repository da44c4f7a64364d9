"""Writes for call records. Called from the call loop through
``database_sync_to_async``; each write is small and committed at once, so a
web process that dies loses at most the turn in flight."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from billing.services import usage_record_create
from sessions.analysis import call_analysis_on_commit
from sessions.auth import CallGrant
from sessions.models import Call, CallerMessage, CallItem, CallTurn
from telephony.models import SipTrunk
from voiceapp.engine.tracing import SPAN_NAMES
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Membership, PublishableKey, Role, SecretKey
from webhooks.services import call_event_on_commit, emit_event

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
        caller_number=grant.caller_number[:64],
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
    if grant.trunk_id is not None:
        name = SipTrunk.objects.filter(pk=grant.trunk_id).values_list("name", flat=True)
        return str(Call.Source.PHONE), name.first() or ""
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


def call_tool_record(
    *, call_id: str, item_id: str, at_s: float, tool: dict[str, Any], text: str
) -> None:
    """An action the agent took, in its place in the transcript, and counted on the call."""
    _, created = CallItem.objects.update_or_create(
        call_id=call_id,
        item_id=item_id,
        defaults={"role": CallItem.Role.TOOL, "text": text, "at_s": round(at_s, 3), "tool": tool},
    )
    if created:
        Call.objects.filter(pk=call_id).update(tool_calls=F("tool_calls") + 1)


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
    call_analysis_on_commit(call_id=call_id)
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
            call_analysis_on_commit(call_id=str(call.pk))
            closed += 1
    return closed


# ----- messages callers leave (the take_message action) -----------------------------

MESSAGE_MAX_CHARS = 2000


@transaction.atomic
def caller_message_take(
    *, call_id: str, name: str, callback_number: str, message: str
) -> CallerMessage:
    """Store a caller's message for the organization's inbox, emit `message.taken`
    and email the owners and admins, both once the transaction commits."""
    call = Call.objects.select_related("org").get(pk=call_id)
    taken = CallerMessage.objects.create(
        org=call.org,
        call=call,
        persona_id=call.persona_id,
        persona_name=call.persona_name,
        name=name.strip()[:120],
        callback_number=callback_number.strip()[:40],
        message=message.strip()[:MESSAGE_MAX_CHARS],
    )
    emit_event(
        call.org,
        "message.taken",
        caller_message_data(taken),
        message_id=f"msg_message_taken_{taken.pk}",
    )

    def email() -> None:
        from sessions.tasks import send_message_email

        send_message_email.delay(taken.pk)

    transaction.on_commit(email)
    return taken


def caller_message_data(taken: CallerMessage) -> dict[str, Any]:
    """The `data` of a message.taken event."""
    return {
        "id": taken.pk,
        "call_id": str(taken.call_id) if taken.call_id else None,
        "persona": taken.persona_name,
        "name": taken.name,
        "callback_number": taken.callback_number,
        "message": taken.message,
        "created_at": taken.created_at.isoformat(),
    }


def call_transferred(*, call_id: str, target: str) -> None:
    """A phone call's transfer went through: the record shows where the caller went."""
    Call.objects.filter(pk=call_id).update(transferred_to=target[:200])


@transaction.atomic
def call_transfer_request(*, call_id: str, reason: str, text: str, url: str) -> dict[str, Any]:
    """A caller asked for a person and was handed over: emit `call.transfer_requested`
    (once the transaction commits). Returns the event's data."""
    call = Call.objects.select_related("org").get(pk=call_id)
    data = {
        "call_id": str(call.pk),
        "persona": call.persona_name,
        "reason": reason,
        "handoff_text": text,
        "handoff_url": url or None,
        "requested_at": timezone.now().isoformat(),
    }
    emit_event(
        call.org,
        "call.transfer_requested",
        data,
        message_id=f"msg_call_transfer_{call.pk.hex}_{uuid.uuid4().hex[:8]}",
    )
    return data


def caller_message_mark_read(*, taken: CallerMessage, read: bool = True) -> None:
    taken.read_at = timezone.now() if read else None
    taken.save(update_fields=["read_at"])


def caller_message_email(*, message_id: int) -> int:
    """Tell the organization's owners and admins that a caller left a message."""
    taken = CallerMessage.objects.select_related("org").filter(pk=message_id).first()
    if taken is None:  # deleted since
        return 0
    recipients = list(
        Membership.objects.filter(org_id=taken.org_id, role__in=[Role.OWNER, Role.ADMIN])
        .order_by("pk")
        .values_list("user__email", flat=True)
    )
    if not recipients:
        return 0
    who = taken.name or "A caller"
    inbox = settings.SITE_URL + reverse("dashboard:messages")
    number = taken.callback_number or "no number given"
    return send_mail(
        subject=f"{taken.org.name}: a message from {who}",
        message=(
            f"{who} ({number}) left a message with {taken.persona_name}:\n\n"
            f"{taken.message}\n\nSee all messages: {inbox}\n"
        ),
        from_email=None,
        recipient_list=recipients,
    )
