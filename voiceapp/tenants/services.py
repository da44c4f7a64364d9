"""Writes for tenants: organizations, members, invitations and keys."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from voiceapp.tenants.models import (
    Invitation,
    Membership,
    Organization,
    PublishableKey,
    Role,
    SecretKey,
    User,
)

INVITATION_TTL = timedelta(days=7)
LAST_USED_RESOLUTION = timedelta(seconds=60)


def token_hash(raw: str) -> str:
    """SHA-256 of a high-entropy token. Keys and invitation tokens are random
    enough that a fast hash is safe; the raw value is never stored."""
    return hashlib.sha256(raw.encode()).hexdigest()


def _unique_org_slug(name: str) -> str:
    base = slugify(name)[:50] or "org"
    slug, n = base, 2
    while Organization.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


@transaction.atomic
def user_create(*, email: str, password: str | None) -> User:
    email = User.objects.normalize_email(email).lower()
    if User.objects.filter(email__iexact=email).exists():
        raise ValidationError({"email": "A user with this email address already exists."})
    return User.objects.create_user(email=email, password=password)


@transaction.atomic
def organization_create(
    *,
    name: str,
    owner: User | None = None,
    owner_email: str | None = None,
    owner_password: str | None = None,
) -> Organization:
    """Create an organization, its owner membership and its default persona.

    The owner is either given, or found/created by email.
    """
    from voiceapp.personas.services import persona_create_default

    name = name.strip()
    if not name:
        raise ValidationError({"name": "The organization needs a name."})
    if owner is None:
        if not owner_email:
            raise ValidationError({"owner_email": "An owner is required."})
        owner = User.objects.filter(email__iexact=owner_email).first() or user_create(
            email=owner_email, password=owner_password
        )
    org = Organization.objects.create(name=name, slug=_unique_org_slug(name))
    Membership.objects.create(org=org, user=owner, role=Role.OWNER)
    persona_create_default(org=org)
    return org


def _require_manager(*, org: Organization, actor: User) -> Membership:
    membership = Membership.objects.filter(org=org, user=actor).first()
    if membership is None or not membership.can_manage:
        raise PermissionDenied("Only owners and admins can do this.")
    return membership


@transaction.atomic
def invitation_create(
    *, org: Organization, email: str, role: str, invited_by: User
) -> tuple[Invitation, str]:
    """Invite someone by email. Returns the invitation and the raw token (for the link)."""
    actor = _require_manager(org=org, actor=invited_by)
    email = User.objects.normalize_email(email).lower()
    if role not in Role.values:
        raise ValidationError({"role": "Unknown role."})
    if role == Role.OWNER and actor.role != Role.OWNER:
        raise PermissionDenied("Only owners can invite owners.")
    if Membership.objects.filter(org=org, user__email__iexact=email).exists():
        raise ValidationError({"email": "This person is already a member."})
    now = timezone.now()
    Invitation.objects.filter(org=org, email=email, accepted_at=None, revoked_at=None).update(
        revoked_at=now
    )
    raw = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        org=org,
        email=email,
        role=role,
        token_hash=token_hash(raw),
        invited_by=invited_by,
        expires_at=now + INVITATION_TTL,
    )
    link = settings.SITE_URL + reverse("dashboard:invitation_accept", args=[raw])
    transaction.on_commit(
        lambda: send_mail(
            subject=f"You are invited to {org.name}",
            message=(
                f"{invited_by.email} invited you to join {org.name} as {role}.\n\n"
                f"Accept the invitation: {link}\n\n"
                f"The link is valid for {INVITATION_TTL.days} days."
            ),
            from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=[email],
        )
    )
    return invitation, raw


def invitation_get_pending(*, raw_token: str) -> Invitation:
    invitation = (
        Invitation.objects.select_related("org").filter(token_hash=token_hash(raw_token)).first()
    )
    if invitation is None or not invitation.is_pending:
        raise ValidationError("This invitation is invalid, used or expired.")
    return invitation


@transaction.atomic
def invitation_accept(*, raw_token: str, user: User) -> Membership:
    invitation = invitation_get_pending(raw_token=raw_token)
    if invitation.email.lower() != user.email.lower():
        raise ValidationError(
            f"This invitation was sent to {invitation.email}; log in with that address."
        )
    membership, _ = Membership.objects.get_or_create(
        org=invitation.org, user=user, defaults={"role": invitation.role}
    )
    invitation.accepted_at = timezone.now()
    invitation.save(update_fields=["accepted_at"])
    return membership


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: User) -> None:
    _require_manager(org=invitation.org, actor=actor)
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])


@transaction.atomic
def membership_remove(*, membership: Membership, actor: User) -> None:
    if membership.user_id != actor.pk:
        _require_manager(org=membership.org, actor=actor)
    if (
        membership.role == Role.OWNER
        and not Membership.objects.filter(org=membership.org, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    ):
        raise ValidationError("An organization needs at least one owner.")
    membership.delete()


@transaction.atomic
def secret_key_create(
    *, org: Organization, name: str, created_by: User | None = None
) -> tuple[SecretKey, str]:
    """Create a secret key. The raw key is returned once and never stored."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the key a name, e.g. where it is used."})
    raw = "sk_" + secrets.token_urlsafe(32)
    key = SecretKey.objects.create(
        org=org, name=name, prefix=raw[:10], key_hash=token_hash(raw), created_by=created_by
    )
    return key, raw


@transaction.atomic
def secret_key_revoke(*, key: SecretKey) -> SecretKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def secret_key_authenticate(*, raw: str) -> SecretKey | None:
    """The active key matching ``raw``, its last-used time refreshed; None if none."""
    if not raw.startswith("sk_") or len(raw) > 128:
        return None
    key = (
        SecretKey.objects.select_related("org")
        .filter(key_hash=token_hash(raw), revoked_at=None)
        .first()
    )
    if key is None:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        SecretKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def origin_normalize(value: str) -> str:
    """``https://Example.com:443/`` -> ``https://example.com``; raises on anything
    that is not a bare http(s) origin."""
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(f"“{value}” is not an origin like https://example.com.")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValidationError(f"“{value}” must be an origin only, without a path or query.")
    default_port = 443 if parts.scheme == "https" else 80
    try:
        port = parts.port
    except ValueError as exc:
        raise ValidationError(f"“{value}” has an invalid port.") from exc
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default_port else "")


def origins_normalize(values: list[str]) -> list[str]:
    errors, result = [], []
    for value in values:
        if not value.strip():
            continue
        try:
            origin = origin_normalize(value)
        except ValidationError as exc:
            errors.extend(exc.messages)
            continue
        if origin not in result:
            result.append(origin)
    if errors:
        raise ValidationError(errors)
    return result


@transaction.atomic
def publishable_key_create(
    *, org: Organization, name: str, allowed_origins: list[str]
) -> PublishableKey:
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the key a name, e.g. the site it is for."})
    try:
        origins = origins_normalize(allowed_origins)
    except ValidationError as exc:
        raise ValidationError({"allowed_origins": exc.messages}) from exc
    if not origins:
        raise ValidationError(
            {"allowed_origins": "List at least one origin the widget may be used from."}
        )
    return PublishableKey.objects.create(
        org=org, name=name, key="pk_" + secrets.token_urlsafe(24), allowed_origins=origins
    )


@transaction.atomic
def publishable_key_revoke(*, key: PublishableKey) -> PublishableKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key
