from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from voiceapp.personas.models import Persona
from voiceapp.tenants import models, origins, selectors, services
from voiceapp.tenants.models import Membership, Organization, Role, User
from voiceapp.tenants.onboarding import organization_onboard


@pytest.mark.django_db
def test_onboarding_makes_owner_and_default_persona() -> None:
    org = organization_onboard(
        name="Acme Clinic", owner_email="Boss@Acme.test", owner_password="x-pass-123"
    )

    owner = User.objects.get(email="boss@acme.test")
    assert owner.check_password("x-pass-123")
    assert Membership.objects.get(org=org, user=owner).role == Role.OWNER
    persona = org.personas.get()
    assert persona.slug == "assistant"
    assert persona.agent_speaks_first and persona.greeting
    assert persona.voice.voice_id == "en_US-joe-medium"


@pytest.mark.django_db
def test_onboarding_an_existing_user_as_owner() -> None:
    user = User.objects.create_user(email="known@acme.test", password="x-pass-123")

    org = organization_onboard(name="Second Org", owner=user)

    assert Membership.objects.get(org=org).user == user
    assert Persona.objects.filter(org=org).count() == 1


@pytest.mark.django_db
def test_a_refused_onboarding_leaves_nothing() -> None:
    with pytest.raises(ValidationError, match="needs a name"):
        organization_onboard(name=" ", owner_email="a@nothing.test")

    assert not Organization.objects.exists()
    assert not Persona.objects.exists()


def _imports(module: object) -> set[str]:
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
    found: set[str] = set()
    for node in ast.walk(tree):  # module level and inside functions alike
        if isinstance(node, ast.ImportFrom):
            found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("module", [models, origins, selectors, services])
def test_tenants_core_modules_import_nothing_of_personas(module: object) -> None:
    """personas imports tenants; the other direction is onboarding's alone."""
    assert not [m for m in _imports(module) if m.startswith("voiceapp.personas")]
