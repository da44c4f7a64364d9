from __future__ import annotations

import pytest

from tests.support.api import Api


@pytest.fixture
def api(secret_key_a: str) -> Api:
    """The JSON API as org A (tenant_a), with a secret key of A's."""
    return Api(secret_key_a)
