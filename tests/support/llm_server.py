"""A real OpenAI-compatible LLM server for tests: llama-cpp-python's, serving
the embedded SmolLM2 model on a free local port, and servers that misbehave
on purpose (one that accepts connections and never answers)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from voiceapp.engine.llm import default_llm_model_path

COMPLETION_LINE = '"POST /v1/chat/completions HTTP/1.1" 200'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LLMServer:
    base_url: str  # http://127.0.0.1:PORT/v1
    api_key: str
    model: str  # the alias it serves the model under
    log: Path

    def completions(self) -> int:
        """Chat completions this server has answered so far (from its access log)."""
        return self.log.read_text(errors="replace").count(COMPLETION_LINE)


@contextlib.contextmanager
def llama_cpp_server(log_dir: Path, *, api_key: str, model: str) -> Iterator[LLMServer]:
    """`python -m llama_cpp.server` requiring `api_key`, serving SmolLM2 as `model`."""
    port = free_port()
    log = log_dir / "llama-server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        default_llm_model_path(),
        "--model_alias",
        model,
        "--api_key",
        api_key,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        # One thread for prompts too: two threads that wait for each other on a
        # shared, busy 2-core machine stalled a 90-token prompt for over 10 s.
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
    ]
    with log.open("wb") as out:
        # unbuffered: the access log is read while the server runs
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = LLMServer(f"http://127.0.0.1:{port}/v1", api_key, model, log)
    try:
        deadline = time.monotonic() + 90
        probe = urllib.request.Request(
            f"{server.base_url}/models", headers={"Authorization": f"Bearer {api_key}"}
        )
        while True:
            try:
                urllib.request.urlopen(probe, timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(log.read_text(errors="replace")) from None
                time.sleep(0.2)
        # The first streamed completion of a fresh server is slow (5-14 s measured on
        # a busy 2-core machine, then ~0.5 s); warm it up, as the embedded workers
        # warm up theirs, so the tests' timeouts measure the server, not its start.
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 2,
            "stream": True,
        }
        warm_up = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        )
        urllib.request.urlopen(warm_up, timeout=120).read()
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A base URL whose server accepts the connection and then never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@dataclass
class ScriptedServer:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)  # the JSON bodies received


@contextlib.contextmanager
def scripted_sse_server(
    events: list[dict[str, Any]], *, done: bool = True
) -> Iterator[ScriptedServer]:
    """An OpenAI-style `/chat/completions` that streams `events` as server-sent
    events, then `[DONE]` (unless not `done`: it then closes the stream there, as a
    server does whose reply failed after its 200), whatever it is asked (for what
    real servers differ in)."""
    server = ScriptedServer("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            server.requests.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in [*map(json.dumps, events), *(["[DONE]"] if done else [])]:
                self.wfile.write(f"data: {event}\n\n".encode())
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def closed_port_url() -> str:
    """A base URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}/v1"
