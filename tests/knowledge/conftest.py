from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.api import Api
from tests.support.documents import PageServer
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona


@pytest.fixture
def persona(tenant_a: Tenant) -> Persona:
    return Persona.objects.get(org=tenant_a.org, slug="assistant")


@pytest.fixture
def api(secret_key_a: str) -> Api:
    return Api(secret_key_a)


@pytest.fixture
def pages(settings) -> Iterator[PageServer]:  # type: ignore[no-untyped-def]
    """Web pages served on loopback (documents may come from it in tests only)."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    with PageServer().running() as server:
        yield server
