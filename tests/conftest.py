"""Suite-wide setup: real Postgres and Redis (required under CI), and the
organizations, users and keys most tests start from."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.test import Client

from voiceapp.tenants.models import Membership, Organization, Role, User
from voiceapp.tenants.services import organization_create, secret_key_create

PASSWORD = "correct-horse-battery-9"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true"):
        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(f"CI must run on Postgres, not {engine}: set DATABASE_URL.")
        if not settings.REDIS_URL:
            raise pytest.UsageError("CI must run with Redis: set REDIS_URL.")


@pytest.fixture(autouse=True)
def _isolated_media(settings: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _clean_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@dataclass
class Tenant:
    org: Organization
    owner: User
    client: Client


@pytest.fixture
def make_tenant(db: None) -> Callable[..., Tenant]:
    made = 0

    def make(name: str | None = None) -> Tenant:
        nonlocal made
        made += 1
        name = name or f"Org {made}"
        email = f"owner{made}-{os.getpid()}@{name.lower().replace(' ', '-')}.test"
        org = organization_create(name=name, owner_email=email, owner_password=PASSWORD)
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
