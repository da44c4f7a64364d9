"""Reads for persona knowledge, always through the organization."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import Http404

from tests.support.tenants import Tenant
from voiceapp.inference.runtime import call_config_from_persona
from voiceapp.personas.models import Persona
from voiceapp.personas.selectors import (
    persona_fact_get,
    persona_fact_list,
    persona_get_for_call,
)
from voiceapp.personas.services import persona_fact_create

pytestmark = pytest.mark.django_db


def assistant(tenant: Tenant) -> Persona:
    return Persona.objects.get(org=tenant.org, slug="assistant")


def test_fact_list_is_in_order_and_scoped_to_the_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    # given facts on A's persona, added out of order
    persona = assistant(tenant_a)
    later = persona_fact_create(persona=persona, answer="Later.", position=3)
    first = persona_fact_create(persona=persona, answer="First.", position=1)
    # then A lists them in order; B, asking about A's persona, gets nothing
    assert list(persona_fact_list(org=tenant_a.org, persona=persona)) == [first, later]
    assert list(persona_fact_list(org=tenant_b.org, persona=persona)) == []


def test_fact_get_refuses_other_orgs_and_other_personas(tenant_a: Tenant, tenant_b: Tenant) -> None:
    persona_a, persona_b = assistant(tenant_a), assistant(tenant_b)
    fact_b = persona_fact_create(persona=persona_b, answer="Bravo only.")

    assert persona_fact_get(org=tenant_b.org, persona=persona_b, pk=fact_b.pk) == fact_b
    with pytest.raises(Http404):
        persona_fact_get(org=tenant_a.org, persona=persona_b, pk=fact_b.pk)
    with pytest.raises(Http404):
        persona_fact_get(org=tenant_a.org, persona=persona_a, pk=fact_b.pk)


def test_persona_for_a_call_comes_with_its_facts(
    tenant_a: Tenant, django_assert_num_queries: Any
) -> None:
    persona = assistant(tenant_a)
    persona_fact_create(persona=persona, answer="Second.", position=2)
    persona_fact_create(persona=persona, answer="First.", position=1)

    loaded = persona_get_for_call(org_id=tenant_a.org.pk, pk=persona.pk)

    with django_assert_num_queries(0):  # as in an async call loop: no further queries
        config = call_config_from_persona(loaded)
    assert [f.answer for f in config.facts] == ["First.", "Second."]


def test_persona_for_a_call_is_looked_up_in_its_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    with pytest.raises(Persona.DoesNotExist):
        persona_get_for_call(org_id=tenant_b.org.pk, pk=assistant(tenant_a).pk)
