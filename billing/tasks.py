from celery import shared_task

from billing.services import subscription_for, usage_alert_send


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
