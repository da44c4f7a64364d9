"""Random query strings on every dashboard page: ignored or refused, never a 500.
FUZZ_SEED sets the seed (printed)."""

from __future__ import annotations

import os
import random
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.support.tenants import Tenant
from voiceapp.tenants.services import publishable_key_create

pytestmark = pytest.mark.django_db

SEED = int(os.environ.get("FUZZ_SEED") or random.randrange(2**32))
PAGES = [
    "dashboard:home",
    "dashboard:persona_list",
    "dashboard:persona_create",
    "dashboard:voice_list",
    "dashboard:keys",
    "dashboard:llm_endpoints",
    "dashboard:widget",
    "dashboard:team",
    "dashboard:call_list",
]
values = st.one_of(
    st.text(max_size=30),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["1'", "abc", "%00", "\x00", "1.5", "-1", "\uff11", "99999999999999999999"]),
    # dates and end reasons, for the calls list's filters
    st.dates().map(str),
    st.sampled_from(["2026-02-30", "9999-12-31", "0001-01-01", "2026-1-5", "hangup", "lost"]),
)
queries = st.dictionaries(
    st.sampled_from(["persona", "key", "page", "org", "q", "sort", "start", "end", "end_reason"]),
    values,
    max_size=4,
)


def test_random_query_strings_never_break_a_page(tenant_a: Tenant) -> None:
    print(f"\nfuzz dashboard: seed {SEED} (FUZZ_SEED={SEED} to repeat)")
    publishable_key_create(org=tenant_a.org, name="site", allowed_origins=["https://alpha.test"])

    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @seed(SEED)
    @given(st.sampled_from(PAGES), queries)
    def one_page(name: str, query: dict[str, str]) -> None:
        response = tenant_a.client.get(reverse(name) + "?" + urlencode(query))
        assert response.status_code in (200, 400), (name, query, response.status_code)

    one_page()
