"""./dev as README.md uses it, in a fresh data directory with nothing set in the
environment: `./dev run`, then `KEY=$(./dev manage create_api_key --org demo-company)`
and the API with that key; emailed links point where the server listens."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parent.parent
KEEP = ("PATH", "HOME", "LANG", "TMPDIR")

pytestmark = pytest.mark.timeout(420)


@dataclass
class DevRun:
    """`./dev run` in its own data directory and settings file."""

    url: str
    env: dict[str, str]
    env_file: Path
    log: Path

    def shell(self, script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    # A person's shell: no DEBUG, SECRET_KEY, DATABASE_URL or REDIS_URL. The data
    # directory and the settings file are this module's own, not the checkout's.
    tmp_path = tmp_path_factory.mktemp("dev-run")
    env_file = tmp_path / ".env"
    env = {k: os.environ[k] for k in KEEP if k in os.environ}
    env.update({"DATA_DIR": str(tmp_path / "var"), "ENV_FILE": str(env_file)})
    port = free_port()
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["./dev", "run"],
            cwd=ROOT,
            env={**env, "PORT": str(port), "PRELOAD_MODELS": "0"},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + 300
        while "Listening on TCP address" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        yield DevRun(f"http://127.0.0.1:{port}", env, env_file, log)
    finally:
        proc.terminate()  # `./dev run` execs daphne: this is the server
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_readme_commands_work_after_dev_run(dev_run: DevRun) -> None:
    # given `./dev run` started on a fresh checkout (it wrote the settings file)
    mode = stat.S_IMODE(dev_run.env_file.stat().st_mode)
    assert mode == 0o600, oct(mode)
    assert re.search(r"^SECRET_KEY=\S{40,}$", dev_run.env_file.read_text(), re.M)

    # when the README's API commands run as written
    result = dev_run.shell(
        "KEY=$(./dev manage create_api_key --org demo-company)\n"
        f'curl -sf -H "Authorization: Bearer $KEY" {dev_run.url}/api/v1/personas/\n'
        'echo; echo "$KEY"'
    )

    # then a secret key came out and the API answered with the demo persona
    assert result.returncode == 0, result.stdout + result.stderr
    listing, key = result.stdout.strip().splitlines()
    assert key.startswith("sk_") and len(key) > 40
    assert '"slug":"assistant"' in listing.replace(" ", "")
    # and manage.py itself reads the same settings file
    plain = dev_run.shell(".venv/bin/python manage.py create_api_key --org demo-company")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip().startswith("sk_")


def test_self_hoster_commands_work_as_written(dev_run: DevRun) -> None:
    # when the README's commands for self-hosters run in sequence
    result = dev_run.shell(
        './dev manage create_organization --name "Acme" --owner-email boss@acme.test\n'
        "./dev manage create_api_key --org acme --name backend\n"
        "./dev manage sync_voices"
    )

    # then each succeeded: the organization has a key and the voices are known
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^sk_\S{40,}$", result.stdout, re.M), result.stdout


def test_invitation_link_points_where_dev_run_listens(dev_run: DevRun) -> None:
    # given the demo owner logged in to the server `./dev run` started on its own port
    browser = requests.Session()
    browser.get(f"{dev_run.url}/accounts/login/", timeout=30)
    login = browser.post(
        f"{dev_run.url}/accounts/login/",
        data={
            "login": "demo@example.com",
            "password": "demo-voice-agents",
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        timeout=30,
    )
    assert login.url.endswith("/dashboard/"), login.text[:500]

    # when they invite a colleague
    invited = browser.post(
        f"{dev_run.url}/dashboard/team/invite/",
        data={
            "email": "colleague@example.com",
            "role": "member",
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        timeout=30,
    )
    assert invited.status_code == 200 and "Invitation sent" in invited.text

    # then the emailed link (printed by the console email backend) is on that port
    deadline = time.monotonic() + 10
    while "Accept the invitation:" not in dev_run.log.read_text():
        assert time.monotonic() < deadline, dev_run.log.read_text()[-2000:]
        time.sleep(0.2)
    link = re.search(r"Accept the invitation: (\S+)", dev_run.log.read_text())
    assert link is not None
    assert link.group(1).startswith(f"{dev_run.url}/dashboard/invitations/")
