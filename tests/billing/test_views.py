"""The dashboard's billing page, CSV export and invoice downloads, per organization."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.utils import timezone

from billing.invoices import invoice_close
from billing.services import month_bounds, subscription_set_remaining
from sessions.models import Call
from sessions.services import calls_reconcile
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db


def bill(open_call: Callable[..., Call], seconds: float) -> Call:
    call = open_call(age_s=seconds)
    Call.objects.filter(pk=call.pk).update(
        last_seen_at=call.started_at + timedelta(seconds=seconds)
    )
    assert calls_reconcile(stale_after_s=0) == 1
    return call


def test_the_billing_page_shows_the_meter_and_invoices(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=100)
    bill(open_call, 80)
    invoice = invoice_close(org_id=tenant_a.org.pk, period_start=month_bounds(timezone.now())[0])

    page = tenant_a.client.get("/dashboard/billing/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "20 included s left" in html
    assert 'value="100"' in html  # of the Free plan's 100 h, set to 100 s left: all used
    assert invoice.number in html


def test_usage_csv_lists_the_periods_ledger(
    tenant_a: Tenant, tenant_b: Tenant, open_call: Callable[..., Call]
) -> None:
    call = bill(open_call, 42)

    response = tenant_a.client.get("/dashboard/billing/usage.csv")
    other = tenant_b.client.get("/dashboard/billing/usage.csv")

    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Type"].startswith("text/csv")
    assert [(r["call_id"], r["billed_seconds"]) for r in rows] == [(str(call.pk), "42")]
    assert len(list(csv.reader(io.StringIO(other.content.decode())))) == 1  # header only


def test_invoices_download_only_in_their_organization(
    tenant_a: Tenant, tenant_b: Tenant, open_call: Callable[..., Call]
) -> None:
    bill(open_call, 10)
    invoice = invoice_close(org_id=tenant_a.org.pk, period_start=month_bounds(timezone.now())[0])

    pdf = tenant_a.client.get(f"/dashboard/billing/invoices/{invoice.pk}/pdf/")
    html = tenant_a.client.get(f"/dashboard/billing/invoices/{invoice.pk}/")
    foreign = tenant_b.client.get(f"/dashboard/billing/invoices/{invoice.pk}/")

    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    assert html.status_code == 200 and invoice.number in html.content.decode()
    assert foreign.status_code == 404
