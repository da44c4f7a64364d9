"""Webhook endpoints, events and their delivery (Standard Webhooks).

An event becomes one `WebhookDelivery` per enabled endpoint subscribed to it,
created in the caller's transaction; after the commit each is handed to the
Celery task `webhooks.deliver`, which makes one attempt (`webhook_attempt`) and
schedules the next with `RETRY_DELAYS_S`. Nothing here may break or slow a
call: enqueueing errors are logged, never raised.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from voiceapp.tenants import crypto
from voiceapp.tenants.models import Organization
from webhooks import netguard, signing
from webhooks.models import EventType, WebhookDelivery, WebhookEndpoint
from webhooks.selectors import call_event_data

logger = logging.getLogger(__name__)

# After a failed attempt n (1-based) the next comes RETRY_DELAYS_S[n - 1] later;
# the attempt after the last delay is the last one.
RETRY_DELAYS_S: tuple[float, ...] = tuple(settings.WEBHOOK_RETRY_DELAYS_S)  # 10 s ... 2 h
MAX_ATTEMPTS = len(RETRY_DELAYS_S) + 1
# A delivery still pending this long after its attempt was due (a lost task, a
# worker killed mid-send) is picked up again by `webhooks_retry_overdue`.
OVERDUE_GRACE_S = 30
MAX_ENDPOINTS_PER_ORG = 20


def _check_url(url: str) -> netguard.Target:
    try:
        return netguard.resolve(url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS)
    except netguard.UnsafeURL as exc:
        raise ValidationError({"url": [str(exc)]}) from exc


def _clean_events(events: Any) -> list[str]:
    if not isinstance(events, list | tuple) or not events:
        raise ValidationError({"events": ["Choose at least one event."]})
    unknown = sorted({str(e) for e in events} - set(EventType.values))
    if unknown:
        raise ValidationError(
            {
                "events": [
                    f"Unknown event {', '.join(unknown)}; "
                    f"choose from {', '.join(EventType.values)}."
                ]
            }
        )
    return [e for e in EventType.values if e in events]


@transaction.atomic
def webhook_endpoint_create(
    *, org: Organization, url: str, events: list[str]
) -> tuple[WebhookEndpoint, str]:
    """The endpoint and its signing secret, which is not shown again."""
    url = url.strip()
    _check_url(url)
    cleaned = _clean_events(events)
    Organization.objects.select_for_update().filter(pk=org.pk).first()
    if WebhookEndpoint.objects.filter(org=org).count() >= MAX_ENDPOINTS_PER_ORG:
        raise ValidationError(f"An organization has at most {MAX_ENDPOINTS_PER_ORG} webhooks.")
    secret = signing.secret_generate()
    endpoint = WebhookEndpoint.objects.create(
        org=org, url=url, events=cleaned, secret_encrypted=crypto.encrypt(secret)
    )
    return endpoint, secret


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Its delivery log goes with it; pending retries find nothing and stop."""
    endpoint.delete()


def webhook_endpoint_secret(*, endpoint: WebhookEndpoint) -> str:
    return crypto.decrypt(endpoint.secret_encrypted)


# --- Events ----------------------------------------------------------------------


