from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from tests.conftest import PASSWORD, Tenant
from voiceapp.tenants.models import Membership, Role, User
from voiceapp.tenants.services import invitation_create

pytestmark = pytest.mark.django_db


def test_landing_page_invites_sign_up(client: Client) -> None:
    page = client.get("/")

    assert page.status_code == 200
    assert reverse("account_signup").encode() in page.content


def test_sign_up_creates_user_org_and_default_persona(client: Client) -> None:
    response = client.post(
        reverse("account_signup"),
        {
            "organization_name": "Sunny Dental",
            "email": "Ann@Sunny.test",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )

    assert response.status_code == 302
    user = User.objects.get(email="ann@sunny.test")
    membership = Membership.objects.get(user=user)
    assert membership.org.name == "Sunny Dental" and membership.role == Role.OWNER
    assert [p.slug for p in membership.org.personas.all()] == ["assistant"]
    home = client.get(reverse("dashboard:home"))
    assert home.status_code == 200
    assert b"Sunny Dental" in home.content


def test_sign_up_errors_are_shown(client: Client, tenant_a: Tenant) -> None:
    response = client.post(
        reverse("account_signup"),
        {
            "organization_name": "X",
            "email": tenant_a.owner.email,
            "password1": "short",
            "password2": "nope",
        },
    )

    assert response.status_code == 200
    assert User.objects.filter(email=tenant_a.owner.email).count() == 1
    assert b"already" in response.content  # the email is taken


def test_login_with_email(client: Client, tenant_a: Tenant) -> None:
    response = client.post(
        reverse("account_login"), {"login": tenant_a.owner.email, "password": PASSWORD}
    )

    assert response.status_code == 302
    assert client.get(reverse("dashboard:home")).status_code == 200


def test_dashboard_requires_login(client: Client) -> None:
    response = client.get(reverse("dashboard:persona_list"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_user_without_org_is_asked_to_create_one(client: Client) -> None:
    user = User.objects.create_user(email="lonely@example.test", password=PASSWORD)
    client.force_login(user)

    assert client.get(reverse("dashboard:home"))["Location"] == reverse("dashboard:org_create")
    response = client.post(reverse("dashboard:org_create"), {"name": "Solo Shop"})

    assert response.status_code == 302
    assert Membership.objects.get(user=user).org.name == "Solo Shop"


def test_invited_person_signs_up_and_joins(
    client: Client, tenant_a: Tenant, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        _, token = invitation_create(
            org=tenant_a.org, email="new@alpha.test", role=Role.MEMBER, invited_by=tenant_a.owner
        )
    link = reverse("dashboard:invitation_accept", args=[token])
    assert link in mail.outbox[0].body

    landing = client.get(link)
    assert b"Create an account" in landing.content
    client.post(
        reverse("account_signup"),
        {"email": "new@alpha.test", "password1": PASSWORD, "password2": PASSWORD},
    )
    accepted = client.post(link)

    assert accepted.status_code == 302
    user = User.objects.get(email="new@alpha.test")
    assert [m.org for m in Membership.objects.filter(user=user)] == [tenant_a.org]
    assert client.get(link).status_code == 404  # used up


def test_org_switch_only_to_own_orgs(tenant_a: Tenant, tenant_b: Tenant) -> None:
    Membership.objects.create(org=tenant_b.org, user=tenant_a.owner, role=Role.MEMBER)
    client = tenant_a.client

    client.post(reverse("dashboard:org_switch"), {"org": tenant_b.org.pk})
    assert b"Bravo Realty" in client.get(reverse("dashboard:home")).content

    Membership.objects.filter(org=tenant_b.org, user=tenant_a.owner).delete()
    assert client.post(reverse("dashboard:org_switch"), {"org": tenant_b.org.pk}).status_code == 404
    assert client.post(reverse("dashboard:org_switch"), {"org": "nonsense"}).status_code == 404
