"""The tenant most tests start from (an onboarded organization, its owner and a
client logged in as them), and the password its users are given."""

from __future__ import annotations

from dataclasses import dataclass

from django.test import Client

from voiceapp.tenants.models import Organization, User

PASSWORD = "correct-horse-battery-9"


@dataclass
class Tenant:
    org: Organization
    owner: User
    client: Client
