"""The embedded default (SQLite, `./dev run`) keeps every transcript row while
several calls write at once: WAL, IMMEDIATE transactions and a busy timeout
(voiceapp/settings.py). Runs in a subprocess with no DATABASE_URL, on a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KEEP = ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")
CALLS, TURNS = 8, 25

# Several calls at once, each recording its turns concurrently through the
# runner's recorder (the thread pool real calls use).
CONCURRENT_CALLS = f"""
import asyncio, json, uuid
from django.db import connection
from sessions import services
from sessions.auth import CallGrant
from sessions.models import CallItem, CallTurn
from sessions.lifecycle import CallSlots
from sessions.live import live_store
from sessions.runner import DbRecorder, db
from voiceapp.tenants.onboarding import organization_onboard

org = organization_onboard(name="Lite", owner_email="lite@example.test")
persona = org.personas.get()
grant = CallGrant(
    org_id=org.pk, persona_id=persona.pk, persona_slug=persona.slug, session_config={{}}
)

async def one_call():
    call_id = str(uuid.uuid4())
    await db(services.call_start)(
        call_id=call_id, grant=grant, transport="websocket", client_info={{}}
    )
    slots = CallSlots(live_store(), org_id=org.pk, call_id=call_id)
    recorder = DbRecorder(
        call_id=call_id, org_id=org.pk, persona_id=persona.pk, generation=0, slots=slots
    )
    errors = []

    async def turn(n):
        writes = (
            recorder.user_item(f"u{{n}}", "hello " * 20, n),
            recorder.assistant_item(f"a{{n}}", "hi " * 40, n + 0.5, False),
            recorder.turn(f"r{{n}}", "completed", n, {{"v2v_ms": 500.0}}),
            recorder.heartbeat(),
        )
        for write in writes:
            try:
                await write
            except Exception as exc:
                errors.append(repr(exc))

    await asyncio.gather(*(turn(n) for n in range({TURNS})))
    # the writes run behind the call (sessions/record_buffer.py): wait for them
    if not await recorder.buffer.drain(240):
        errors.append(f"{{recorder.buffer.pending}} writes still pending")
    if recorder.buffer.dropped:
        errors.append(f"{{recorder.buffer.dropped}} writes dropped")
    return errors

async def main():
    per_call = await asyncio.gather(*(one_call() for _ in range({CALLS})))
    return [e for errors in per_call for e in errors]

errors = asyncio.run(main())
with connection.cursor() as cursor:
    cursor.execute("PRAGMA journal_mode")
    journal = cursor.fetchone()[0]
print(json.dumps({{
    "items": CallItem.objects.count(),
    "turns": CallTurn.objects.count(),
    "errors": errors[:3],
    "journal": journal,
}}))
"""


def manage(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k in KEEP}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, "DEBUG": "1", "DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.timeout(480)
def test_concurrent_calls_keep_every_transcript_row(tmp_path: Path) -> None:
    # given the embedded default on a fresh SQLite file
    migrated = manage("migrate", "-v0", data_dir=tmp_path)
    assert migrated.returncode == 0, migrated.stderr

    # when 8 calls record 25 turns each, all at once
    result = manage("shell", "-c", CONCURRENT_CALLS, data_dir=tmp_path)

    # then no write failed and no row is missing
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["errors"] == []
    assert values["items"] == CALLS * TURNS * 2
    assert values["turns"] == CALLS * TURNS
    assert values["journal"] == "wal"
    assert (tmp_path / "db.sqlite3").exists()
