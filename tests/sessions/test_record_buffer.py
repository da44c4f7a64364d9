"""The call record's write-behind buffer: order, the end last, retries while the
database is unreachable, its bound. The writes here are plain functions; the
buffer against a real Postgres outage is tests/faults/test_postgres_outage.py."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from sessions import record_buffer as rb
from sessions.record_buffer import RecordBuffer


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rb, "RETRY_FIRST_S", 0.01)
    monkeypatch.setattr(rb, "RETRY_MAX_S", 0.02)


class Database:
    """Writes land in `rows`; the first `down_for` attempts find it unreachable."""

    def __init__(self, down_for: int = 0) -> None:
        self.rows: list[str] = []
        self.down_for = down_for
        self.attempts = 0

    def write(self, *, row: str) -> None:
        self.attempts += 1
        if self.attempts <= self.down_for:
            raise OperationalError("connection refused")
        self.rows.append(row)


async def test_writes_wait_out_an_outage_in_order_with_the_end_last() -> None:
    # given a database that refuses the first five attempts
    db = Database(down_for=5)
    buffer = RecordBuffer("call-1")

    # when items, the end, then a late write (the recording) are submitted
    buffer.submit("user_item", db.write, row="user")
    buffer.submit("assistant_item", db.write, row="assistant")
    buffer.submit_end(db.write, row="end")
    buffer.submit("recording", db.write, row="recording")

    # then all are written once it answers, in order, the end last
    assert await buffer.drain(5.0)
    assert db.rows == ["user", "assistant", "recording", "end"]
    assert (buffer.written, buffer.buffered, buffer.outages) == (4, 4, 1)
    assert "call-1" not in rb.unwritten()


async def test_consecutive_touches_are_written_once() -> None:
    db = Database(down_for=1)
    buffer = RecordBuffer("call-2")

    buffer.submit("user_item", db.write, row="user")
    for n in range(5):
        buffer.submit("touch", db.write, row=f"touch {n}")
    buffer.submit_end(db.write, row="end")

    assert await buffer.drain(5.0)
    assert db.rows == ["user", "touch 4", "end"]


async def test_past_its_bound_new_writes_are_dropped_but_not_the_end() -> None:
    db = Database(down_for=3)
    buffer = RecordBuffer("call-3", limit=2)

    for n in range(4):
        buffer.submit("turn", db.write, row=f"turn {n}")
    buffer.submit_end(db.write, row="end")

    assert await buffer.drain(5.0)
    assert db.rows == ["turn 0", "turn 1", "end"]
    assert buffer.dropped == 2


async def test_a_write_that_fails_otherwise_is_skipped() -> None:
    buffer = RecordBuffer("call-4")
    rows: list[str] = []

    def broken() -> None:
        raise ValueError("a bug, not an outage")

    buffer.submit("turn", broken)
    buffer.submit_end(lambda: rows.append("end"))

    assert await buffer.drain(5.0)
    assert rows == ["end"]
