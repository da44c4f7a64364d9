"""Invoices: built from the ledger when a period closes, rendered as HTML and PDF.

Arithmetic: a period's calls are summed from its `UsageRecord` rows. The
included seconds cost nothing; the overage costs
``overage_seconds * price_per_minute / 60``, rounded half up to the cent once,
on the total (not per call)."""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal

from django.db import transaction
from django.db.models import Count, Sum
from django.template.loader import render_to_string
from django.utils import timezone

from billing.models import Invoice, InvoiceLine, Plan, Subscription, UsageRecord
from billing.services import month_bounds, subscription_for

CENT = Decimal("0.01")


def overage_amount(*, seconds: int, price_per_minute: Decimal) -> Decimal:
    return (Decimal(seconds) * price_per_minute / 60).quantize(CENT, rounding=ROUND_HALF_UP)


def _minutes(seconds: int) -> Decimal:
    return (Decimal(seconds) / 60).quantize(CENT, rounding=ROUND_HALF_UP)


@transaction.atomic
def invoice_close(*, org_id: int, period_start: datetime) -> Invoice:
    """The invoice of one closed period; built once, returned as is after that."""
    existing = Invoice.objects.filter(org_id=org_id, period_start=period_start).first()
    if existing is not None:
        return existing
    start, end = month_bounds(period_start)
    records = UsageRecord.objects.filter(org_id=org_id, period_start=start)
    totals = records.aggregate(
        calls=Count("pk"),
        billed=Sum("billed_seconds"),
        included=Sum("included_seconds"),
        overage=Sum("overage_seconds"),
    )
    last = records.select_related("plan").order_by("-ended_at").first()
    plan: Plan = last.plan if last is not None else subscription_for(org_id=org_id).plan
    overage = int(totals["overage"] or 0)
    included = int(totals["included"] or 0)
    amount = overage_amount(seconds=overage, price_per_minute=plan.overage_price_per_minute)
    sub = Subscription.objects.select_related("org").get(org_id=org_id)
    invoice, created = Invoice.objects.get_or_create(
        org_id=org_id,
        period_start=start,
        defaults={
            "number": f"{sub.org.slug}-{start:%Y-%m}",
            "period_end": end,
            "plan_name": plan.name,
            "currency": plan.currency,
            "calls": int(totals["calls"] or 0),
            "billed_seconds": int(totals["billed"] or 0),
            "included_seconds": included,
            "plan_included_seconds": plan.included_seconds,
            "overage_seconds": overage,
            "total": amount,
        },
    )
    if created:
        InvoiceLine.objects.bulk_create(
            [
                InvoiceLine(
                    invoice=invoice,
                    position=1,
                    description=(
                        f"{plan.name}: call time included "
                        f"({plan.included_seconds // 60} minutes a month)"
                    ),
                    quantity=_minutes(included),
                    unit="min",
                    unit_price=Decimal("0"),
                    amount=Decimal("0.00"),
                ),
                InvoiceLine(
                    invoice=invoice,
                    position=2,
                    description="Call time past the included minutes, billed per second",
                    quantity=_minutes(overage),
                    unit="min",
                    unit_price=plan.overage_price_per_minute,
                    amount=amount,
                ),
            ]
        )
    return invoice


def invoices_close_due(*, now: datetime | None = None) -> int:
    """Invoice every ended period that has usage and no invoice yet (the month
    just closed, and any a missed run left). Returns how many were built."""
    current_start = month_bounds(now or timezone.now())[0]
    due = set(
        UsageRecord.objects.filter(period_start__lt=current_start)
        .values_list("org_id", "period_start")
        .distinct()
    )
    done = set(Invoice.objects.values_list("org_id", "period_start"))
    built = 0
    for org_id, period_start in sorted(due - done):
        invoice_close(org_id=org_id, period_start=period_start)
        built += 1
    return built


def invoice_html(invoice: Invoice) -> str:
    return render_to_string(
        "billing/invoice.html", {"invoice": invoice, "lines": list(invoice.lines.all())}
    )


def invoice_pdf(invoice: Invoice) -> bytes:
    from weasyprint import HTML

    return bytes(HTML(string=invoice_html(invoice)).write_pdf())
