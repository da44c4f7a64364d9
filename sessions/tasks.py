from celery import shared_task
from django.conf import settings

from sessions.services import calls_reconcile


@shared_task(name="calls.reconcile_open_calls")
def reconcile_open_calls() -> int:
    """Close calls left open by a web process that died."""
    return calls_reconcile(stale_after_s=settings.CALL_STALE_AFTER_S)
