"""Reads for billing, scoped by organization."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet, Sum

from billing.models import Invoice, Subscription, UsageRecord
from billing.services import quota_available_s, subscription_for
from voiceapp.tenants.models import Organization


@dataclass(frozen=True)
class UsageMeter:
    subscription: Subscription
    used_seconds: int  # billed this period, included and overage
    included_used_seconds: int
    overage_seconds: int
    calls: int
    available_s: float | None  # None: overage allowed

    @property
    def percent(self) -> int:
        included = self.subscription.plan.included_seconds
        if included <= 0:
            return 100
        return min(
            100, round(100 * (included - max(self.subscription.remaining_seconds, 0)) / included)
        )


def usage_meter(*, org: Organization) -> UsageMeter:
    sub = subscription_for(org_id=org.pk)
    records = usage_record_list(org=org, period_start=sub.period_start)
    totals = records.aggregate(
        billed=Sum("billed_seconds"),
        included=Sum("included_seconds"),
        overage=Sum("overage_seconds"),
    )
    return UsageMeter(
        subscription=sub,
        used_seconds=int(totals["billed"] or 0),
        included_used_seconds=int(totals["included"] or 0),
        overage_seconds=int(totals["overage"] or 0),
        calls=records.count(),
        available_s=quota_available_s(org_id=org.pk),
    )


def usage_record_list(*, org: Organization, period_start: datetime) -> QuerySet[UsageRecord]:
    return UsageRecord.objects.filter(org=org, period_start=period_start).order_by("ended_at")


def invoice_list(*, org: Organization) -> QuerySet[Invoice]:
    return Invoice.objects.filter(org=org)


def invoice_get(*, org: Organization, pk: int) -> Invoice:
    return Invoice.objects.select_related("org").get(org=org, pk=pk)
