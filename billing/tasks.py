import logging

import stripe
from celery import Task, shared_task

from billing.services import subscription_for, usage_alert_send
from billing.stripe_meter import (
    stripe_error_is_retryable,
    usage_record_report,
    usage_records_unreported,
)

log = logging.getLogger(__name__)


@shared_task(name="billing.send_usage_alert")
def send_usage_alert(org_id: int, period_start: str) -> int:
    """Email the owners once the period's 80 % mark is passed (skipped if the
    period has rolled over since)."""
    if subscription_for(org_id=org_id).period_start.isoformat() != period_start:
        return 0
    return usage_alert_send(org_id=org_id)


@shared_task(name="billing.close_periods")
def close_periods() -> int:
    """Build the invoices of the periods that have ended. Beat runs it daily
    (00:20 UTC): the first run of a month closes the last one, later runs find
    nothing to do, and a missed run is caught up."""
    from billing.invoices import invoices_close_due

    return invoices_close_due()


@shared_task(bind=True, name="billing.stripe_report_usage", max_retries=8)
def stripe_report_usage(self: Task, record_id: int) -> bool:
    """Send one ledger row to Stripe as a meter event (once; see billing/stripe_meter.py).
    Stripe down or rate limiting: retried with backoff (10 s doubling, at most
    an hour apart); what is still unsent then is resent by `stripe_report_unreported`."""
    try:
        return usage_record_report(record_id=record_id)
    except stripe.StripeError as exc:
        if not stripe_error_is_retryable(exc):
            log.error("Stripe refused the meter event of usage record %s: %s", record_id, exc)
            return False
        log.warning("Stripe failed the meter event of usage record %s: %s", record_id, exc)
        raise self.retry(exc=exc, countdown=min(10 * 2**self.request.retries, 3600)) from exc


@shared_task(name="billing.stripe_report_unreported")
def stripe_report_unreported() -> int:
    """Beat: send the ledger rows Stripe has not taken yet. Stops at the first
    failure that a later run may not see (Stripe down); skips rows it refuses."""
    sent = 0
    for record_id in usage_records_unreported():
        try:
            sent += usage_record_report(record_id=record_id)
        except stripe.StripeError as exc:
            if stripe_error_is_retryable(exc):
                log.warning("Stripe unavailable, resend stopped after %s: %s", sent, exc)
                break
            log.error("Stripe refused the meter event of usage record %s: %s", record_id, exc)
    return sent


@shared_task(name="billing.purge_expired_calls")
def purge_expired_calls() -> int:
    """Beat, daily: delete calls older than their organization's plan retention."""
    from billing.retention import calls_purge_expired

    return calls_purge_expired()
