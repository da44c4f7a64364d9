"""Starting the live server's processes in tests: the directory they run in,
daphne's arguments, a free port, and waiting for a process to say it is ready."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent  # the repository: manage.py's directory

# As in ./dev and docker-compose.yml: daphne drops the connection on messages
# over its limit, so it is set above ours (REALTIME_MAX_MESSAGE_BYTES), which
# answers with an `error` event instead.
DAPHNE_ARGS = [
    "--websocket-max-message-size",
    str(16 * 1024 * 1024),
    "--websocket-max-frame-size",
    str(16 * 1024 * 1024),
]


def start_daphne(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    """daphne serving the project on 127.0.0.1:`port`, its output in `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), *DAPHNE_ARGS,
         "voiceapp.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_log(proc: subprocess.Popen[str], marker: str, timeout_s: float, log: Path) -> str:
    """Wait until `marker` is in `log`; returns the log's line that holds it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited early:\n{log.read_text()[-3000:]}")
        for line in log.read_text().splitlines():
            if marker in line:
                return line
        time.sleep(0.2)
    raise RuntimeError(f"no “{marker}” within {timeout_s} s:\n{log.read_text()[-3000:]}")
