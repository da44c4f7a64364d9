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


def persona_brief(persona: Persona, instructions: str) -> Persona:
    """The persona with these instructions: tests that wait for replies want short ones."""
    persona.instructions = instructions
    persona.save(update_fields=["instructions"])
    return persona
