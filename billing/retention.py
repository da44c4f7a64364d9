"""Retention: calls are deleted once they are older than their plan keeps them.

A call older than its organization's `Plan.retention_days` (counted from its
end) is deleted with its transcript (`CallItem`) and latency spans
(`CallTurn`), which cascade. The usage ledger survives: `UsageRecord.call` is
SET_NULL and `call_ref` keeps the id, so invoices, the CSV export and Stripe
still add up. Calls still open are never touched. A plan with 0 days keeps
calls forever. An organization without a subscription counts on the default
plan, as everywhere else.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from billing.models import Subscription
from billing.services import plan_default
from sessions.models import Call

log = logging.getLogger(__name__)

BATCH = 500  # calls per delete, so no transaction holds locks on a year of calls


def calls_purge_expired(*, now: datetime | None = None) -> int:
    """Delete every organization's calls past its plan's retention; the number deleted."""
    now = now or timezone.now()
    deleted = 0
    for org_id, days in Subscription.objects.values_list("org_id", "plan__retention_days"):
        if days:
            deleted += _purge(Call.objects.filter(org_id=org_id), before=now - timedelta(days=days))
    default_days = plan_default().retention_days
    if default_days:
        deleted += _purge(
            Call.objects.filter(org__subscription__isnull=True),
            before=now - timedelta(days=default_days),
        )
    if deleted:
        log.info("Retention: deleted %s calls", deleted)
    return deleted


def _purge(calls: QuerySet[Call], *, before: datetime) -> int:
    expired = calls.filter(ended_at__lt=before).order_by()
    total = 0
    while True:
        ids = list(expired.values_list("pk", flat=True)[:BATCH])
        if not ids:
            return total
        with transaction.atomic():
            # The collector cascades to items and turns and nulls UsageRecord.call.
            Call.objects.filter(pk__in=ids).delete()
        total += len(ids)
