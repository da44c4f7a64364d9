"""schemathesis against `/api/v1/schema/`: generated requests to every operation,
through Django's WSGI application with a secret key of org A's.

Every answer must be a non-5xx, and a documented answer must match the schema
(its body and content type). Error answers (400, 404) are not in the schema
yet, so status-code conformance is not checked. FUZZ_API_EXAMPLES sets the
examples per operation (25 by default), FUZZ_SEED the seed; both are printed.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from tests.support.tenants import Tenant
from voiceapp.personas.models import PersonaFact
from voiceapp.tenants.services import secret_key_create

EXAMPLES = int(os.environ.get("FUZZ_API_EXAMPLES", "25"))
SEED = int(os.environ.get("FUZZ_SEED") or random.randrange(2**32))


schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())
answers: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _keep_the_test_connection() -> Iterator[None]:
    """As Django's test client does: a request must not close the test's connection."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)
    print(f"\nfuzz api: seed {SEED}, {sum(answers.values())} requests, {dict(answers)}")


@pytest.fixture
def key(tenant_a: Tenant) -> str:
    """Org A's key, with a persona fact so that ids in paths sometimes exist."""
    persona = tenant_a.org.personas.get()
    PersonaFact.objects.create(persona=persona, question="Hours?", answer="Nine to five.")
    return secret_key_create(org=tenant_a.org, name="fuzz")[1]


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=list(HealthCheck),
)
@seed(SEED)
def test_api_answers_generated_requests_without_server_errors(case: Any, key: str) -> None:
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {key}"},
        checks=[not_a_server_error, content_type_conformance, response_schema_conformance],
    )
    answers[f"{case.method} {response.status_code}"] += 1
