"""Retention on real Postgres: calls older than the organization's plan keeps
them are deleted with their transcript and timings; the ledger and the
invoices built from it stay as they were."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from billing.invoices import invoice_close
from billing.models import Invoice, Plan, Subscription, UsageRecord
from billing.retention import calls_purge_expired
from billing.services import month_bounds, subscription_for
from billing.tasks import purge_expired_calls
from sessions.models import Call, CallItem, CallTurn
from sessions.services import call_end
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db


def on_plan(tenant: Tenant, retention_days: int) -> None:
    plan = Plan.objects.create(
        name=f"Keep {retention_days} d",
        slug=f"keep-{retention_days}",
        included_seconds=3600,
        retention_days=retention_days,
    )
    sub = subscription_for(org_id=tenant.org.pk)
    Subscription.objects.filter(pk=sub.pk).update(plan=plan)


@pytest.fixture
def call_ended_days_ago(open_call: Callable[..., Call]) -> Callable[..., Call]:
    """A billed call with a transcript and a turn, that ended `days` ago."""

    def make(tenant: Tenant, days: float) -> Call:
        persona = tenant.org.personas.get()
        call = Call.objects.create(
            org=tenant.org,
            persona=persona,
            persona_name=persona.name,
            transport=Call.Transport.WEBSOCKET,
            started_at=timezone.now() - timedelta(seconds=30),
        )
        CallItem.objects.create(call=call, item_id="i1", role="user", text="Hello", at_s=1.0)
        CallItem.objects.create(call=call, item_id="i2", role="assistant", text="Hi", at_s=2.0)
        CallTurn.objects.create(call=call, response_id="r1", status="completed", at_s=2.0)
        call_end(call_id=str(call.pk), reason="hangup")
        shift = timedelta(days=days)
        call = Call.objects.get(pk=call.pk)
        assert call.ended_at is not None
        Call.objects.filter(pk=call.pk).update(
            started_at=call.started_at - shift,
            last_seen_at=call.last_seen_at - shift,
            ended_at=call.ended_at - shift,
        )
        record = UsageRecord.objects.get(call_ref=call.pk)
        UsageRecord.objects.filter(pk=record.pk).update(
            started_at=record.started_at - shift,
            ended_at=record.ended_at - shift,
            period_start=month_bounds(record.ended_at - shift)[0],
        )
        return call

    return make


def test_calls_past_the_plan_retention_go_and_the_ledger_stays(
    tenant_a: Tenant,
    tenant_b: Tenant,
    call_ended_days_ago: Callable[..., Call],
    open_call: Callable[..., Call],
) -> None:
    # given an organization keeping calls 7 days, another keeping them 90
    on_plan(tenant_a, 7)
    on_plan(tenant_b, 90)
    old = call_ended_days_ago(tenant_a, 10)
    older = call_ended_days_ago(tenant_a, 45)
    recent = call_ended_days_ago(tenant_a, 3)
    still_open = open_call(age_s=20 * 86400, seen_s=20 * 86400)  # never ended: never purged
    theirs = [call_ended_days_ago(tenant_b, d) for d in (10, 45)]
    # and an invoice of the month the 45-day-old call was billed in
    older_record = UsageRecord.objects.get(call_ref=older.pk)
    invoice = invoice_close(org_id=tenant_a.org.pk, period_start=older_record.period_start)
    ledger_before = {
        r.call_ref: model_to_dict(r, exclude=["call"]) for r in UsageRecord.objects.all()
    }
    invoice_before = (model_to_dict(invoice), [model_to_dict(li) for li in invoice.lines.all()])

    # when the daily task runs, twice
    assert purge_expired_calls.delay().get() == 2
    assert calls_purge_expired() == 0

    # then the 7-day organization's expired calls are gone with their transcripts
    left = set(Call.objects.values_list("pk", flat=True))
    assert left == {recent.pk, still_open.pk, *(c.pk for c in theirs)}
    assert not CallItem.objects.filter(call_id__in=[old.pk, older.pk]).exists()
    assert not CallTurn.objects.filter(call_id__in=[old.pk, older.pk]).exists()
    assert CallItem.objects.filter(call=recent).count() == 2
    assert CallTurn.objects.filter(call=theirs[1]).count() == 1
    # and every ledger row is there, unchanged but for the link to the deleted call
    ledger_after = {
        r.call_ref: model_to_dict(r, exclude=["call"]) for r in UsageRecord.objects.all()
    }
    assert ledger_after == ledger_before
    assert UsageRecord.objects.get(call_ref=old.pk).call_id is None
    assert UsageRecord.objects.get(call_ref=recent.pk).call_id == recent.pk
    # and the invoice reads as before, and closing its period again changes nothing
    invoice = Invoice.objects.get(pk=invoice.pk)
    assert (model_to_dict(invoice), [model_to_dict(li) for li in invoice.lines.all()]) == (
        invoice_before
    )
    assert invoice_close(org_id=tenant_a.org.pk, period_start=invoice.period_start).pk == invoice.pk


def test_zero_days_keeps_calls_forever(
    tenant_a: Tenant, call_ended_days_ago: Callable[..., Call]
) -> None:
    on_plan(tenant_a, 0)
    call = call_ended_days_ago(tenant_a, 400)

    assert calls_purge_expired() == 0
    assert Call.objects.filter(pk=call.pk).exists()


def test_an_organization_without_a_subscription_counts_on_the_default_plan(
    tenant_a: Tenant, call_ended_days_ago: Callable[..., Call]
) -> None:
    # given calls of an organization whose subscription row is gone (default plan: 30 days)
    old = call_ended_days_ago(tenant_a, 31)
    recent = call_ended_days_ago(tenant_a, 29)
    Subscription.objects.filter(org=tenant_a.org).delete()

    assert calls_purge_expired() == 1
    assert list(Call.objects.values_list("pk", flat=True)) == [recent.pk]
    assert UsageRecord.objects.filter(call_ref=old.pk).exists()
