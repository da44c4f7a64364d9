from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from tests.support.tenants import Tenant
from voiceapp.tenants.models import Invitation, Membership, Role, SecretKey, User
from voiceapp.tenants.services import (
    invitation_accept,
    invitation_create,
    invitation_revoke,
    membership_remove,
    organization_create,
    publishable_key_create,
    secret_key_authenticate,
    secret_key_create,
    secret_key_revoke,
    token_hash,
)

pytestmark = pytest.mark.django_db


def test_organization_create_makes_the_owner_and_nothing_of_other_apps() -> None:
    org = organization_create(
        name="Acme Clinic", owner_email="Boss@Acme.test", owner_password="x-pass-123"
    )

    owner = User.objects.get(email="boss@acme.test")
    assert owner.check_password("x-pass-123")
    assert Membership.objects.get(org=org, user=owner).role == Role.OWNER
    assert not org.personas.exists()


def test_organization_slugs_stay_unique() -> None:
    first = organization_create(name="Same Name", owner_email="a@same.test")
    second = organization_create(name="Same Name", owner_email="b@same.test")

    assert first.slug == "same-name"
    assert second.slug == "same-name-2"


def test_organization_needs_a_name() -> None:
    with pytest.raises(ValidationError, match="needs a name"):
        organization_create(name="  ", owner_email="a@b.test")


def test_invitation_is_emailed_and_accepted(
    tenant_a: Tenant, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        invitation, raw = invitation_create(
            org=tenant_a.org,
            email="New.Person@Example.test",
            role=Role.ADMIN,
            invited_by=tenant_a.owner,
        )

    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["new.person@example.test"]
    assert f"/dashboard/invitations/{raw}/" in mail.outbox[0].body
    assert invitation.token_hash == token_hash(raw) and raw not in invitation.token_hash

    person = User.objects.create_user(email="new.person@example.test", password="pw-123456789")
    membership = invitation_accept(raw_token=raw, user=person)

    assert membership.org == tenant_a.org and membership.role == Role.ADMIN
    with pytest.raises(ValidationError, match="invalid, used or expired"):
        invitation_accept(raw_token=raw, user=person)


def test_invitation_for_someone_else_is_refused(tenant_a: Tenant) -> None:
    _, raw = invitation_create(
        org=tenant_a.org, email="invited@example.test", role=Role.MEMBER, invited_by=tenant_a.owner
    )
    intruder = User.objects.create_user(email="intruder@example.test", password="pw-123456789")

    with pytest.raises(ValidationError, match=r"sent to invited@example\.test"):
        invitation_accept(raw_token=raw, user=intruder)
    assert not Membership.objects.filter(user=intruder).exists()


def test_expired_and_revoked_invitations_are_refused(tenant_a: Tenant) -> None:
    person = User.objects.create_user(email="late@example.test", password="pw-123456789")
    invitation, raw = invitation_create(
        org=tenant_a.org, email=person.email, role=Role.MEMBER, invited_by=tenant_a.owner
    )
    Invitation.objects.filter(pk=invitation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(ValidationError):
        invitation_accept(raw_token=raw, user=person)

    invitation, raw = invitation_create(
        org=tenant_a.org, email=person.email, role=Role.MEMBER, invited_by=tenant_a.owner
    )
    invitation_revoke(invitation=invitation, actor=tenant_a.owner)
    with pytest.raises(ValidationError):
        invitation_accept(raw_token=raw, user=person)


def test_members_cannot_invite_and_admins_cannot_invite_owners(tenant_a: Tenant, member_of) -> None:  # type: ignore[no-untyped-def]
    member, _ = member_of(tenant_a.org, Role.MEMBER)
    admin, _ = member_of(tenant_a.org, Role.ADMIN)

    with pytest.raises(PermissionDenied):
        invitation_create(org=tenant_a.org, email="x@y.test", role=Role.MEMBER, invited_by=member)
    with pytest.raises(PermissionDenied):
        invitation_create(org=tenant_a.org, email="x@y.test", role=Role.OWNER, invited_by=admin)
    with pytest.raises(ValidationError, match="already a member"):
        invitation_create(org=tenant_a.org, email=member.email, role=Role.MEMBER, invited_by=admin)
    assert mail.outbox == []


def test_last_owner_cannot_leave(tenant_a: Tenant) -> None:
    owner_membership = Membership.objects.get(org=tenant_a.org, user=tenant_a.owner)

    with pytest.raises(ValidationError, match="at least one owner"):
        membership_remove(membership=owner_membership, actor=tenant_a.owner)


def test_secret_key_is_stored_hashed_and_authenticates(tenant_a: Tenant) -> None:
    key, raw = secret_key_create(org=tenant_a.org, name="backend", created_by=tenant_a.owner)

    assert raw.startswith("sk_") and len(raw) > 40
    stored = SecretKey.objects.get(pk=key.pk)
    assert stored.key_hash == token_hash(raw)
    assert raw not in {stored.key_hash, stored.prefix, stored.name}
    assert stored.prefix == raw[:10]
    assert stored.last_used_at is None

    found = secret_key_authenticate(raw=raw)

    assert found is not None and found.org == tenant_a.org
    assert SecretKey.objects.get(pk=key.pk).last_used_at is not None


def test_revoked_and_wrong_keys_do_not_authenticate(tenant_a: Tenant) -> None:
    key, raw = secret_key_create(org=tenant_a.org, name="old")
    secret_key_revoke(key=key)

    assert secret_key_authenticate(raw=raw) is None
    assert secret_key_authenticate(raw=raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    assert secret_key_authenticate(raw="pk_" + raw[3:]) is None
    assert secret_key_authenticate(raw="sk_" + "x" * 500) is None


def test_secret_key_needs_a_name(tenant_a: Tenant) -> None:
    with pytest.raises(ValidationError):
        secret_key_create(org=tenant_a.org, name=" ")


def test_publishable_key_keeps_normalized_origins(tenant_a: Tenant) -> None:
    key = publishable_key_create(
        org=tenant_a.org, name="site", allowed_origins=["https://Shop.test/", "https://shop.test"]
    )

    assert key.key.startswith("pk_")
    assert key.allowed_origins == ["https://shop.test"]
    with pytest.raises(ValidationError) as exc:
        publishable_key_create(org=tenant_a.org, name="site", allowed_origins=[])
    assert "allowed_origins" in exc.value.message_dict
