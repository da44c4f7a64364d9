"""Suite-wide setup: real Postgres and Redis (required under CI), and the
organizations, users and keys most tests start from."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from tests.support.live_server import LiveServer
from tests.support.llm_server import LLMServer, llama_cpp_server
from tests.support.processes import ROOT, free_port, start_daphne, wait_for_log
from tests.support.tenants import PASSWORD, Tenant
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Membership, Organization, Role, User
from voiceapp.tenants.onboarding import organization_onboard
from voiceapp.tenants.services import secret_key_create

FLUSH_TRIES = 3


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true"):
        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"CI must run on Postgres, not {engine}: set DATABASE_URL.")
        if not settings.REDIS_URL:
            raise pytest.UsageError("CI must run with Redis: set REDIS_URL.")
    _flush_retries_deadlocks()


def _flush_retries_deadlocks() -> None:
    """A transactional test's teardown empties every table with one TRUNCATE, which
    can deadlock with a live server's write still under way (a call's webhook
    delivery after the test stopped waiting): Postgres then aborts the TRUNCATE and
    the next test starts on this one's rows. The flush is tried again, as a whole,
    once the write has gone through."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush

    handle = flush.Command.handle
    if getattr(handle, "retries_deadlocks", False):
        return

    def retrying(self: flush.Command, **options: Any) -> None:
        for attempt in range(FLUSH_TRIES):
            try:
                return handle(self, **options)
            except CommandError as exc:
                if "deadlock detected" not in str(exc.__cause__) or attempt + 1 == FLUSH_TRIES:
                    raise
                time.sleep(0.5)

    retrying.retries_deadlocks = True  # type: ignore[attr-defined]
    flush.Command.handle = retrying  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _isolated_media(settings: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")  # type: ignore[attr-defined]
    settings.CALL_RECORDING_SPOOL_DIR = tmp_path_factory.mktemp("spool")  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _roomy_inference_pool(settings: object) -> None:
    """The suite is not a capacity test: workers started in this process advertise room
    for 50 calls and never overload (tests/sessions/test_admission.py sizes its own
    pools and budgets)."""
    settings.INFERENCE_MAX_CALLS = 50  # type: ignore[attr-defined]
    settings.INFERENCE_WAIT_BUDGET_MS = 1_000_000  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _clean_cache() -> None:
    from django.core.cache import cache

    cache.clear()


# --- Real models and real audio, loaded once per test process (tests/support/models.py, clips.py)


@pytest.fixture(scope="session")
def models() -> Any:
    from tests.support.models import shared_models

    return shared_models()


@pytest.fixture(scope="session")
def vad_model() -> Any:
    from tests.support.models import shared_vad

    return shared_vad()


@pytest.fixture(scope="session")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.support.clips import audio_set

    return audio_set(tmp_path_factory.mktemp("audio"))


@pytest.fixture(scope="session")
def question_pcm() -> bytes:
    """“What is the capital of France?” spoken by Piper, as PCM16 24 kHz mono."""
    from tests.support.clips import pcm24, piper_clip

    clip = piper_clip("What is the capital of France?")
    return pcm24(clip.samples, clip.rate)


@pytest.fixture
def make_tenant(db: None) -> Callable[..., Tenant]:
    made = 0

    def make(name: str | None = None) -> Tenant:
        nonlocal made
        made += 1
        name = name or f"Org {made}"
        email = f"owner{made}-{os.getpid()}@{name.lower().replace(' ', '-')}.test"
        org = organization_onboard(name=name, owner_email=email, owner_password=PASSWORD)
        owner = User.objects.get(email=email)
        client = Client()
        client.force_login(owner)
        return Tenant(org=org, owner=owner, client=client)

    return make


@pytest.fixture
def tenant_a(make_tenant: Callable[..., Tenant]) -> Tenant:
    return make_tenant("Alpha Dental")


@pytest.fixture
def tenant_b(make_tenant: Callable[..., Tenant]) -> Tenant:
    return make_tenant("Bravo Realty")


@pytest.fixture
def quiet_persona(tenant_a: Tenant) -> Persona:
    """tenant_a's default persona, told not to greet: a call starts with the
    caller's turn, and the first event a test sees is its own."""
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.agent_speaks_first = False
    persona.save()
    return persona


@pytest.fixture
def member_of(db: None) -> Callable[[Organization, str], tuple[User, Client]]:
    def make(org: Organization, role: str = Role.MEMBER) -> tuple[User, Client]:
        user = User.objects.create_user(email=f"{role}-{org.slug}@example.test", password=PASSWORD)
        Membership.objects.create(org=org, user=user, role=role)
        client = Client()
        client.force_login(user)
        return user, client

    return make


@pytest.fixture
def secret_key_a(tenant_a: Tenant) -> str:
    _, raw = secret_key_create(org=tenant_a.org, name="tests")
    return raw


# --- A live server in the production topology: daphne and a separate
# inference worker process, on the test database and real Redis.


@pytest.fixture(scope="session")
def voice_server(
    django_db_setup: None, django_db_blocker: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """daphne + `manage.py inference_worker`, as in docker-compose.yml."""
    from django.conf import settings

    if not settings.REDIS_URL or connection.vendor != "postgresql":
        pytest.fail("call tests need Postgres and Redis (DATABASE_URL, REDIS_URL)")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://{}@{}:{}/{}".format(
            db["USER"], db["HOST"] or "127.0.0.1", db["PORT"] or 5432, db["NAME"]
        ),
        "REDIS_URL": settings.REDIS_URL,
        "CHANNELS_PREFIX": f"test{uuid.uuid4().hex[:8]}",
        "INFERENCE_EMBEDDED": "0",
        "DEBUG": "0",
        "SECRET_KEY": "live-server-test-key",
        # Secrets the tests store encrypted (LLM endpoint keys) must be readable there.
        "FIELD_ENCRYPTION_KEY": settings.FIELD_ENCRYPTION_KEY or settings.SECRET_KEY,
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "STATIC_MANIFEST": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CALL_RESUME_WINDOW_S": "5",
        # The suite is not a capacity test: admission tests size their own pools, and
        # a loaded CI machine's queueing must not refuse the next test's calls.
        "INFERENCE_MAX_CALLS": "50",
        "INFERENCE_WAIT_BUDGET_MS": "1000000",
        "WEBRTC_LOOPBACK_ONLY": "1",
        "PYTHONUNBUFFERED": "1",
    }
    logs = tmp_path_factory.mktemp("live")
    media = tmp_path_factory.mktemp("live-media")
    env["MEDIA_ROOT"] = str(media)
    spool = tmp_path_factory.mktemp("live-spool")
    env["CALL_RECORDING_SPOOL_DIR"] = str(spool)
    port = free_port()
    procs: list[subprocess.Popen[str]] = []
    try:
        worker_log = logs / "worker.log"
        procs.append(
            subprocess.Popen(
                [sys.executable, "manage.py", "inference_worker"],
                cwd=ROOT,
                env=env,
                stdout=worker_log.open("w"),
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
        web_log = logs / "web.log"
        procs.append(start_daphne(port, env, web_log))
        wait_for_log(procs[0], "WORKER READY", 180, worker_log)
        wait_for_log(procs[1], "Listening on TCP address", 60, web_log)
        yield LiveServer("127.0.0.1", port, logs, media, spool, env["CHANNELS_PREFIX"])
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


# --- A real OpenAI-compatible LLM server (bring-your-own-LLM tests) ---------------


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LLMServer]:
    """llama-cpp-python's server on SmolLM2, requiring an API key, serving the
    model under a name only it knows."""
    with llama_cpp_server(
        tmp_path_factory.mktemp("llm-server"), api_key="byo-test-key-7f3a9c", model="byo-smollm"
    ) as server:
        yield server
