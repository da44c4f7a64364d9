"""Invoice arithmetic from the ledger, the monthly close, and the rendered bill."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.invoices import (
    invoice_close,
    invoice_html,
    invoice_pdf,
    invoices_close_due,
    overage_amount,
)
from billing.models import Invoice, Plan, Subscription, UsageRecord
from billing.services import month_bounds, subscription_for, subscription_set_remaining
from billing.tasks import close_periods
from sessions.models import Call
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def pro(tenant_a: Tenant) -> Plan:
    plan = Plan.objects.create(
        name="Pro",
        slug="pro",
        included_seconds=600,
        overage_price_per_minute=Decimal("0.0700"),
        currency="EUR",
    )
    sub = subscription_for(org_id=tenant_a.org.pk)
    Subscription.objects.filter(pk=sub.pk).update(plan=plan, remaining_seconds=600)
    return plan


def ended_call(open_call: Callable[..., Call], seconds: float) -> Call:
    call = open_call(age_s=seconds)
    Call.objects.filter(pk=call.pk).update(
        last_seen_at=call.started_at + timedelta(seconds=seconds)
    )
    return call


def bill(open_call: Callable[..., Call], seconds: float) -> None:
    """A call of exactly `seconds`, closed by the reconciliation's rule (end = last seen)."""
    from sessions.services import calls_reconcile

    ended_call(open_call, seconds)
    assert calls_reconcile(stale_after_s=0) == 1


def test_overage_is_priced_per_second_and_rounded_once() -> None:
    price = Decimal("0.0700")
    assert overage_amount(seconds=0, price_per_minute=price) == Decimal("0.00")
    assert overage_amount(seconds=60, price_per_minute=price) == Decimal("0.07")
    assert overage_amount(seconds=1, price_per_minute=price) == Decimal("0.00")  # 0.00117
    assert overage_amount(seconds=9, price_per_minute=price) == Decimal("0.01")  # 0.0105 up
    assert overage_amount(seconds=3601, price_per_minute=price) == Decimal("4.20")


def test_an_invoice_sums_the_ledger_of_its_period(
    tenant_a: Tenant, pro: Plan, open_call: Callable[..., Call]
) -> None:
    # given 600 s included and calls of 400.2 s, 300 s and 125 s in this period
    for seconds in (400.2, 300, 125):
        bill(open_call, seconds)
    start = month_bounds(timezone.now())[0]

    # when its invoice is built (twice: the second returns the first)
    invoice = invoice_close(org_id=tenant_a.org.pk, period_start=start)
    again = invoice_close(org_id=tenant_a.org.pk, period_start=start)

    # then 826 s are billed: 600 included, 226 overage at 0.07 EUR/min = 0.2637 -> 0.26
    assert again.pk == invoice.pk and Invoice.objects.count() == 1
    assert (invoice.calls, invoice.billed_seconds) == (3, 401 + 300 + 125)
    assert (invoice.included_seconds, invoice.overage_seconds) == (600, 226)
    assert invoice.total == Decimal("0.26") and invoice.currency == "EUR"
    lines = list(invoice.lines.all())
    assert [line.amount for line in lines] == [Decimal("0.00"), Decimal("0.26")]
    assert lines[1].quantity == Decimal("3.77") and lines[1].unit_price == Decimal("0.0700")
    assert sum(line.amount for line in lines) == invoice.total
    assert sum(UsageRecord.objects.values_list("billed_seconds", flat=True)) == 826


def test_a_hard_capped_plan_costs_nothing_past_the_included_time(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=5)
    bill(open_call, 8)

    invoice = invoice_close(org_id=tenant_a.org.pk, period_start=month_bounds(timezone.now())[0])

    assert (invoice.included_seconds, invoice.overage_seconds) == (5, 3)
    assert invoice.total == Decimal("0.00")


def test_the_monthly_close_invoices_ended_periods_once(
    tenant_a: Tenant, tenant_b: Tenant, pro: Plan, open_call: Callable[..., Call]
) -> None:
    # given usage last month (a record moved back a month) and this month
    bill(open_call, 90)
    last_month = month_bounds(month_bounds(timezone.now())[0] - timedelta(days=1))[0]
    UsageRecord.objects.update(period_start=last_month)
    bill(open_call, 30)

    # when the close runs twice
    built = close_periods.delay().get()
    assert invoices_close_due() == 0

    # then only the ended month has an invoice
    assert built == 1
    invoice = Invoice.objects.get()
    assert invoice.period_start == last_month and invoice.billed_seconds == 90
    assert invoice.number == f"{tenant_a.org.slug}-{last_month:%Y-%m}"


def test_the_invoice_renders_as_html_and_pdf(
    tenant_a: Tenant, pro: Plan, open_call: Callable[..., Call]
) -> None:
    bill(open_call, 700)
    invoice = invoice_close(org_id=tenant_a.org.pk, period_start=month_bounds(timezone.now())[0])

    html = invoice_html(invoice)
    pdf = invoice_pdf(invoice)

    assert invoice.number in html and "0.12 EUR" in html  # 100 s at 0.07/min = 0.1167
    assert pdf.startswith(b"%PDF-") and len(pdf) > 1000
