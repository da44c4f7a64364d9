"""The whole retry schedule through a real Celery worker process and a real
Redis broker: not eager, no mocked clock. The worker runs with short waits
(`WEBHOOK_RETRY_DELAYS_S`), so all six attempts fit in the suite. One endpoint
fails five times and then answers; the other never answers 2xx."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from standardwebhooks import Webhook

from tests.support.processes import ROOT, wait_for_log
from tests.support.tenants import Tenant
from tests.support.webhook_receiver import webhook_receiver
from voiceapp.celery import app
from webhooks.models import WebhookDelivery
from webhooks.services import emit_event, webhook_endpoint_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

DELAYS_S = (1, 2, 3, 2, 1)  # the worker's schedule: six attempts in all


@pytest.fixture
def worker_queue(settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[str]:
    """A Celery worker on a queue of its own; this process sends tasks to it."""
    if not settings.REDIS_URL or connection.vendor != "postgresql":
        pytest.fail("the worker test needs Postgres and Redis (DATABASE_URL, REDIS_URL)")
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    settings.WEBHOOK_DELIVERY_THREAD = False
    queue = f"test-webhooks-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://{}@{}:{}/{}".format(
            db["USER"], db["HOST"] or "127.0.0.1", db["PORT"] or 5432, db["NAME"]
        ),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "WEBHOOK_DELIVERY_THREAD": "0",
        "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
        "WEBHOOK_RETRY_DELAYS_S": ",".join(str(d) for d in DELAYS_S),
        "FIELD_ENCRYPTION_KEY": settings.FIELD_ENCRYPTION_KEY or settings.SECRET_KEY,
        "SECRET_KEY": settings.SECRET_KEY,
        "DEBUG": "0",
    }
    log = tmp_path / "celery.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "voiceapp", "worker", "--pool", "solo",
         "-Q", queue, "--loglevel", "info", "--without-mingle", "--without-gossip"],
        cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for_log(proc, "ready.", 60, log)
        monkeypatch.setitem(app.conf, "task_always_eager", False)
        monkeypatch.setitem(app.conf, "task_default_queue", queue)
        yield queue
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_until(check: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.1)


def test_the_whole_schedule_runs_through_a_real_worker(tenant_a: Tenant, worker_queue: str) -> None:
    with webhook_receiver() as flaky, webhook_receiver() as down:
        flaky.answer(500, 500, 503, 500, 500)  # five failures, then 200 on the last attempt
        down.answer(*[500] * 10)  # never answers 2xx
        _, flaky_secret = webhook_endpoint_create(
            org=tenant_a.org, url=flaky.url, events=["call.ended"]
        )
        webhook_endpoint_create(org=tenant_a.org, url=down.url, events=["call.ended"])
        with transaction.atomic():
            deliveries = emit_event(tenant_a.org, "call.ended", {"call_id": "c1"})
        assert len(deliveries) == 2
        total = sum(DELAYS_S)
        wait_until(lambda: len(flaky.received) == 6 and len(down.received) == 6, total + 30)
        time.sleep(max(DELAYS_S) + 1)  # nothing comes after the last attempt

    for receiver in (flaky, down):
        assert len(receiver.received) == 6
        # each wait is the schedule's: never early, and late by at most a little
        waits = [
            b.at - a.at for a, b in zip(receiver.received, receiver.received[1:], strict=False)
        ]
        for wait, delay in zip(waits, DELAYS_S, strict=True):
            assert delay - 0.05 <= wait < delay + 2.5, (waits, DELAYS_S)
        # one message: the same webhook-id every time, each attempt signed anew
        assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    for r in flaky.received:
        Webhook(flaky_secret).verify(r.body, r.headers)
    by_url = {d.endpoint.url: d for d in WebhookDelivery.objects.select_related("endpoint")}
    delivered, failed = by_url[flaky.url], by_url[down.url]
    assert (delivered.status, delivered.attempts) == ("delivered", 6)
    assert delivered.delivered_at is not None and delivered.next_attempt_at is None
    assert (failed.status, failed.attempts) == ("failed", 6)
    assert failed.last_response_code == 500 and failed.next_attempt_at is None
