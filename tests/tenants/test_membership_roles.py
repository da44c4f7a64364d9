"""The role matrix: who may remove, re-role or leave whom, through the services
and through the dashboard's team page."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.messages import get_messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from tests.support.tenants import PASSWORD
from voiceapp.tenants.models import Membership, Organization, Role, User
from voiceapp.tenants.services import (
    membership_remove,
    membership_role_change,
    organization_create,
)

pytestmark = pytest.mark.django_db

OWNER, ADMIN, MEMBER = Role.OWNER, Role.ADMIN, Role.MEMBER


@dataclass
class Team:
    org: Organization
    # Two people per role, so an actor never acts on itself unless a test says so.
    people: dict[str, list[Membership]]

    def actor(self, role: str) -> User:
        return self.people[role][0].user

    def target(self, role: str) -> Membership:
        return self.people[role][1]


@pytest.fixture
def team() -> Team:
    org = organization_create(name="Roles Inc", owner_email="owner0@roles.test")
    people: dict[str, list[Membership]] = {
        OWNER: [Membership.objects.get(org=org)],
        ADMIN: [],
        MEMBER: [],
    }
    for role in (OWNER, ADMIN, MEMBER):
        while len(people[role]) < 2:
            user = User.objects.create_user(
                email=f"{role}{len(people[role])}@roles.test", password=PASSWORD
            )
            people[role].append(Membership.objects.create(org=org, user=user, role=role))
    return Team(org=org, people=people)


def _outcome(action: object) -> str:
    try:
        action()  # type: ignore[operator]
    except PermissionDenied:
        return "denied"
    except ValidationError:
        return "invalid"
    return "ok"


REMOVE = [
    (OWNER, OWNER, "ok"),
    (OWNER, ADMIN, "ok"),
    (OWNER, MEMBER, "ok"),
    (ADMIN, OWNER, "denied"),
    (ADMIN, ADMIN, "ok"),
    (ADMIN, MEMBER, "ok"),
    (MEMBER, OWNER, "denied"),
    (MEMBER, ADMIN, "denied"),
    (MEMBER, MEMBER, "denied"),
]


@pytest.mark.parametrize(("actor", "target", "expected"), REMOVE)
def test_remove_matrix(team: Team, actor: str, target: str, expected: str) -> None:
    membership = team.target(target)

    outcome = _outcome(lambda: membership_remove(membership=membership, actor=team.actor(actor)))

    assert outcome == expected
    assert Membership.objects.filter(pk=membership.pk).exists() == (expected != "ok")


ROLE_CHANGE = [
    # actor, target's role, new role, outcome
    (OWNER, OWNER, ADMIN, "ok"),
    (OWNER, ADMIN, OWNER, "ok"),
    (OWNER, MEMBER, ADMIN, "ok"),
    (OWNER, ADMIN, MEMBER, "ok"),
    (ADMIN, OWNER, ADMIN, "denied"),
    (ADMIN, OWNER, MEMBER, "denied"),
    (ADMIN, MEMBER, OWNER, "denied"),
    (ADMIN, ADMIN, OWNER, "denied"),
    (ADMIN, MEMBER, ADMIN, "ok"),
    (ADMIN, ADMIN, MEMBER, "ok"),
    (MEMBER, MEMBER, ADMIN, "denied"),
    (MEMBER, ADMIN, MEMBER, "denied"),
    (MEMBER, OWNER, MEMBER, "denied"),
]


@pytest.mark.parametrize(("actor", "target", "role", "expected"), ROLE_CHANGE)
def test_role_change_matrix(team: Team, actor: str, target: str, role: str, expected: str) -> None:
    membership = team.target(target)

    outcome = _outcome(
        lambda: membership_role_change(membership=membership, role=role, actor=team.actor(actor))
    )

    assert outcome == expected
    membership.refresh_from_db()
    assert membership.role == (role if expected == "ok" else target)


def test_admin_cannot_promote_itself(team: Team) -> None:
    admin = team.people[ADMIN][0]

    with pytest.raises(PermissionDenied):
        membership_role_change(membership=admin, role=OWNER, actor=admin.user)

    admin.refresh_from_db()
    assert admin.role == ADMIN


@pytest.mark.parametrize("role", [OWNER, ADMIN, MEMBER])
def test_anyone_may_leave_while_an_owner_stays(team: Team, role: str) -> None:
    membership = team.people[role][0]

    membership_remove(membership=membership, actor=membership.user)

    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_last_owner_cannot_leave_or_be_demoted(team: Team) -> None:
    first, second = team.people[OWNER]
    membership_remove(membership=second, actor=first.user)

    with pytest.raises(ValidationError, match="at least one owner"):
        membership_remove(membership=first, actor=first.user)
    with pytest.raises(ValidationError, match="at least one owner"):
        membership_role_change(membership=first, role=ADMIN, actor=first.user)

    first.refresh_from_db()
    assert first.role == OWNER


def test_unknown_role_is_refused(team: Team) -> None:
    with pytest.raises(ValidationError, match="Unknown role"):
        membership_role_change(
            membership=team.target(MEMBER), role="superuser", actor=team.actor(OWNER)
        )


# --- The team page -------------------------------------------------------------


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _messages(response: object) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


def test_team_page_refuses_an_admin_removing_an_owner(team: Team) -> None:
    owner = team.target(OWNER)
    client = _client(team.actor(ADMIN))

    response = client.post(reverse("dashboard:membership_remove", args=[owner.pk]))

    assert response.status_code == 302
    assert _messages(response) == ["Only an owner can remove an owner."]
    assert Membership.objects.filter(pk=owner.pk).exists()


def test_team_page_refuses_an_admin_demoting_an_owner(team: Team) -> None:
    owner = team.target(OWNER)
    client = _client(team.actor(ADMIN))

    response = client.post(reverse("dashboard:membership_role", args=[owner.pk]), {"role": MEMBER})

    assert response.status_code == 302
    assert _messages(response) == ["Only an owner can demote an owner."]
    owner.refresh_from_db()
    assert owner.role == OWNER


def test_team_page_changes_a_role(team: Team) -> None:
    member = team.target(MEMBER)
    client = _client(team.actor(ADMIN))

    response = client.post(
        reverse("dashboard:membership_role", args=[member.pk]), {"role": ADMIN}, follow=True
    )

    assert response.status_code == 200
    assert f"{member.user.email} is now Admin." in response.content.decode()
    member.refresh_from_db()
    assert member.role == ADMIN


def test_team_page_tells_the_last_owner_why_it_cannot_leave(team: Team) -> None:
    first, second = team.people[OWNER]
    membership_remove(membership=second, actor=first.user)
    client = _client(first.user)

    leave = client.post(reverse("dashboard:membership_remove", args=[first.pk]), follow=True)
    demote = client.post(
        reverse("dashboard:membership_role", args=[first.pk]), {"role": ADMIN}, follow=True
    )

    assert leave.redirect_chain == demote.redirect_chain == [(reverse("dashboard:team"), 302)]
    assert (
        "An organization needs at least one owner: make someone else an owner before you leave."
        in leave.content.decode()
    )
    assert (
        "An organization needs at least one owner: make someone else an owner first."
        in demote.content.decode()
    )
    first.refresh_from_db()
    assert first.role == OWNER


def test_team_page_refuses_a_member_and_bad_input_without_errors(team: Team) -> None:
    client = _client(team.actor(MEMBER))
    admin = team.target(ADMIN)

    change = client.post(reverse("dashboard:membership_role", args=[admin.pk]), {"role": MEMBER})
    remove = client.post(reverse("dashboard:membership_remove", args=[admin.pk]))
    owner_client = _client(team.actor(OWNER))
    bad = owner_client.post(reverse("dashboard:membership_role", args=[admin.pk]), {"role": "x"})
    missing = owner_client.post(reverse("dashboard:membership_role", args=[999999]), {"role": "x"})

    assert change.status_code == remove.status_code == bad.status_code == 302
    assert _messages(change) == ["Only owners and admins can do this."]
    assert _messages(bad) == ["Unknown role."]
    assert missing.status_code == 404
    admin.refresh_from_db()
    assert admin.role == ADMIN


def test_team_page_shows_role_controls_to_managers_only(team: Team) -> None:
    as_admin = _client(team.actor(ADMIN)).get(reverse("dashboard:team"))
    as_member = _client(team.actor(MEMBER)).get(reverse("dashboard:team"))

    assert as_admin.status_code == as_member.status_code == 200
    assert 'name="role"' in as_admin.content.decode()
    # The member sees no role control (the invite form has one, for managers only).
    assert 'name="role"' not in as_member.content.decode()
