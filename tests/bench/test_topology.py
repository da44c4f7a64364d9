"""The benchmarks' throwaway Postgres database (bench/topology.py): made on the
server the suite uses, reachable at its own URL, and gone afterwards even while
something is still connected to it."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from bench.topology import ThrowawayPostgres, Topology, postgres_server

SERVER = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/voiceapp")


def databases() -> set[str]:
    admin = ThrowawayPostgres(SERVER)
    with psycopg.connect(admin._admin, autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


def test_a_throwaway_database_is_made_and_dropped_with_a_connection_still_open() -> None:
    # given a throwaway database on the suite's server
    db = ThrowawayPostgres(SERVER)
    assert db.name.startswith("bench_") and db.url.endswith(f"/{db.name}")
    assert db.name not in databases()
    db.create()
    try:
        # then it is there, empty, at its own URL
        assert db.name in databases()
        conn = psycopg.connect(db.url, autocommit=True)
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        assert tables == (0,)
    finally:
        # when it is dropped while a connection is open
        db.drop()
    # then it is gone, and the connection with it
    assert db.name not in databases()
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    conn.close()


def test_dropping_a_database_that_was_never_made_does_nothing() -> None:
    # a topology that failed before its database was made tears down cleanly
    before = databases()
    ThrowawayPostgres(SERVER).drop()
    assert databases() == before


def test_the_server_is_the_benchs_own_then_the_suites(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://a@db.example:5432/app")
    monkeypatch.setenv("BENCH_DATABASE_URL", "postgres://b@bench.example:5433/x")
    assert postgres_server() == "postgres://b@bench.example:5433/x"
    monkeypatch.delenv("BENCH_DATABASE_URL")
    assert postgres_server() == "postgres://a@db.example:5432/app"
    db = ThrowawayPostgres(postgres_server())
    assert db._admin == "postgres://a@db.example:5432/postgres"
    assert db.url == f"postgres://a@db.example:5432/{db.name}"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_topology_reads_its_call_records_from_its_own_database(tmp_path: Path) -> None:
    # given a topology (daphne, no worker) on its throwaway database
    with Topology(tmp_path, 0) as topo:
        name = topo.env["DATABASE_URL"].rsplit("/", 1)[1]
        assert name.startswith("bench_") and name in databases()
        # when its call records are read (none yet): the ORM's answer, parsed
        assert topo.call_records() == []
    # then the database went with it
    assert name not in databases()
