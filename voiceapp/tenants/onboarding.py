"""A new organization and what it starts with: the one place sign-up, the
dashboard, ``create_organization`` and ``seed_demo`` create organizations.

Lives apart from ``tenants.services`` so that tenants' services import nothing of
personas (personas' models import tenants' models: that direction only)."""

from __future__ import annotations

from django.db import transaction

from voiceapp.personas.services import persona_create_default
from voiceapp.tenants.models import Organization, User
from voiceapp.tenants.services import organization_create


@transaction.atomic
def organization_onboard(
    *,
    name: str,
    owner: User | None = None,
    owner_email: str | None = None,
    owner_password: str | None = None,
) -> Organization:
    """Create an organization with its owner membership and its default persona
    (``assistant``), all or nothing. The owner is given, or found/created by email."""
    org = organization_create(
        name=name, owner=owner, owner_email=owner_email, owner_password=owner_password
    )
    persona_create_default(org=org)
    return org
