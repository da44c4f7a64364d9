from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from voiceapp.tenants.models import Organization, PublishableKey, SecretKey
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


def test_create_publishable_key_for_an_origin() -> None:
    call_command(
        "create_organization", "--name", "Shop", "--owner-email", "o@shop.test", stdout=StringIO()
    )
    out = StringIO()

    call_command(
        "create_publishable_key",
        "--org",
        "shop",
        "--origin",
        "http://127.0.0.1:8123/",
        "--json",
        stdout=out,
    )

    result = json.loads(out.getvalue())
    key = PublishableKey.objects.get(key=result["key"])
    assert key.org.slug == "shop" and key.revoked_at is None
    assert key.allowed_origins == result["allowed_origins"] == ["http://127.0.0.1:8123"]


def test_commands_fail_clearly() -> None:
    with pytest.raises(CommandError, match="No organization with slug"):
        call_command("create_api_key", "--org", "missing")
    with pytest.raises(CommandError, match="No organization with slug"):
        call_command("create_publishable_key", "--org", "missing", "--origin", "http://a.test")
    call_command(
        "create_organization", "--name", "Shop", "--owner-email", "o@shop.test", stdout=StringIO()
    )
    with pytest.raises(CommandError, match="is not an origin like"):
        call_command("create_publishable_key", "--org", "shop", "--origin", "not a url")
    assert not PublishableKey.objects.exists()
    with pytest.raises(CommandError, match="needs a name"):
        call_command("create_organization", "--name", " ", "--owner-email", "a@b.test")


def test_seed_demo_gives_the_demo_persona_example_facts() -> None:
    from voiceapp.personas.models import Persona
    from voiceapp.tenants.management.commands.seed_demo import DEMO_FACTS

    # when the demo is seeded (as `./dev run` does)
    call_command("seed_demo", stdout=StringIO())
    persona = Persona.objects.get(org__name="Demo Company", slug="assistant")
    # then its default persona knows the example facts, in order
    stored = list(persona.facts.values_list("question", "answer"))
    assert stored == [(f.question, f.answer) for f in DEMO_FACTS]
    assert any("open" in answer for _, answer in stored)

    # and a second run neither duplicates them nor brings back deleted ones
    persona.facts.first().delete()
    call_command("seed_demo", stdout=StringIO())
    assert persona.facts.count() == len(DEMO_FACTS) - 1
    assert Organization.objects.filter(name="Demo Company").count() == 1
