"""Fault injection for the fault tests (tests/faults/): a private Redis server that
can be killed and restarted, a TCP proxy in front of Postgres that can cut the
database off, a live server (daphne and inference workers) wired to both, and
more web processes behind haproxy (Debian's package) for the cluster tests.

Nothing here touches the machine's shared Redis or Postgres: the private Redis
listens on a free port, and only the live server's connections pass the proxy."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from tests.support.processes import free_port, start_daphne, wait_for_log

ROOT = Path(__file__).resolve().parent.parent.parent
# --- Redis ---------------------------------------------------------------------------


class RedisServer:
    """A private `redis-server` without persistence: a restart loses every key, as
    a crashed production Redis without AOF would."""

    def __init__(self, logs: Path) -> None:
        self.port = free_port()
        self.logs = logs
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=(self.logs / "redis.log").open("a"),
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on {self.port} did not start")

    def kill(self) -> None:
        """SIGKILL: its clients see their connections reset."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


# --- Postgres --------------------------------------------------------------------------


class TcpProxy:
    """A TCP proxy on a free port to `target`, run on a thread of its own. `cut()`
    resets every connection through it and refuses new ones (the database is
    unreachable) until `restore()`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.refused = 0
        self._cut = threading.Event()
        self._links: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pg-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._link, "127.0.0.1", self.port)
        )
        self._ready.set()
        self._loop.run_forever()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut.is_set():
            self.refused += 1
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(writer)
            return
        self._links.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                _reset(dst)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._links.difference_update((writer, up_writer))

    def cut(self) -> None:
        def reset_all() -> None:
            self._cut.set()
            for writer in list(self._links):
                _reset(writer)

        self._loop.call_soon_threadsafe(reset_all)

    def restore(self) -> None:
        self._cut.clear()

    def stop(self) -> None:
        def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            self._loop.stop()

        self._loop.call_soon_threadsafe(shutdown)
        self._thread.join(5)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST: to the client the server is gone, not politely closing."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError):
        if sock is not None:
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
    writer.transport.abort()


# --- haproxy ---------------------------------------------------------------------------


HAPROXY_CONFIG = """\
global
  maxconn 256
defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  timeout tunnel 1h
  option redispatch
  retries 3
frontend calls
  bind 127.0.0.1:{port}
  default_backend webs
backend webs
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 200ms fall 1 rise 1
{servers}
"""


class Haproxy:
    """haproxy in front of web processes, routing by their /readyz (a draining or
    dead one gets nothing), as a load balancer in front of a cluster does."""

    def __init__(self, logs: Path, backends: dict[str, int]) -> None:
        self.logs = logs
        self.backends = backends
        self.port = free_port()
        self.proc: subprocess.Popen[str] | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> None:
        servers = "\n".join(
            f"  server {name} 127.0.0.1:{port} check" for name, port in self.backends.items()
        )
        config = self.logs / "haproxy.cfg"
        config.write_text(HAPROXY_CONFIG.format(port=self.port, servers=servers))
        self.proc = subprocess.Popen(
            ["haproxy", "-db", "-f", str(config)],
            stdout=(self.logs / "haproxy.log").open("w"),
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((self.logs / "haproxy.log").read_text())
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


# --- The live server -------------------------------------------------------------------


@dataclass
class FaultStack:
    """daphne and inference workers on a private Redis, daphne's database through a
    proxy. Each process's log is in `logs`."""

    env: dict[str, str]
    logs: Path
    redis: RedisServer
    proxy: TcpProxy
    port: int = 0
    web: subprocess.Popen[str] | None = None
    workers: dict[str, subprocess.Popen[str]] = field(default_factory=dict)  # channel -> proc

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def prefix(self) -> str:
        return self.env["CHANNELS_PREFIX"]

    def start(self, workers: int) -> None:
        started = [self._spawn_worker(n) for n in range(workers)]
        self.port = free_port()
        web_log = self.logs / "web.log"
        web_env = {**self.env, "DATABASE_URL": self.env["PROXIED_DATABASE_URL"]}
        self.web = start_daphne(self.port, web_env, web_log)
        for proc, log in started:
            line = wait_for_log(proc, "WORKER READY", 240, log)
            self.workers[line.split("WORKER READY", 1)[1].strip()] = proc
        wait_for_log(self.web, "Listening on TCP address", 60, web_log)

    def _spawn_worker(self, n: int) -> tuple[subprocess.Popen[str], Path]:
        log = self.logs / f"worker{n}.log"
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "inference_worker"],
            cwd=ROOT,
            env=self.env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
        )
        return proc, log

    def web_log(self) -> str:
        return (self.logs / "web.log").read_text()

    def start_web(self, name: str) -> tuple[subprocess.Popen[str], int]:
        """One more daphne on the same Redis, database and workers, as another node's
        web process (WEB_INSTANCE `name`); stopped by the caller."""
        port = free_port()
        log = self.logs / f"web-{name}.log"
        proc = start_daphne(port, {**self.env, "WEB_INSTANCE": name}, log)
        wait_for_log(proc, "Listening on TCP address", 60, log)
        return proc, port

    def stop(self) -> None:
        procs = [p for p in [self.web, *self.workers.values()] if p is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def fault_stack(*, database: dict[str, Any], logs: Path, workers: int = 2) -> Iterator[FaultStack]:
    """The stack, torn down on exit (the private Redis and the proxy with it)."""
    redis = RedisServer(logs)
    redis.start()
    host, port = database["HOST"] or "127.0.0.1", int(database["PORT"] or 5432)
    proxy = TcpProxy((host, port))
    proxy.start()
    user, name = database["USER"], database["NAME"]
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{user}@{host}:{port}/{name}",
        "PROXIED_DATABASE_URL": f"postgres://{user}@127.0.0.1:{proxy.port}/{name}",
        "DB_CONN_MAX_AGE": "0",  # every write opens its own connection: an outage is seen
        "REDIS_URL": redis.url,
        "CHANNELS_PREFIX": f"fault{uuid.uuid4().hex[:8]}",
        "INFERENCE_EMBEDDED": "0",
        "DEBUG": "0",
        "SECRET_KEY": "fault-test-key",
        "SECURE_SSL_REDIRECT": "0",
        "STATIC_MANIFEST": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CALL_RESUME_WINDOW_S": "15",
        "INFERENCE_MAX_CALLS": "50",
        "INFERENCE_WAIT_BUDGET_MS": "1000000",
        "PYTHONUNBUFFERED": "1",
    }
    stack = FaultStack(env=env, logs=logs, redis=redis, proxy=proxy)
    try:
        stack.start(workers)
        yield stack
    finally:
        stack.stop()
        proxy.stop()
        redis.stop()


