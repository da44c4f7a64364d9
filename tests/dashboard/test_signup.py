from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.contrib.sites.models import Site
from django.core import mail
from django.test import Client
from django.urls import reverse

from tests.support.tenants import PASSWORD, Tenant
from voiceapp.tenants.models import Membership, Role, User
from voiceapp.tenants.services import invitation_create, site_update_from_settings

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


@pytest.fixture
def site_cache_cleared() -> Iterator[None]:
    # The Site is cached per process; the test's rollback does not reach the cache.
    yield
    Site.objects.clear_cache()


def test_site_carries_the_settings_after_migrate(site_cache_cleared: None) -> None:
    # given the test database, built by migrate
    # when the current Site is read
    site = Site.objects.get_current()

    # then it is the deployment's, not Django's example.com
    assert site.name == settings.SITE_NAME
    assert site.domain == urlsplit(settings.SITE_URL).netloc


def test_sign_up_email_is_signed_with_the_site_name_and_host(
    client: Client, settings: Any, site_cache_cleared: None
) -> None:
    # given a deployment named and addressed in its settings (written into the Site)
    settings.SITE_NAME = "Sunny Voice"
    settings.SITE_URL = "https://voice.sunny.test"
    site_update_from_settings()

    # when someone signs up
    client.post(
        reverse("account_signup"),
        {"email": "ann@sunny.test", "password1": PASSWORD, "password2": PASSWORD},
    )

    # then the confirmation email names the deployment, not example.com
    [email] = mail.outbox
    assert email.subject.startswith("[Sunny Voice] ")
    assert "Hello from Sunny Voice!" in email.body
    assert "voice.sunny.test" in email.body
    assert "example.com" not in email.subject + email.body


def test_invitation_link_uses_site_url(
    tenant_a: Tenant, settings: Any, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    # given the server runs on another port than the default (./dev run sets SITE_URL)
    settings.SITE_URL = "http://127.0.0.1:8123"

    # when someone is invited
    with django_capture_on_commit_callbacks(execute=True):
        _, token = invitation_create(
            org=tenant_a.org, email="new@alpha.test", role=Role.MEMBER, invited_by=tenant_a.owner
        )

    # then the emailed link is on that address
    link = "http://127.0.0.1:8123" + reverse("dashboard:invitation_accept", args=[token])
    assert f"Accept the invitation: {link}\n" in mail.outbox[0].body


def test_org_create_page_knows_a_member_has_an_organization(tenant_a: Tenant) -> None:
    # given the owner of Alpha Dental
    # when they open the page to create another organization
    page = tenant_a.client.get(reverse("dashboard:org_create"))

    # then it says which organization they are in, not that they have none
    assert page.status_code == 200
    text = page.content.decode()
    assert "not part of any organization" not in text
    assert "You are a member of Alpha Dental." in text


def test_org_create_page_tells_a_newcomer_they_have_none(client: Client) -> None:
    # given someone who signed up without an organization
    client.force_login(User.objects.create_user(email="solo@example.test", password=PASSWORD))

    # when they open the page
    page = client.get(reverse("dashboard:org_create"))

    # then it says so
    assert "You are not part of any organization yet." in page.content.decode()
