"""The usage ledger on real Postgres: one row and one decrement per call, under
retries, concurrent ends and a web process killed mid-call; periods, plan
changes and the 80 % email."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core import mail
from django.core.management import call_command
from django.db import connection, connections
from django.utils import timezone
from standardwebhooks import Webhook

from billing.models import Plan, Subscription, UsageRecord
from billing.services import (
    billed_seconds,
    month_bounds,
    subscription_change_plan,
    subscription_for,
    subscription_set_remaining,
    usage_record_create,
)
from sessions.models import Call
from sessions.services import call_end, call_usage_add, calls_reconcile
from tests.support.tenants import Tenant
from tests.support.webhook_receiver import webhook_receiver
from voiceapp.tenants.services import secret_key_create
from webhooks.services import webhook_endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def remaining(tenant: Tenant) -> int:
    return Subscription.objects.get(org=tenant.org).remaining_seconds


def test_a_call_is_billed_per_started_second_with_what_it_used(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    # given a call of 12.3 s that transcribed, generated and spoke
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=1000)
    call = open_call(age_s=12.3)
    call_usage_add(call_id=str(call.pk), asr_seconds=2.5)
    call_usage_add(
        call_id=str(call.pk), llm_input_tokens=120, llm_output_tokens=30, tts_characters=88
    )
    call_usage_add(call_id=str(call.pk), asr_seconds=1.25, llm_output_tokens=12)

    # when it ends
    ended = call_end(call_id=str(call.pk), reason="hangup")

    # then the ledger has its seconds rounded up and its usage summed
    assert ended is not None
    record = UsageRecord.objects.get()
    assert record.billed_seconds == billed_seconds(ended.duration_s)
    assert record.billed_seconds in (13, 14)  # 12.3 s and the time the test took
    assert (record.included_seconds, record.overage_seconds) == (record.billed_seconds, 0)
    assert record.asr_seconds == pytest.approx(3.75)
    assert (record.llm_input_tokens, record.llm_output_tokens) == (120, 42)
    assert record.tts_characters == 88
    assert record.end_reason == "hangup" and record.call_id == call.pk
    assert remaining(tenant_a) == 1000 - record.billed_seconds


def test_billed_seconds_round_up_any_started_second() -> None:
    assert [billed_seconds(s) for s in (None, 0.0, 0.01, 1.0, 1.01, 59.99)] == [0, 0, 1, 1, 2, 60]


def test_retries_write_one_row_and_decrement_once(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=500)
    call = open_call(age_s=40)

    # when the end is recorded, then retried both through the call and the ledger
    first = call_end(call_id=str(call.pk), reason="hangup")
    assert first is not None
    call_end(call_id=str(call.pk), reason="lost")
    again, created = usage_record_create(call=first)

    assert not created
    assert UsageRecord.objects.count() == 1
    assert 40 <= again.billed_seconds <= 41
    assert remaining(tenant_a) == 500 - again.billed_seconds
    assert Call.objects.get().end_reason == "hangup"


def _in_threads(n: int, work: Callable[[], object]) -> list[BaseException]:
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return errors


def test_concurrent_ends_write_one_row(tenant_a: Tenant, open_call: Callable[..., Call]) -> None:
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=500)
    call = open_call(age_s=20)

    # when eight threads end the same call at once
    errors = _in_threads(8, lambda: call_end(call_id=str(call.pk), reason="hangup"))

    assert errors == []
    record = UsageRecord.objects.get(call_ref=call.pk)
    assert 20 <= record.billed_seconds <= 22
    assert remaining(tenant_a) == 500 - record.billed_seconds


def test_concurrent_ledger_writes_for_one_ended_call_write_one_row(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    # given a call that ended without a ledger row (as if its billing had failed)
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=500)
    call = open_call(age_s=7)
    Call.objects.filter(pk=call.pk).update(
        ended_at=timezone.now(), duration_s=7.0, end_reason="hangup"
    )
    ended = Call.objects.get(pk=call.pk)

    # when eight threads bill it at once
    errors = _in_threads(8, lambda: usage_record_create(call=ended))

    assert errors == []
    assert UsageRecord.objects.get().billed_seconds == 7
    assert remaining(tenant_a) == 493


def test_included_seconds_then_overage(tenant_a: Tenant, open_call: Callable[..., Call]) -> None:
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=10)

    first = call_end(call_id=str(open_call(age_s=25).pk), reason="hangup")
    second = call_end(call_id=str(open_call(age_s=5).pk), reason="hangup")

    assert first is not None and second is not None
    by_call = {r.call_ref: r for r in UsageRecord.objects.all()}
    assert by_call[first.pk].included_seconds == 10
    assert by_call[first.pk].overage_seconds == by_call[first.pk].billed_seconds - 10 >= 15
    assert by_call[second.pk].included_seconds == 0
    assert by_call[second.pk].overage_seconds == by_call[second.pk].billed_seconds >= 5
    assert remaining(tenant_a) == 0


def test_reconcile_bills_a_call_whose_process_was_killed_once(tenant_a: Tenant) -> None:
    # given a web process with a call in progress
    _, raw = secret_key_create(org=tenant_a.org, name="killed")
    persona = tenant_a.org.personas.get()
    persona.agent_speaks_first = False
    persona.save()
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=3000)
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://{}@{}:{}/{}".format(
            db["USER"], db["HOST"] or "127.0.0.1", db["PORT"] or 5432, db["NAME"]
        ),
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_EMBEDDED": "0",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.call_process", raw, persona.slug],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        line = ""
        while not line.startswith("CALL ") and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "the call process exited"
        assert line.startswith("CALL "), "the call did not start"
        time.sleep(1.0)
    finally:
        # when the process is killed mid-call: nothing of it runs any more
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    call = Call.objects.get()
    assert call.ended_at is None and not UsageRecord.objects.exists()

    # then the reconciliation closes and bills it once; a second run does nothing
    time.sleep(1.2)
    assert calls_reconcile(stale_after_s=1) == 1
    assert calls_reconcile(stale_after_s=1) == 0
    call.refresh_from_db()
    record = UsageRecord.objects.get()
    assert call.end_reason == "lost"
    assert record.call_ref == call.pk and record.end_reason == "lost"
    assert record.billed_seconds == billed_seconds(call.duration_s)
    assert remaining(tenant_a) == 3000 - record.billed_seconds


def test_reconcile_leaves_calls_that_are_alive(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    open_call(age_s=300, seen_s=5)
    stale = open_call(age_s=300, seen_s=200)

    assert calls_reconcile(stale_after_s=90) == 1

    assert list(UsageRecord.objects.values_list("call_ref", flat=True)) == [stale.pk]
    assert UsageRecord.objects.get().billed_seconds == 100


def test_owners_get_one_email_at_80_percent_per_period(
    tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    # given a plan of 100 s with 30 s left
    plan = Plan.objects.create(name="Tiny", slug="tiny", included_seconds=100)
    sub = subscription_for(org_id=tenant_a.org.pk)
    Subscription.objects.filter(pk=sub.pk).update(plan=plan, remaining_seconds=30)

    # when a call takes it to 85 % used, and another one past it
    call_end(call_id=str(open_call(age_s=15).pk), reason="hangup")
    call_end(call_id=str(open_call(age_s=5).pk), reason="hangup")

    # then the owner got one email
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [tenant_a.owner.email]
    percent = int(mail.outbox[0].subject.split(": ")[1].split(" %")[0])
    assert 80 <= percent < 90

    # and in the next period it can come again
    next_month = month_bounds(timezone.now())[1] + timedelta(hours=1)
    rolled = subscription_for(org_id=tenant_a.org.pk, now=next_month)
    assert rolled.remaining_seconds == 100 and rolled.alert_sent_for != rolled.period_start


def test_webhooks_hear_of_80_percent_once_per_period(
    settings, tenant_a: Tenant, open_call: Callable[..., Call]
) -> None:
    # given a plan of 100 s with 30 s left, and an endpoint for usage.threshold
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    plan = Plan.objects.create(name="Tiny", slug="tiny", included_seconds=100)
    sub = subscription_for(org_id=tenant_a.org.pk)
    Subscription.objects.filter(pk=sub.pk).update(plan=plan, remaining_seconds=30)
    with webhook_receiver() as receiver:
        _, secret = webhook_endpoint_create(
            org=tenant_a.org, url=receiver.url, events=["usage.threshold"]
        )
        # when a call takes it to 85 % used, and another one past it
        call_end(call_id=str(open_call(age_s=15).pk), reason="hangup")
        call_end(call_id=str(open_call(age_s=5).pk), reason="hangup")
        deadline = time.monotonic() + 10
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # room for a second delivery, which must not come
    # then one signed event says how much of which period is used
    assert len(receiver.received) == 1
    request = receiver.received[0]
    event = Webhook(secret).verify(request.body, request.headers)
    assert event["type"] == "usage.threshold"
    data = event["data"]
    assert data["threshold_percent"] == 80 and data["included_seconds"] == 100
    assert 80 <= data["used_seconds"] < 90 and data["plan"] == "tiny"
    assert data["period_start"] == subscription_for(org_id=tenant_a.org.pk).period_start.isoformat()


def test_a_plan_change_takes_effect_at_the_next_period(tenant_a: Tenant) -> None:
    sub = subscription_for(org_id=tenant_a.org.pk)
    start_plan = sub.plan
    bigger = Plan.objects.create(
        name="Pro",
        slug="pro",
        included_seconds=50_000,
        overage_price_per_minute=Decimal("0.0200"),
        max_concurrent_calls=20,
    )

    subscription_change_plan(org_id=tenant_a.org.pk, plan=bigger)

    assert subscription_for(org_id=tenant_a.org.pk).plan == start_plan
    later = month_bounds(timezone.now())[1] + timedelta(days=40)  # two periods on
    rolled = subscription_for(org_id=tenant_a.org.pk, now=later)
    assert rolled.plan == bigger and rolled.pending_plan is None
    assert rolled.remaining_seconds == 50_000
    assert rolled.period_start == month_bounds(later)[0]


def test_every_organization_gets_the_default_plan(tenant_a: Tenant, tenant_b: Tenant) -> None:
    subs = [subscription_for(org_id=t.org.pk) for t in (tenant_a, tenant_b)]

    assert {s.plan.slug for s in subs} == {"free"}
    assert all(s.remaining_seconds == s.plan.included_seconds > 0 for s in subs)


def test_set_quota_command(tenant_a: Tenant) -> None:
    out = io.StringIO()

    call_command("set_quota", org=tenant_a.org.slug, seconds=42, json=True, stdout=out)

    result = json.loads(out.getvalue())
    assert result["org"] == tenant_a.org.slug and result["remaining_seconds"] == 42
    assert remaining(tenant_a) == 42