def cpu_ticks(pid: int) -> int:
    """User plus system CPU time of a process, in clock ticks (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def busiest(procs: dict[str, subprocess.Popen[str]], over_s: float = 0.3) -> str:
    """The worker (its channel) that used the most CPU over the next `over_s`: the
    one serving the reply in progress."""
    before = {name: cpu_ticks(p.pid) for name, p in procs.items()}
    time.sleep(over_s)
    return max(procs, key=lambda name: cpu_ticks(procs[name].pid) - before[name])


# --- A caller ----------------------------------------------------------------------------


async def connect(stack: FaultStack, key: str, query: str = "model=assistant") -> Any:
    return await websockets.connect(
        f"{stack.ws_url}/v1/realtime?{query}",
        additional_headers={"Authorization": f"Bearer {key}"},
        max_size=None,
    )


async def next_of(ws: Any, kind: str, timeout_s: float = 30) -> dict[str, Any]:
    async with asyncio.timeout(timeout_s):
        while True:
            event = json.loads(await ws.recv())
            if event["type"] == kind:
                return event  # type: ignore[no-any-return]


async def say_text(ws: Any, text: str) -> None:
    """A typed user message, then a request for the reply."""
    await ws.send(
        json.dumps(
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            }
        )
    )
    await ws.send(json.dumps({"type": "response.create"}))


async def events_until_done(ws: Any, timeout_s: float = 60) -> list[dict[str, Any]]:
    """Every event up to and including the next `response.done`."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout_s):
        while True:
            event = json.loads(await ws.recv())
            events.append(event)
            if event["type"] == "response.done":
                return events


async def stream_audio(ws: Any, pcm: bytes, *, trailing_silence_s: float = 1.5) -> None:
    """PCM16 24 kHz appended like a live microphone: 40 ms chunks at real-time pace."""
    audio = pcm + bytes(int(48000 * trailing_silence_s))
    chunk = 48000 // 25
    started = time.monotonic()
    for n, i in enumerate(range(0, len(audio), chunk)):
        event = {
            "type": "input_audio_buffer.append",
            "audio": base64.b64encode(audio[i : i + chunk]).decode(),
        }
        await ws.send(json.dumps(event))
        await asyncio.sleep(max(0.0, started + (n + 1) * 0.04 - time.monotonic()))


def reply_text(events: list[dict[str, Any]]) -> str:
    done = [e for e in events if e["type"] == "response.output_audio_transcript.done"]
    if done:
        return str(done[-1]["transcript"])
    deltas = [e for e in events if e["type"] == "response.output_audio_transcript.delta"]
    return "".join(e["delta"] for e in deltas)


async def slot_counts(stack: FaultStack, org_id: int) -> tuple[int, int]:
    """(the org's slots, the inference pool's slots) taken in the stack's Redis."""
    from sessions.live import RedisLiveStore

    store = RedisLiveStore(stack.redis.url, pool=stack.prefix)
    try:
        return await store.active(org_id=org_id), await store.pool_active()
    finally:
        await store.aclose()
