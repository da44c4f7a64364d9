from celery import shared_task

from webhooks.services import call_event_emit, webhook_attempt, webhooks_retry_overdue


@shared_task(name="webhooks.deliver", acks_late=True, ignore_result=True)
def deliver_webhook(delivery_id: int, attempt: int) -> str:
    """One attempt; a failure schedules the next (same webhook-id) with backoff."""
    return webhook_attempt(delivery_id=delivery_id, attempt=attempt)


@shared_task(name="webhooks.emit_call_event", acks_late=True, ignore_result=True)
def emit_call_event(call_id: str, event_type: str) -> int:
    return len(call_event_emit(call_id=call_id, event_type=event_type))


@shared_task(name="webhooks.retry_overdue", ignore_result=True)
def retry_overdue() -> int:
    return webhooks_retry_overdue()
