"""The fault tests' live server: daphne and two inference workers on a private
Redis, daphne's database behind a proxy that can cut it off (tests/support/faults.py).
One for the whole fault suite: the models load once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from tests.support.faults import FaultStack, fault_stack
from tests.support.tenants import Tenant
from voiceapp.personas.models import Persona


@pytest.fixture(scope="session")
def fault_server(
    django_db_setup: None, django_db_blocker: object, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaultStack]:
    if connection.vendor != "postgresql":
        pytest.fail("fault tests need Postgres (DATABASE_URL)")
    with fault_stack(
        database=connection.settings_dict, logs=tmp_path_factory.mktemp("faults"), workers=2
    ) as stack:
        yield stack


@pytest.fixture
def quiet_persona(tenant_a: Tenant) -> Persona:
    """The default persona, told not to greet and to answer briefly."""
    persona = Persona.objects.get(org=tenant_a.org, slug="assistant")
    persona.agent_speaks_first = False
    persona.instructions = "You are a helpful assistant. Answer in one short sentence."
    persona.save()
    return persona
