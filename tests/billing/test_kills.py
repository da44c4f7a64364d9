"""Exactly-once billing when web processes die: short calls placed by processes
that are SIGKILLed at random moments, then reconciled.

KILL_CALLS sets how many calls (30 by default, the suite's slice; `./dev bench
faults` places 100 a round)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum

from billing.models import Subscription, UsageRecord
from billing.services import subscription_set_remaining
from sessions.models import Call
from sessions.services import calls_reconcile
from tests.support.tenants import Tenant
from voiceapp.tenants.services import secret_key_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
CALLS = int(os.environ.get("KILL_CALLS", "30"))
PARALLEL = 3
START_SECONDS = 10_000_000
# the call processes' database sessions carry this name (libpq reads PGAPPNAME)
APP_NAME = "billing-kill-test"


def _env() -> dict[str, str]:
    db = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": "postgres://{}@{}:{}/{}".format(
            db["USER"], db["HOST"] or "127.0.0.1", db["PORT"] or 5432, db["NAME"]
        ),
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_EMBEDDED": "0",
        "ORG_MAX_CONCURRENT_CALLS": "50",
        "PYTHONUNBUFFERED": "1",
        "PGAPPNAME": APP_NAME,
    }


def _wait_for_their_sessions_to_end(timeout_s: float = 20.0) -> int:
    """How many of the killed processes' database sessions are still there
    after waiting: a COMMIT sent just before the SIGKILL is still applied by
    its server process, after the client is gone."""
    deadline = time.monotonic() + timeout_s
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]
            )
            (left,) = cursor.fetchone()
        if left == 0 or time.monotonic() > deadline:
            return int(left)
        time.sleep(0.1)


def test_calls_with_random_kills_are_each_billed_once(tenant_a: Tenant) -> None:
    _, raw = secret_key_create(org=tenant_a.org, name="chaos")
    persona = tenant_a.org.personas.get()
    persona.agent_speaks_first = False
    persona.save()
    subscription_set_remaining(org_id=tenant_a.org.pk, seconds=START_SECONDS)
    rng = random.Random(9)
    started: list[str] = []
    lock = threading.Lock()
    kills = 0

    def worker() -> None:
        nonlocal kills
        while True:
            with lock:
                if len(started) >= CALLS:
                    return
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.call_process", raw, persona.slug, "15"],
                cwd=ROOT,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert proc.stdout is not None
            # killed after a random number of its calls have started, at a random moment
            kill_after = rng.randint(1, 8)
            seen = 0
            for line in proc.stdout:
                if line.startswith("CALL "):
                    with lock:
                        started.append(line.split()[1])
                        full = len(started) >= CALLS
                    seen += 1
                    if seen >= kill_after or full:
                        time.sleep(rng.uniform(0.0, 0.9))
                        break
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            with lock:
                kills += 1

    threads = [threading.Thread(target=worker) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(800)

    # every process is dead, and so are their database sessions (with what
    # they had sent); the reconciliation closes what they left open
    assert _wait_for_their_sessions_to_end() == 0
    open_before = Call.objects.filter(ended_at=None).count()
    time.sleep(0.2)
    reconciled = calls_reconcile(stale_after_s=0)
    assert calls_reconcile(stale_after_s=0) == 0

    calls = Call.objects.filter(org=tenant_a.org)
    records = UsageRecord.objects.filter(org=tenant_a.org)
    lost = calls.filter(usage__isnull=True).count()
    duplicated = records.values("call_ref").annotate(n=Count("pk")).filter(n__gt=1).count()
    spent = START_SECONDS - Subscription.objects.get(org=tenant_a.org).remaining_seconds
    print(
        f"\nrandom kills: {calls.count()} calls by {kills} killed processes; "
        f"{open_before} left open, {reconciled} reconciled; "
        f"{lost} lost, {duplicated} duplicated usage records"
    )
    assert calls.count() >= CALLS and len(set(started)) == len(started)
    assert kills >= CALLS // 8
    assert open_before == reconciled > 0
    assert (lost, duplicated) == (0, 0)
    assert records.count() == calls.count()
    assert spent == records.aggregate(s=Sum("included_seconds"))["s"]
