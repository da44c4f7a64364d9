"""Beat runs on django-celery-beat: the schedule in settings becomes PeriodicTask
rows in Postgres when the scheduler starts, and every entry names a real task."""

from __future__ import annotations

import pytest
from django.conf import settings
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from voiceapp.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def test_beat_uses_the_database_scheduler() -> None:
    assert app.conf.beat_scheduler == "django_celery_beat.schedulers:DatabaseScheduler"


def test_the_settings_schedule_becomes_periodic_tasks_when_beat_starts() -> None:
    # given a database without periodic tasks
    assert not PeriodicTask.objects.filter(name__in=settings.CELERY_BEAT_SCHEDULE).exists()

    # when beat's scheduler starts (as `celery beat` does), twice
    DatabaseScheduler(app=app)
    scheduler = DatabaseScheduler(app=app)

    # then each entry is one enabled row, on its schedule
    rows = {t.name: t for t in PeriodicTask.objects.filter(name__in=settings.CELERY_BEAT_SCHEDULE)}
    assert set(rows) == set(settings.CELERY_BEAT_SCHEDULE)
    assert set(settings.CELERY_BEAT_SCHEDULE) <= set(scheduler.schedule)
    assert all(row.enabled for row in rows.values())

    close = rows["billing-close-periods"]
    assert close.task == "billing.close_periods"
    assert close.crontab is not None
    assert (close.crontab.minute, close.crontab.hour, str(close.crontab.timezone)) == (
        "20",
        "0",
        "UTC",
    )
    purge = rows["billing-purge-expired-calls"]
    assert purge.task == "billing.purge_expired_calls"
    assert purge.crontab is not None and (purge.crontab.minute, purge.crontab.hour) == ("40", "3")
    resend = rows["billing-stripe-resend"]
    assert resend.task == "billing.stripe_report_unreported"
    assert resend.interval is not None
    assert (resend.interval.every, resend.interval.period) == (900, "seconds")
    reconcile = rows["reconcile-open-calls"]
    assert reconcile.task == "calls.reconcile_open_calls"
    assert reconcile.interval is not None and reconcile.interval.every == 60


def test_every_scheduled_task_is_registered() -> None:
    app.loader.import_default_modules()

    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}

    assert scheduled - set(app.tasks) == set()
