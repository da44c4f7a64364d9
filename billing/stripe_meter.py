"""Usage to Stripe Billing, as one meter event per ledger row.

Off unless STRIPE_API_KEY and STRIPE_METER_EVENT_NAME are both set, and then
only for organizations whose subscription has a Stripe customer id. Nothing
here runs in a call: a ledger write queues `billing.stripe_report_usage` when
it commits (services.usage_record_create), and Celery beat resends what is
still unreported (`billing.stripe_report_unreported`).

Once from our side: the row is locked while its event is sent and marked
`stripe_reported_at` in the same transaction, so a task delivered twice sends
one request. Once on Stripe's side: the event's `identifier` is the call's id
and the request's idempotency key comes from it too, so a resend after a
crash between Stripe's answer and our commit is dropped by Stripe.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import stripe
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from billing.models import Subscription, UsageRecord

log = logging.getLogger(__name__)

# Stripe takes meter events up to 35 days old; keep a day's margin.
STRIPE_MAX_EVENT_AGE = timedelta(days=34)
# Rows younger than this are left to the task their ledger write queued.
RESEND_AFTER = timedelta(minutes=5)
RESEND_BATCH = 500


@dataclass(frozen=True)
class StripeMeter:
    """Sends meter events to one Stripe account (or whatever answers at api_base)."""

    api_key: str
    event_name: str
    api_base: str = "https://api.stripe.com"
    timeout_s: float = 20.0

    def send(self, *, customer_id: str, seconds: int, identifier: str, at: datetime) -> None:
        """One meter event; raises stripe.StripeError when Stripe did not take it."""
        client = stripe.StripeClient(
            self.api_key,
            base_addresses={"api": self.api_base},
            # The Celery task retries with backoff; no hidden retries under it.
            max_network_retries=0,
            http_client=stripe.RequestsClient(timeout=self.timeout_s),
        )
        client.v1.billing.meter_events.create(
            params={
                "event_name": self.event_name,
                "payload": {"stripe_customer_id": customer_id, "value": str(seconds)},
                "identifier": identifier,
                "timestamp": int(at.timestamp()),
            },
            options={"idempotency_key": f"meter-event-{identifier}"},
        )


def stripe_meter_from_settings() -> StripeMeter | None:
    """The configured meter, or None when Stripe reporting is off."""
    if not (settings.STRIPE_API_KEY and settings.STRIPE_METER_EVENT_NAME):
        return None
    return StripeMeter(
        api_key=settings.STRIPE_API_KEY,
        event_name=settings.STRIPE_METER_EVENT_NAME,
        api_base=settings.STRIPE_API_BASE,
    )


def stripe_error_is_retryable(exc: stripe.StripeError) -> bool:
    """Stripe down, slow, rate limiting, or busy with the same idempotency key."""
    if isinstance(exc, stripe.APIConnectionError | stripe.RateLimitError):
        return True
    status = exc.http_status or 0
    return status >= 500 or status == 409


def usage_record_report(*, record_id: int, meter: StripeMeter | None = None) -> bool:
    """Send one ledger row's billed seconds to Stripe unless it has been sent.

    True when it was sent now; False when there was nothing to send (reporting
    off, no customer id, sent already, or being sent by another worker right
    now). Raises stripe.StripeError when Stripe refused or failed; the row then
    stays unreported."""
    meter = meter or stripe_meter_from_settings()
    if meter is None:
        return False
    with transaction.atomic():
        record = (
            UsageRecord.objects.select_for_update(skip_locked=True)
            .filter(pk=record_id, stripe_reported_at=None)
            .first()
        )
        if record is None:
            return False
        customer_id = (
            Subscription.objects.filter(org_id=record.org_id)
            .values_list("stripe_customer_id", flat=True)
            .first()
        )
        if not customer_id:
            return False
        meter.send(
            customer_id=customer_id,
            seconds=record.billed_seconds,
            identifier=str(record.call_ref),
            at=record.ended_at,
        )
        record.stripe_reported_at = timezone.now()
        record.save(update_fields=["stripe_reported_at"])
    return True


def usage_records_unreported(*, now: datetime | None = None) -> list[int]:
    """Ledger rows Stripe should have and has not (oldest first), that it still accepts."""
    now = now or timezone.now()
    return list(
        UsageRecord.objects.filter(
            stripe_reported_at=None,
            ended_at__gte=now - STRIPE_MAX_EVENT_AGE,
            created_at__lte=now - RESEND_AFTER,
            org__subscription__stripe_customer_id__gt="",
        )
        .order_by("ended_at")
        .values_list("pk", flat=True)[:RESEND_BATCH]
    )
