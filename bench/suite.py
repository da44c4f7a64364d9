"""Running test-suite files at length from a benchmark (bench.fuzz, bench.faults).

The tests get the environment `./dev test` gives them: Postgres and Redis from
DATABASE_URL and REDIS_URL, else the local ones, and production-like settings.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def suite_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment for a pytest run of the suite's files, with `extra` on top."""
    env = {**os.environ, **extra}
    env.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/voiceapp")
    env.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    for name, value in {
        "DEBUG": "0",
        "SECRET_KEY": "test-secret-key-not-for-production",
        "SECURE_SSL_REDIRECT": "0",
        "STATIC_MANIFEST": "0",
        "CELERY_TASK_ALWAYS_EAGER": "1",
    }.items():
        env.setdefault(name, value)
    return env


def run_pytest(paths: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """pytest on `paths`, its output captured (printed lines included: -s)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *paths,
            "-s",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-o",
            "timeout=3600",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def closing_line(lines: list[str]) -> str:
    """pytest's closing summary ("3 passed in 60.1s"), or ""."""
    return next((ln for ln in reversed(lines) if " passed" in ln or " failed" in ln), "")
