"""Writes for plans, subscriptions and the usage ledger, and the quota rules.

Periods are calendar months in UTC. A subscription is made lazily, on the
default plan, the first time an organization needs one, and rolls over to the
next period (taking any pending plan) the first time it is read after its end.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.utils import timezone

from billing.models import Plan, Subscription, UsageRecord
from billing.stripe_meter import (
    stripe_error_is_retryable,
    stripe_meter_from_settings,
    usage_record_report,
)
from sessions.auth import AuthError
from sessions.models import Call
from voiceapp.tenants.models import Membership, Role

log = logging.getLogger(__name__)

# The plan new organizations get when the operator has marked none as default
# (the data migration creates the same one).
DEFAULT_PLAN = {
    "slug": "free",
    "name": "Free",
    "included_seconds": 100 * 3600,
    "is_default": True,
}
ALERT_FRACTION = 0.8


def month_bounds(at: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) that holds `at`: [start, end)."""
    utc = at.astimezone(UTC)
    start = utc.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def plan_default() -> Plan:
    plan = Plan.objects.filter(is_default=True).order_by("pk").first()
    if plan is not None:
        return plan
    plan, _ = Plan.objects.get_or_create(
        slug=DEFAULT_PLAN["slug"], defaults={k: v for k, v in DEFAULT_PLAN.items() if k != "slug"}
    )
    return plan


def subscription_for(*, org_id: int, now: datetime | None = None) -> Subscription:
    """The organization's subscription in its current period, made on first use."""
    now = now or timezone.now()
    sub = Subscription.objects.select_related("plan").filter(org_id=org_id).first()
    if sub is None:
        plan = plan_default()
        start, end = month_bounds(now)
        sub, _ = Subscription.objects.select_related("plan").get_or_create(
            org_id=org_id,
            defaults={
                "plan": plan,
                "period_start": start,
                "period_end": end,
                "remaining_seconds": plan.included_seconds,
            },
        )
    if sub.period_end <= now:
        sub = _subscription_roll(org_id=org_id, now=now)
    return sub


@transaction.atomic
def _subscription_roll(*, org_id: int, now: datetime) -> Subscription:
    sub = Subscription.objects.select_for_update().select_related("plan").get(org_id=org_id)
    while sub.period_end <= now:
        if sub.pending_plan_id is not None:
            sub.plan_id = sub.pending_plan_id
            sub.pending_plan = None
        sub.period_start, sub.period_end = month_bounds(sub.period_end)
    sub.plan = Plan.objects.get(pk=sub.plan_id)
    sub.remaining_seconds = sub.plan.included_seconds
    sub.save()
    return sub


def _subscription_locked(*, org_id: int, now: datetime) -> Subscription:
    """The subscription row, locked until the caller's transaction ends."""
    subscription_for(org_id=org_id, now=now)
    return Subscription.objects.select_for_update().select_related("plan").get(org_id=org_id)


@transaction.atomic
def subscription_change_plan(*, org_id: int, plan: Plan) -> Subscription:
    """Move to `plan` when the current period ends."""
    sub = _subscription_locked(org_id=org_id, now=timezone.now())
    sub.pending_plan = None if plan.pk == sub.plan_id else plan
    sub.save(update_fields=["pending_plan"])
    return sub


@transaction.atomic
def subscription_set_remaining(*, org_id: int, seconds: int) -> Subscription:
    """Set the included seconds left in the current period (operators, tests)."""
    sub = _subscription_locked(org_id=org_id, now=timezone.now())
    sub.remaining_seconds = seconds
    sub.save(update_fields=["remaining_seconds"])
    return sub


# ----- the ledger ------------------------------------------------------------


def billed_seconds(duration_s: float | None) -> int:
    """Calls are billed per second, any started second in full."""
    return max(0, math.ceil(round(duration_s or 0.0, 2)))


def usage_record_create(*, call: Call) -> tuple[UsageRecord, bool]:
    """Bill an ended call: one ledger row and one decrement of the included
    seconds, however often, from however many processes, this runs.

    Runs in the caller's transaction when there is one (sessions' `call_end`
    closes the call and bills it at once). The subscription row is locked
    first, so the ledger writes of one organization queue behind each other;
    the unique constraint on the call makes a second row impossible anyway."""
    if call.ended_at is None:
        raise ValueError(f"call {call.pk} has not ended")
    with transaction.atomic():
        sub = _subscription_locked(org_id=call.org_id, now=timezone.now())
        seconds = billed_seconds(call.duration_s)
        included = min(seconds, max(sub.remaining_seconds, 0))
        record, created = UsageRecord.objects.get_or_create(
            call_ref=call.pk,
            defaults={
                "call": call,
                "org_id": call.org_id,
                "persona_id": call.persona_id,
                "plan": sub.plan,
                "period_start": sub.period_start,
                "started_at": call.started_at,
                "ended_at": call.ended_at,
                "end_reason": call.end_reason,
                "billed_seconds": seconds,
                "included_seconds": included,
                "overage_seconds": seconds - included,
                "asr_seconds": round(call.asr_seconds, 3),
                "llm_input_tokens": call.llm_input_tokens,
                "llm_output_tokens": call.llm_output_tokens,
                "tool_calls": call.tool_calls,
                "tts_characters": call.tts_characters,
            },
        )
        if not created:
            return record, False
        if sub.stripe_customer_id and stripe_meter_from_settings() is not None:
            record_id = record.pk
            transaction.on_commit(lambda: _report_to_stripe_later(record_id))
        sub.remaining_seconds -= included
        fields = ["remaining_seconds"]
        if _crossed_alert(sub):
            sub.alert_sent_for = sub.period_start
            fields.append("alert_sent_for")
            org_id, period_start = sub.org_id, sub.period_start
            transaction.on_commit(lambda: _alert_later(org_id, period_start))
            _threshold_event(sub)
        sub.save(update_fields=fields)
        return record, True


