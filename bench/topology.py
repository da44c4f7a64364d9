"""The production topology on this machine, for benchmarks that are clients.

daphne and separate `manage.py inference_worker` processes on Redis (REDIS_URL,
default the local one) and a throwaway database holding one org, its persona and
a secret key. The database is a fresh Postgres database on the server that
BENCH_DATABASE_URL (else DATABASE_URL, else the local one) names, dropped on exit;
`database="sqlite"` puts a SQLite file in `workdir` instead (the embedded
default's). Used by bench.ws, bench.wer, bench.load and bench.browser.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _wait_line(path: Path, marker: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while marker not in path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{marker!r} not seen:\n{path.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)


Database = Literal["postgres", "sqlite"]
DATABASES: tuple[Database, ...] = ("postgres", "sqlite")
LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"


class ThrowawayPostgres:
    """A database of its own on a Postgres server, created on entry and dropped
    (connections and all) on exit. `url` is what DATABASE_URL gets."""

    def __init__(self, server_url: str) -> None:
        parts = urlsplit(server_url)
        self.name = f"bench_{uuid.uuid4().hex[:12]}"
        self._admin = urlunsplit(parts._replace(path="/postgres"))
        self.url = urlunsplit(parts._replace(path=f"/{self.name}"))
        self.created = False

    def _execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self._admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)

    def create(self) -> None:
        self._execute(f'CREATE DATABASE "{self.name}"')
        self.created = True

    def drop(self) -> None:
        if self.created:
            self._execute(f'DROP DATABASE "{self.name}" WITH (FORCE)')
            self.created = False


def add_database_argument(parser: Any) -> None:
    """`--database postgres|sqlite` on a bench's command line (postgres by default)."""
    parser.add_argument(
        "--database",
        choices=DATABASES,
        default="postgres",
        help="the web process's database: a throwaway Postgres database (production)"
        " or a SQLite file (the embedded default)",
    )


def postgres_server() -> str:
    return os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL") or LOCAL_POSTGRES


_CALL_RECORDS = """
import json
from sessions.models import Call
out = [
    {
        "transport": c.transport,
        "source": c.source,
        "asr_seconds": c.asr_seconds,
        "duration_s": c.duration_s,
        "end_reason": c.end_reason,
        "turns": [
            {"status": t.status, "at_s": t.at_s, "spans": t.spans}
            for t in c.turns.all()
        ],
    }
    for c in Call.objects.order_by("started_at").prefetch_related("turns")
]
print(json.dumps(out, default=str))
"""


class Topology:
    """daphne + inference worker processes, torn down on exit.

    `env` adds to (and overrides) the settings the processes run with."""

    def __init__(
        self,
        workdir: Path,
        workers: int,
        env: dict[str, str] | None = None,
        database: Database = "postgres",
    ) -> None:
        self.workdir = workdir
        self._postgres = ThrowawayPostgres(postgres_server()) if database == "postgres" else None
        self.port = _free_port()
        self.env = {
            **os.environ,
            "DATA_DIR": str(workdir),
            "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
            "CHANNELS_PREFIX": f"bench{uuid.uuid4().hex[:8]}",
            "INFERENCE_EMBEDDED": "0",
            "DEBUG": "0",
            "SECRET_KEY": "bench-only-secret",
            "SECURE_SSL_REDIRECT": "0",
            "STATIC_MANIFEST": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "ORG_MAX_CONCURRENT_CALLS": "50",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.env.pop("DATABASE_URL", None)
        if self._postgres is not None:
            self.env["DATABASE_URL"] = self._postgres.url
        self.workers = workers
        self.worker_procs: list[subprocess.Popen[bytes]] = []
        self.web: subprocess.Popen[bytes] | None = None

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        return self.worker_procs + ([self.web] if self.web is not None else [])

    def pids(self) -> dict[str, int]:
        """The running processes by name: `web`, `worker0`, `worker1`..."""
        named = {f"worker{i}": p.pid for i, p in enumerate(self.worker_procs)}
        return {"web": self.web.pid, **named} if self.web is not None else named

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def worker_devices(self) -> dict[str, dict[str, Any]]:
        """Where each worker's models run, as the worker itself advertises it
        (engine/devices.py's plan), by its channel's id as /metrics names it."""
        from voiceapp.inference.capacity import RedisPoolRegistry

        registry = RedisPoolRegistry(self.env["REDIS_URL"], self.env["CHANNELS_PREFIX"])
        try:
            adverts = await registry.adverts()
        finally:
            await registry.aclose()
        return {a.worker.rsplit(".", 1)[-1][:12]: a.devices for a in adverts}

    def __enter__(self) -> Topology:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        if self._postgres is not None:
            self._postgres.create()
        _manage(self.env, "migrate", "--noinput", "-v0")
        _manage(self.env, "sync_voices")
        org = json.loads(
            _manage(
                self.env,
                "create_organization",
                "--name",
                "Bench",
                "--owner-email",
                "bench@example.test",
                "--json",
            )
        )
        self.org_slug = org["slug"]
        self.key = json.loads(_manage(self.env, "create_api_key", "--org", org["slug"], "--json"))[
            "key"
        ]
        for n in range(self.workers):
            log = self.workdir / f"worker{n}.log"
            proc = subprocess.Popen(
                [sys.executable, "manage.py", "inference_worker"],
                cwd=ROOT,
                env=self.env,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
            self.worker_procs.append(proc)
            _wait_line(log, "WORKER READY", proc, 300)
        log = self.workdir / "web.log"
        self.web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--websocket-max-message-size",
                "16777216",
                "voiceapp.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        _wait_line(log, "Listening on TCP address", self.web, 60)
        self._quiet_persona()

    def manage(self, *args: str) -> str:
        """Run a manage.py command against this topology's database; its stdout."""
        return _manage(self.env, *args)

    def call_records(self) -> list[dict[str, Any]]:
        """The server's records of the calls (oldest first): transport, source, ASR
        seconds billed, duration, end reason, and each turn's status, time and spans."""
        out = _manage(self.env, "shell", "--no-imports", "-c", _CALL_RECORDS)
        return list(json.loads(out.strip().splitlines()[-1]))  # the script prints one line

    def _quiet_persona(self) -> None:
        """The bench measures answers, not greetings."""
        self.patch_persona({"agent_speaks_first": False, "max_reply_tokens": 60})

    def patch_persona(self, changes: dict[str, Any]) -> None:
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        base = f"{self.base_url}/api/v1/personas/"
        with urllib.request.urlopen(urllib.request.Request(base, headers=headers)) as r:
            persona = json.loads(r.read())[0]
        body = json.dumps(changes).encode()
        request = urllib.request.Request(
            f"{base}{persona['id']}/", data=body, method="PATCH", headers=headers
        )
        urllib.request.urlopen(request).read()

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._postgres is not None:
            self._postgres.drop()
