from celery import shared_task
from django.conf import settings

from sessions.recordings import call_recording_encode, recordings_purge_expired
from sessions.services import caller_message_email, calls_reconcile


@shared_task(name="calls.reconcile_open_calls")
def reconcile_open_calls() -> int:
    """Close calls left open by a web process that died."""
    return calls_reconcile(stale_after_s=settings.CALL_STALE_AFTER_S)


@shared_task(name="calls.encode_recording")
def encode_recording(
    *, call_id: str, spool: str, rate: int, channels: int, marks: dict[str, float]
) -> int | None:
    """A finished call's spooled audio -> its Ogg Opus recording; the recording's id."""
    recording = call_recording_encode(
        call_id=call_id, spool=spool, rate=rate, channels=channels, marks=marks
    )
    return recording.pk if recording else None


@shared_task(name="calls.purge_expired_recordings")
def purge_expired_recordings() -> int:
    """Beat, daily: delete call recordings past their persona's retention."""
    return recordings_purge_expired()


@shared_task(name="calls.send_message_email")
def send_message_email(message_id: int) -> int:
    """Email a caller's message to the organization's owners and admins."""
    return caller_message_email(message_id=message_id)


@shared_task(name="calls.analyze_call")
def analyze_call(call_id: str) -> str:
    """A finished call's summary, fields and success verdict; `call.analyzed`."""
    from sessions.analysis import call_analyze

    analysis = call_analyze(call_id=call_id)
    return "skipped" if analysis is None else analysis.method