def _report_to_stripe_later(record_id: int) -> None:
    """Queue the ledger row's meter event; the call never waits on Stripe."""
    from billing.tasks import stripe_report_usage

    if settings.STRIPE_REPORT_THREAD:
        # No task broker (the embedded default runs tasks inline): send from a
        # thread of this process instead, with the same retries.
        threading.Thread(
            target=_report_in_thread, args=(record_id,), name="stripe-meter", daemon=True
        ).start()
        return
    try:
        stripe_report_usage.delay(record_id)
    except Exception:
        # The broker is down; billing.stripe_report_unreported sends it later.
        log.exception("Could not queue the Stripe meter event of usage record %s", record_id)


def _report_in_thread(record_id: int, attempts: int = 6) -> None:
    import stripe

    try:
        for attempt in range(attempts):
            try:
                usage_record_report(record_id=record_id)
                return
            except stripe.StripeError as exc:
                if not stripe_error_is_retryable(exc) or attempt == attempts - 1:
                    log.error("Stripe meter event of usage record %s: %s", record_id, exc)
                    return
                time.sleep(10 * 2**attempt)
    except Exception:
        log.exception("Stripe meter event of usage record %s failed", record_id)
    finally:
        connection.close()  # this thread's own connection


def _crossed_alert(sub: Subscription) -> bool:
    included = sub.plan.included_seconds
    if included <= 0 or sub.alert_sent_for == sub.period_start:
        return False
    return included - sub.remaining_seconds >= ALERT_FRACTION * included


def _threshold_event(sub: Subscription) -> None:
    """`usage.threshold` to the organization's webhooks, once per period (its id
    comes from the period), queued when the ledger write commits."""
    from webhooks.services import emit_event

    included = sub.plan.included_seconds
    used = included - max(sub.remaining_seconds, 0)
    emit_event(
        sub.org,
        "usage.threshold",
        {
            "threshold_percent": round(ALERT_FRACTION * 100),
            "used_seconds": used,
            "included_seconds": included,
            "period_start": sub.period_start.isoformat(),
            "period_end": sub.period_end.isoformat(),
            "plan": sub.plan.slug,
        },
        message_id=f"msg_usage_threshold_{sub.org_id}_{sub.period_start:%Y%m%d}",
    )


def _alert_later(org_id: int, period_start: datetime) -> None:
    from billing.tasks import send_usage_alert

    send_usage_alert.delay(org_id, period_start.isoformat())


def usage_alert_send(*, org_id: int) -> int:
    """Tell the organization's owners that 80 % of the period's included time is used."""
    sub = subscription_for(org_id=org_id)
    owners = list(
        Membership.objects.filter(org_id=org_id, role=Role.OWNER)
        .select_related("user", "org")
        .values_list("user__email", flat=True)
    )
    if not owners:
        return 0
    used = sub.plan.included_seconds - max(sub.remaining_seconds, 0)
    percent = round(100 * used / sub.plan.included_seconds) if sub.plan.included_seconds else 100
    what_next = (
        f"Calls past the included time are billed at {sub.plan.overage_price_per_minute} "
        f"{sub.plan.currency} a minute."
        if sub.plan.allows_overage
        else "When it is used up, calls are refused until the next period starts."
    )
    return send_mail(
        subject=f"{sub.org.name}: {percent} % of this month's call time used",
        message=(
            f"Your organization {sub.org.name} has used {used // 60} of the "
            f"{sub.plan.included_seconds // 60} minutes included in the {sub.plan.name} plan "
            f"for the period ending {sub.period_end:%Y-%m-%d}.\n\n{what_next}\n"
        ),
        from_email=None,
        recipient_list=owners,
    )


# ----- quotas ----------------------------------------------------------------


@dataclass(frozen=True)
class CallLimits:
    max_concurrent_calls: int
    max_call_duration_s: float | None  # None: the persona's limit


def call_limits(*, org_id: int) -> CallLimits:
    plan = subscription_for(org_id=org_id).plan
    return CallLimits(
        max_concurrent_calls=plan.max_concurrent_calls or settings.ORG_MAX_CONCURRENT_CALLS,
        max_call_duration_s=plan.max_call_duration_s,
    )


def quota_available_s(*, org_id: int, now: datetime | None = None) -> float | None:
    """Seconds of calling left before the included time runs out, counting the
    calls in progress as used; None when the plan bills overage (no cut-off)."""
    now = now or timezone.now()
    sub = subscription_for(org_id=org_id, now=now)
    if sub.plan.allows_overage:
        return None
    alive_since = now - timedelta(seconds=settings.CALL_STALE_AFTER_S)
    live = Call.objects.filter(org_id=org_id, ended_at=None, last_seen_at__gte=alive_since)
    running = sum(
        (now - started).total_seconds() for started in live.values_list("started_at", flat=True)
    )
    return sub.remaining_seconds - running


def quota_guard(*, org_id: int) -> None:
    """Refuse a new call when the organization has no included time left."""
    available = quota_available_s(org_id=org_id)
    if available is not None and available < 1:
        raise AuthError(
            "insufficient_quota",
            "Your organization has used the call time included in its plan for this period.",
            402,
        )
