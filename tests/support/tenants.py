"""The tenant most tests start from (an onboarded organization, its owner and a
client logged in as them), the password its users are given, and how tests
brief its persona."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client

from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization, User

PASSWORD = "correct-horse-battery-9"


@dataclass
class Tenant:
    org: Organization
    owner: User
    client: Client


def persona_brief(
    persona: Persona, instructions: str, *, general_questions: bool = True
) -> Persona:
    """The persona with these instructions: tests that wait for replies want short ones.
    Told it is an assistant, it answers general questions too (a business's persona
    declines them by default)."""
    persona.instructions = instructions
    persona.general_questions = general_questions
    persona.save(update_fields=["instructions", "general_questions"])
    return persona


def staff_client(org: Organization, *, permissions_ending: str) -> Client:
    """A client logged in as a staff member (not a superuser) who acts for `org`
    and holds the permissions whose codenames end with `permissions_ending`."""
    from django.contrib.auth.models import Permission

    from voiceapp.tenants.models import Membership, Role

    user = User.objects.create_user(
        email=f"staff@{org.slug}.test", password="pw-123456789", is_staff=True
    )
    user.user_permissions.set(Permission.objects.filter(codename__endswith=permissions_ending))
    Membership.objects.create(org=org, user=user, role=Role.ADMIN)
    client = Client()
    client.force_login(user)
    return client