def emit_event(
    org: Organization, event_type: str, data: dict[str, Any], *, message_id: str | None = None
) -> list[WebhookDelivery]:
    """Send `event_type` with `data` (JSON-serializable) to every enabled endpoint
    of `org` subscribed to it. Call it inside your transaction: the deliveries
    are written with it and sent only after it commits.

    The body is ``{"type", "timestamp", "data"}``. `message_id` (``msg_...``)
    makes the event idempotent: a second emit with the same id sends nothing
    again. Returns the deliveries created."""
    if event_type not in EventType.values:
        raise ValueError(f"Unknown webhook event {event_type!r}.")
    endpoints = [
        e for e in WebhookEndpoint.objects.filter(org=org, enabled=True) if event_type in e.events
    ]
    if not endpoints:
        return []
    msg_id = message_id or signing.message_id_generate()
    body = json.dumps(
        {"type": event_type, "timestamp": timezone.now().isoformat(), "data": data},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    created: list[WebhookDelivery] = []
    for endpoint in endpoints:
        try:
            with transaction.atomic():
                delivery = WebhookDelivery.objects.create(
                    endpoint=endpoint,
                    event_type=event_type,
                    webhook_id=msg_id,
                    payload=body,
                    next_attempt_at=timezone.now(),
                )
        except IntegrityError:  # this message was emitted before
            continue
        created.append(delivery)
        transaction.on_commit(lambda pk=delivery.pk: _enqueue(pk, attempt=1))
    return created


def call_event_on_commit(*, call_id: str, org_id: int, event_type: str) -> None:
    """Queue call.started / call.ended for the call once the caller's transaction
    commits. The call path pays one small query when the org has no webhooks."""

    def enqueue() -> None:
        try:
            if WebhookEndpoint.objects.filter(org_id=org_id, enabled=True).exists():
                from webhooks.tasks import emit_call_event

                emit_call_event.delay(str(call_id), event_type)
        except Exception:
            logger.exception("Could not queue %s for call %s", event_type, call_id)

    transaction.on_commit(enqueue)


def call_event_emit(*, call_id: str, event_type: str) -> list[WebhookDelivery]:
    """Build and emit the event; its webhook-id comes from the call, so doing it
    twice (a task delivered twice) sends it once."""
    org, data = call_event_data(call_id=call_id, event_type=event_type)
    msg_id = f"msg_{event_type.replace('.', '_')}_{uuid.UUID(str(call_id)).hex}"
    with transaction.atomic():
        return emit_event(org, event_type, data, message_id=msg_id)


# --- Delivery --------------------------------------------------------------------


def _enqueue(delivery_id: int, *, attempt: int, countdown: float = 0) -> None:
    from webhooks.tasks import deliver_webhook

    if settings.WEBHOOK_DELIVERY_THREAD:
        # No task broker (the embedded default runs Celery tasks inline): send from
        # a thread of this process, so a slow endpoint never holds up the call that
        # emitted the event, and retries wait their turn instead of running at once.
        timer = threading.Timer(countdown, _attempt_in_thread, (delivery_id, attempt))
        timer.daemon = True
        timer.start()
        return
    try:
        deliver_webhook.apply_async((delivery_id, attempt), countdown=countdown)
    except Exception:
        # Picked up again by webhooks_retry_overdue.
        logger.exception("Could not queue webhook delivery %s", delivery_id)


def _attempt_in_thread(delivery_id: int, attempt: int) -> None:
    try:
        webhook_attempt(delivery_id=delivery_id, attempt=attempt)
    except Exception:
        logger.exception("Webhook delivery %s failed", delivery_id)
    finally:
        connection.close()  # this thread's own connection


def _claim(delivery_id: int, attempt: int) -> WebhookDelivery | None:
    """Take the delivery for `attempt`, or None when it is not due for that one
    (a duplicate task, delivered already, deleted, or being sent right now)."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .select_related("endpoint")
            .filter(pk=delivery_id)
            .first()
        )
        if (
            delivery is None
            or delivery.status != WebhookDelivery.Status.PENDING
            or delivery.attempts != attempt - 1
        ):
            return None
        delivery.attempts = attempt
        # While it is being sent: when the worker dies, it is overdue after this.
        delivery.next_attempt_at = timezone.now() + timedelta(
            seconds=settings.WEBHOOK_TIMEOUT_S + OVERDUE_GRACE_S
        )
        delivery.save(update_fields=["attempts", "next_attempt_at"])
        return delivery


def _send(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """(status code or None, error text) of one POST, signed now."""
    try:
        target = netguard.resolve(
            delivery.endpoint.url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS
        )
        secret = webhook_endpoint_secret(endpoint=delivery.endpoint)
    except (netguard.UnsafeURL, crypto.DecryptionError) as exc:
        return None, str(exc)
    body = delivery.payload.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "voiceapp-webhooks/1",
        **signing.headers(
            secret=secret, msg_id=delivery.webhook_id, timestamp=int(time.time()), body=body
        ),
    }
    try:
        status = netguard.post(
            target, body=body, headers=headers, timeout_s=settings.WEBHOOK_TIMEOUT_S
        )
    except TimeoutError:
        return None, f"No answer within {settings.WEBHOOK_TIMEOUT_S:g} s."
    except Exception as exc:  # refused, reset, TLS, a malformed answer
        return None, f"{type(exc).__name__}: {exc}"[:300]
    return status, "" if 200 <= status < 300 else f"HTTP {status}"


def webhook_attempt(*, delivery_id: int, attempt: int) -> str:
    """Make attempt number `attempt` of the delivery; the status it is left in,
    or "skipped" when that attempt is not due."""
    delivery = _claim(delivery_id, attempt)
    if delivery is None:
        return "skipped"
    code, error = _send(delivery)
    delivery.last_response_code = code
    delivery.last_error = error
    if not error:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.next_attempt_at = None
    elif attempt < MAX_ATTEMPTS:
        delay = RETRY_DELAYS_S[attempt - 1]
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=delay)
    else:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    delivery.save(
        update_fields=[
            "last_response_code",
            "last_error",
            "status",
            "delivered_at",
            "next_attempt_at",
        ]
    )
    if error and attempt < MAX_ATTEMPTS:
        delay = RETRY_DELAYS_S[attempt - 1]
        transaction.on_commit(lambda: _enqueue(delivery_id, attempt=attempt + 1, countdown=delay))
    return str(delivery.status)


@transaction.atomic
def webhook_resend(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send the message again now: the same webhook-id and body, a new timestamp
    and signature. A failed resend is retried on the same schedule."""
    locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    locked.status = WebhookDelivery.Status.PENDING
    locked.next_attempt_at = timezone.now()
    locked.save(update_fields=["status", "next_attempt_at"])
    attempt = locked.attempts + 1
    transaction.on_commit(lambda: _enqueue(locked.pk, attempt=attempt))
    return locked


def webhooks_retry_overdue() -> int:
    """Queue again the pending deliveries whose attempt is overdue (its task was
    lost or its worker died); each is queued for its next attempt number, so a
    late original task is then skipped."""
    cutoff = timezone.now() - timedelta(seconds=OVERDUE_GRACE_S)
    overdue = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, next_attempt_at__lt=cutoff
    ).values_list("pk", "attempts")
    overdue = list(overdue[:500])
    for pk, attempts in overdue:
        _enqueue(pk, attempt=attempts + 1)
    return len(overdue)
