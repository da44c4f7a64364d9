"""Usage to Stripe as meter events, against a local server that plays Stripe's
API: what is sent, once per call however often the task runs, retried when
Stripe fails, resent by beat, and nothing at all when it is not configured."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from celery.exceptions import Retry
from django.utils import timezone

from billing.models import Subscription, UsageRecord
from billing.services import subscription_for
from billing.stripe_meter import usage_record_report
from billing.tasks import stripe_report_unreported, stripe_report_usage
from sessions.models import Call
from sessions.services import call_end
from tests.support.stripe_server import FakeStripe
from tests.support.tenants import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def with_customer(tenant: Tenant, customer_id: str = "cus_alpha123") -> None:
    subscription_for(org_id=tenant.org.pk)
    Subscription.objects.filter(org=tenant.org).update(stripe_customer_id=customer_id)


def end(call: Call) -> UsageRecord:
    call_end(call_id=str(call.pk), reason="hangup")
    return UsageRecord.objects.get(call_ref=call.pk)


def test_an_ended_call_is_one_meter_event_with_the_call_id(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe
) -> None:
    # given an organization with a Stripe customer
    call = open_call(age_s=42)
    with_customer(tenant_a)

    # when its call ends
    record = end(call)

    # then Stripe got one meter event for the call's billed seconds
    assert len(stripe_api.requests) == 1
    sent = stripe_api.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/billing/meter_events")
    assert sent.headers["authorization"] == "Bearer sk_test_voiceapp"
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    assert sent.headers["idempotency-key"] == f"meter-event-{call.pk}"
    assert sent.form == {
        "event_name": "voice_call_seconds",
        "payload[stripe_customer_id]": "cus_alpha123",
        "payload[value]": str(record.billed_seconds),
        "identifier": str(call.pk),
        "timestamp": str(int(record.ended_at.timestamp())),
    }
    assert record.billed_seconds in (42, 43)
    assert record.stripe_reported_at is not None


def test_the_task_run_again_sends_nothing_more(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe
) -> None:
    with_customer(tenant_a)
    record = end(open_call(age_s=5))
    assert len(stripe_api.requests) == 1

    # when the task is delivered twice more, and beat looks for unsent rows
    stripe_report_usage.delay(record.pk)
    stripe_report_usage.apply(args=(record.pk,))
    UsageRecord.objects.filter(pk=record.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert stripe_report_unreported.delay().get() == 0

    # then Stripe still has one request
    assert len(stripe_api.requests) == 1


def test_two_workers_at_once_send_one_request(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe, settings: Any
) -> None:
    # given a ledger row not sent yet (the broker lost the task) and a slow Stripe
    settings.STRIPE_API_KEY = ""
    with_customer(tenant_a)
    record = end(open_call(age_s=9))
    settings.STRIPE_API_KEY = "sk_test_voiceapp"
    assert stripe_api.requests == []
    stripe_api.delay_s = 0.5

    # when two workers run its task at the same moment
    results: list[bool] = []
    barrier = threading.Barrier(2)

    def work() -> None:
        from django.db import connection

        barrier.wait()
        try:
            results.append(usage_record_report(record_id=record.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    # then one sent it and the other found it taken
    assert sorted(results) == [False, True]
    assert len(stripe_api.requests) == 1
    assert UsageRecord.objects.get(pk=record.pk).stripe_reported_at is not None


def test_a_stripe_failure_is_retried_with_the_same_identifier(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe, settings: Any
) -> None:
    # given a ledger row whose event is not sent yet
    settings.STRIPE_API_KEY = ""
    with_customer(tenant_a)
    record = end(open_call(age_s=3))
    settings.STRIPE_API_KEY = "sk_test_voiceapp"

    # when Stripe answers 500 once: the task asks Celery to retry in 10 s
    stripe_api.answer(500)
    with pytest.raises(Retry) as raised:
        stripe_report_usage.apply(args=(record.pk,), throw=True)
    assert raised.value.when == 10
    assert UsageRecord.objects.get(pk=record.pk).stripe_reported_at is None

    # and when Stripe fails again, the retry Celery runs gets it through
    stripe_api.answer(503)
    assert stripe_report_usage.apply(args=(record.pk,), throw=False).get() is True

    # then the same event went out three times and is recorded as sent
    assert len(stripe_api.requests) == 3
    assert all(r.form == stripe_api.requests[0].form for r in stripe_api.requests)
    assert stripe_api.requests[0].form["identifier"] == str(record.call_ref)
    assert {r.headers["idempotency-key"] for r in stripe_api.requests} == {
        f"meter-event-{record.call_ref}"
    }
    assert UsageRecord.objects.get(pk=record.pk).stripe_reported_at is not None


def test_a_failing_stripe_does_not_fail_the_call(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe
) -> None:
    with_customer(tenant_a)
    stripe_api.answer(500)

    record = end(open_call(age_s=3))

    assert Call.objects.get(pk=record.call_ref).end_reason == "hangup"
    assert len(stripe_api.requests) == 1 and record.stripe_reported_at is None


def test_a_refused_event_is_not_retried_and_stays_unsent(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe
) -> None:
    with_customer(tenant_a, "cus_gone")
    stripe_api.answer(400)

    record = end(open_call(age_s=3))

    assert len(stripe_api.requests) == 1
    assert record.stripe_reported_at is None


def test_beat_resends_what_stripe_does_not_have(
    tenant_a: Tenant,
    tenant_b: Tenant,
    open_call: Callable[..., Call],
    stripe_api: FakeStripe,
    settings: Any,
) -> None:
    # given two calls billed while Stripe was down for longer than the retries
    with_customer(tenant_a)
    settings.STRIPE_API_KEY = ""  # as if every attempt had failed
    records = [end(open_call(age_s=age)) for age in (4, 6)]
    settings.STRIPE_API_KEY = "sk_test_voiceapp"
    UsageRecord.objects.update(created_at=timezone.now() - timedelta(minutes=10))
    # and a row of an organization without a Stripe customer
    other = Call.objects.create(
        org=tenant_b.org,
        persona=tenant_b.org.personas.get(),
        persona_name="x",
        transport=Call.Transport.WEBSOCKET,
        started_at=timezone.now() - timedelta(seconds=8),
    )
    end(other)
    UsageRecord.objects.update(created_at=timezone.now() - timedelta(minutes=10))

    # when beat's resend runs (Stripe failing the first try), then runs again
    stripe_api.answer(500)
    assert stripe_report_unreported.delay().get() == 0
    assert stripe_report_unreported.delay().get() == 2
    assert stripe_report_unreported.delay().get() == 0

    # then each of the customer's calls went to Stripe once more than the failed try
    identifiers = [r.form["identifier"] for r in stripe_api.requests]
    assert sorted(identifiers[1:]) == sorted(str(r.call_ref) for r in records)
    assert str(other.pk) not in identifiers
    assert UsageRecord.objects.filter(stripe_reported_at=None).get().call_ref == other.pk


def test_off_without_settings_sends_nothing(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe, settings: Any
) -> None:
    # given a customer id but no meter event name configured
    settings.STRIPE_METER_EVENT_NAME = ""
    with_customer(tenant_a)

    # when a call ends and every path to Stripe is tried
    record = end(open_call(age_s=3))
    UsageRecord.objects.update(created_at=timezone.now() - timedelta(hours=1))
    stripe_report_usage.delay(record.pk)
    stripe_report_unreported.delay()

    # then no request was made
    assert stripe_api.requests == []
    assert UsageRecord.objects.get().stripe_reported_at is None


def test_an_organization_without_a_customer_is_not_sent(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe
) -> None:
    record = end(open_call(age_s=3))

    assert usage_record_report(record_id=record.pk) is False
    assert stripe_api.requests == []


def test_without_a_broker_the_call_does_not_wait_for_stripe(
    tenant_a: Tenant, open_call: Callable[..., Call], stripe_api: FakeStripe, settings: Any
) -> None:
    # given no task broker (events go from a thread) and a Stripe that takes 1.5 s
    settings.STRIPE_REPORT_THREAD = True
    with_customer(tenant_a)
    stripe_api.delay_s = 1.5

    # when a call ends
    started = time.monotonic()
    record = end(open_call(age_s=3))
    took = time.monotonic() - started

    # then the end did not wait for Stripe, and the event arrives after it
    assert took < 1.0
    deadline = time.monotonic() + 10
    while UsageRecord.objects.get(pk=record.pk).stripe_reported_at is None:
        assert time.monotonic() < deadline, "the meter event was never sent"
        time.sleep(0.1)
    assert [r.form["identifier"] for r in stripe_api.requests] == [str(record.call_ref)]
