"""Delivery to a real HTTP server: signed, retried with backoff under the same
webhook-id, resent on request, and never lost to a dead task."""

from __future__ import annotations

import json
import socket
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook

from tests.support.tenants import Tenant
from tests.support.webhook_receiver import Receiver
from webhooks import services
from webhooks.models import WebhookDelivery
from webhooks.services import (
    RETRY_DELAYS_S,
    emit_event,
    webhook_attempt,
    webhook_endpoint_create,
    webhook_resend,
    webhooks_retry_overdue,
)

pytestmark = pytest.mark.django_db


def test_an_event_arrives_signed_at_subscribed_endpoints_only(
    tenant_a: Tenant, tenant_b: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    _, secret = webhook_endpoint_create(
        org=tenant_a.org, url=receiver.url, events=["usage.threshold"]
    )
    webhook_endpoint_create(org=tenant_a.org, url=receiver.url + "/calls", events=["call.ended"])
    webhook_endpoint_create(org=tenant_b.org, url=receiver.url + "/b", events=["usage.threshold"])

    with django_capture_on_commit_callbacks(execute=True):
        deliveries = emit_event(tenant_a.org, "usage.threshold", {"percent": 80, "seconds": 4800})

    assert len(deliveries) == 1 and len(receiver.received) == 1
    request = receiver.received[0]
    assert request.path == "/hooks/voice"
    assert request.headers["content-type"] == "application/json"
    payload = Webhook(secret).verify(request.body, request.headers)
    assert payload["type"] == "usage.threshold"
    assert payload["data"] == {"percent": 80, "seconds": 4800}
    delivery = WebhookDelivery.objects.get()
    assert request.headers["webhook-id"] == delivery.webhook_id
    assert delivery.webhook_id.startswith("msg_")
    assert delivery.status == "delivered" and delivery.attempts == 1
    assert delivery.last_response_code == 200 and delivery.delivered_at is not None


def test_retries_through_celery_keep_the_webhook_id(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    _, secret = webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    receiver.answer(500, 500)

    with django_capture_on_commit_callbacks(execute=True):
        emit_event(tenant_a.org, "call.ended", {"call_id": "x"})

    ids = {r.headers["webhook-id"] for r in receiver.received}
    assert len(receiver.received) == 3 and len(ids) == 1
    for request in receiver.received:
        assert Webhook(secret).verify(request.body, request.headers)["data"] == {"call_id": "x"}
    delivery = WebhookDelivery.objects.get()
    assert delivery.webhook_id in ids
    assert delivery.status == "delivered" and delivery.attempts == 3
    assert delivery.last_response_code == 200 and delivery.last_error == ""


def test_backoff_schedule_then_failed(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.started"])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        (delivery,) = emit_event(tenant_a.org, "call.started", {"call_id": "y"})
    assert len(queued) == 1  # the first attempt, queued after the commit
    receiver.answer(*[503] * 6)
    waits = []

    for attempt in range(1, 7):
        before = timezone.now()
        with django_capture_on_commit_callbacks(execute=False) as queued:
            status = webhook_attempt(delivery_id=delivery.pk, attempt=attempt)
        delivery.refresh_from_db()
        assert delivery.attempts == attempt and delivery.last_response_code == 503
        assert delivery.last_error == "HTTP 503"
        if attempt < 6:
            assert status == "pending" and len(queued) == 1
            assert delivery.next_attempt_at is not None
            waits.append(round((delivery.next_attempt_at - before).total_seconds()))

    assert status == "failed" and delivery.status == "failed" and len(queued) == 0
    assert waits == [10, 60, 300, 1800, 7200] == list(RETRY_DELAYS_S)
    assert len(receiver.received) == 6
    assert {r.headers["webhook-id"] for r in receiver.received} == {delivery.webhook_id}


def test_a_duplicate_task_for_the_same_attempt_sends_nothing(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.started"])
    with django_capture_on_commit_callbacks(execute=False):
        (delivery,) = emit_event(tenant_a.org, "call.started", {})

    assert webhook_attempt(delivery_id=delivery.pk, attempt=1) == "delivered"
    assert webhook_attempt(delivery_id=delivery.pk, attempt=1) == "skipped"
    assert webhook_attempt(delivery_id=delivery.pk, attempt=2) == "skipped"
    assert len(receiver.received) == 1


def test_resend_carries_the_same_id_and_body_with_a_new_signature(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    _, secret = webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    with django_capture_on_commit_callbacks(execute=True):
        (delivery,) = emit_event(tenant_a.org, "call.ended", {"call_id": "z"})
    time.sleep(1.05)  # the timestamp has a resolution of one second

    with django_capture_on_commit_callbacks(execute=True):
        webhook_resend(delivery=delivery)

    first, again = receiver.received
    assert again.headers["webhook-id"] == first.headers["webhook-id"] == delivery.webhook_id
    assert again.body == first.body
    assert int(again.headers["webhook-timestamp"]) > int(first.headers["webhook-timestamp"])
    assert again.headers["webhook-signature"] != first.headers["webhook-signature"]
    assert Webhook(secret).verify(again.body, again.headers)["data"] == {"call_id": "z"}
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2


def test_no_answer_in_time_is_a_failed_attempt(
    tenant_a: Tenant, allow_private: None, settings, django_capture_on_commit_callbacks
) -> None:
    settings.WEBHOOK_TIMEOUT_S = 0.5
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # connections are queued, never answered
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
    webhook_endpoint_create(org=tenant_a.org, url=url, events=["call.ended"])
    try:
        with django_capture_on_commit_callbacks(execute=False):
            (delivery,) = emit_event(tenant_a.org, "call.ended", {})
        started = time.monotonic()
        status = webhook_attempt(delivery_id=delivery.pk, attempt=1)
        elapsed = time.monotonic() - started
    finally:
        silent.close()

    delivery.refresh_from_db()
    assert status == "pending" and elapsed < 3
    assert delivery.last_response_code is None
    assert delivery.last_error == "No answer within 0.5 s."


def test_an_overdue_delivery_is_sent_again(
    tenant_a: Tenant, receiver: Receiver, django_capture_on_commit_callbacks
) -> None:
    webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    with django_capture_on_commit_callbacks(execute=False):  # the queued task is lost
        (delivery,) = emit_event(tenant_a.org, "call.ended", {"n": 1})
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(minutes=2)
    )

    with django_capture_on_commit_callbacks(execute=True):
        picked = webhooks_retry_overdue()

    assert picked == 1 and len(receiver.received) == 1
    assert json.loads(receiver.received[0].body)["data"] == {"n": 1}
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert webhooks_retry_overdue() == 0


def test_unknown_events_are_refused(tenant_a: Tenant) -> None:
    with pytest.raises(ValueError, match="Unknown webhook event"):
        emit_event(tenant_a.org, "call.exploded", {})


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_a_slow_endpoint_does_not_hold_up_the_caller(
    settings, monkeypatch: pytest.MonkeyPatch, tenant_a: Tenant, receiver: Receiver
) -> None:
    # given the embedded default (no broker: Celery runs tasks inline) and an
    # endpoint that takes 1.5 s to answer, failing once
    settings.WEBHOOK_DELIVERY_THREAD = True
    monkeypatch.setattr(services, "RETRY_DELAYS_S", (0.2, *RETRY_DELAYS_S[1:]))
    receiver.delay_s = 1.5
    receiver.answer(500)
    _, secret = webhook_endpoint_create(org=tenant_a.org, url=receiver.url, events=["call.ended"])
    # when an event is emitted (as a call's end does)
    started = time.monotonic()
    with transaction.atomic():
        emit_event(tenant_a.org, "call.ended", {"call_id": "slow"})
    emitted_in = time.monotonic() - started
    # then the caller goes on at once, and the delivery arrives, retried, in the background
    assert emitted_in < 1.0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if WebhookDelivery.objects.get().status == "delivered":
            break
        time.sleep(0.1)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "delivered" and delivery.attempts == 2
    assert len(receiver.received) == 2
    assert Webhook(secret).verify(receiver.received[1].body, receiver.received[1].headers)
