"""The fault tests' live server: daphne and two inference workers on a private
Redis, daphne's database behind a proxy that can cut it off (tests/support/faults.py).
One for the whole fault suite: the models load once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from tests.support.faults import FaultStack, fault_stack
from tests.support.tenants import persona_brief
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
def quiet_persona(quiet_persona: Persona) -> Persona:
    """The shared quiet persona, told to answer briefly."""
    return persona_brief(
        quiet_persona, "You are a helpful assistant. Answer in one short sentence."
    )
