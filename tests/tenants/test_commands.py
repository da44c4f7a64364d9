from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from voiceapp.tenants.models import Organization, SecretKey
from voiceapp.tenants.services import secret_key_authenticate

pytestmark = pytest.mark.django_db


def test_create_organization_json() -> None:
    out = StringIO()

    call_command(
        "create_organization",
        "--name",
        "Clinic",
        "--owner-email",
        "doc@clinic.test",
        "--owner-password",
        "pw-123456789",
        "--json",
        stdout=out,
    )

    result = json.loads(out.getvalue())
    assert result["slug"] == "clinic" and result["personas"] == ["assistant"]
    assert (
        Organization.objects.get(pk=result["id"]).memberships.get().user.email == "doc@clinic.test"
    )


def test_create_api_key_prints_a_working_key_once() -> None:
    call_command(
        "create_organization", "--name", "Shop", "--owner-email", "o@shop.test", stdout=StringIO()
    )
    out = StringIO()

    call_command("create_api_key", "--org", "shop", "--name", "backend", "--json", stdout=out)

    result = json.loads(out.getvalue())
    key = secret_key_authenticate(raw=result["key"])
    assert key is not None and key.org.slug == "shop" and key.name == "backend"
    assert result["key"] not in json.dumps(list(SecretKey.objects.values()), default=str)


def test_commands_fail_clearly() -> None:
    with pytest.raises(CommandError, match="No organization with slug"):
        call_command("create_api_key", "--org", "missing")
    with pytest.raises(CommandError, match="needs a name"):
        call_command("create_organization", "--name", " ", "--owner-email", "a@b.test")
