"""Writes for tenants: organizations, members, invitations and keys."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from voiceapp.engine.llm import HttpLLM, HttpLLMSettings, LLMError, LLMOptions
from voiceapp.tenants import crypto
from voiceapp.tenants.models import (
    Invitation,
    LLMEndpoint,
    Membership,
    Organization,
    PublishableKey,
    Role,
    SecretKey,
    User,
)
from voiceapp.tenants.origins import origins_normalize

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
    """Create an organization and its owner membership; the owner is either
    given, or found/created by email. New organizations come through
    ``tenants.onboarding.organization_onboard``, which adds what they start with."""
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


def _other_owners_exist(membership: Membership) -> bool:
    # Locks the org's owner rows: two owners leaving at once cannot both pass.
    owners = Membership.objects.select_for_update().filter(org=membership.org, role=Role.OWNER)
    return any(m.pk != membership.pk for m in owners)


@transaction.atomic
def membership_remove(*, membership: Membership, actor: User) -> None:
    """Remove a member, or leave (actor is the member). Owners and admins remove
    others; only owners remove owners; the last owner cannot leave."""
    leaving = membership.user_id == actor.pk
    if not leaving:
        manager = _require_manager(org=membership.org, actor=actor)
        if membership.role == Role.OWNER and manager.role != Role.OWNER:
            raise PermissionDenied("Only an owner can remove an owner.")
    if membership.role == Role.OWNER and not _other_owners_exist(membership):
        need_owner = "An organization needs at least one owner"
        raise ValidationError(
            f"{need_owner}: make someone else an owner before you leave."
            if leaving
            else f"{need_owner}."
        )
    membership.delete()


@transaction.atomic
def membership_role_change(*, membership: Membership, role: str, actor: User) -> Membership:
    """Change a member's role. Owners and admins change roles; only owners make
    or unmake owners (an admin cannot promote itself or demote an owner); the
    last owner keeps the role."""
    if role not in Role.values:
        raise ValidationError({"role": "Unknown role."})
    manager = _require_manager(org=membership.org, actor=actor)
    if Role.OWNER in (membership.role, role) and manager.role != Role.OWNER:
        raise PermissionDenied(
            "Only an owner can demote an owner."
            if membership.role == Role.OWNER
            else "Only an owner can make someone an owner."
        )
    if membership.role == role:
        return membership
    if membership.role == Role.OWNER and not _other_owners_exist(membership):
        raise ValidationError(
            "An organization needs at least one owner: make someone else an owner first."
        )
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


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


# --- LLM endpoints (bring your own LLM) -----------------------------------------

LLM_ENDPOINT_FIELDS = ("name", "base_url", "model", "api_key", "timeout_s", "is_default")
LLM_ENDPOINT_CHECK_TIMEOUT_S = 15.0  # "Test connection" waits at most this long per read
LLM_ENDPOINT_CHECK_PROMPT = "Say hello in three words."
API_KEY_MAX_CHARS = 4096


def llm_api_key_clean(api_key: str) -> str:
    """The key as it will be sent in the Authorization header; raises on what cannot be."""
    api_key = api_key.strip()
    if len(api_key) > API_KEY_MAX_CHARS:
        raise ValidationError(
            {"api_key": f"An API key has at most {API_KEY_MAX_CHARS} characters."}
        )
    if any(ch.isspace() or not ch.isprintable() for ch in api_key):
        raise ValidationError({"api_key": "An API key cannot contain spaces or line breaks."})
    return api_key


def _llm_endpoint_save(endpoint: LLMEndpoint, *, api_key: str | None) -> LLMEndpoint:
    endpoint.name = endpoint.name.strip()
    endpoint.base_url = endpoint.base_url.strip()
    endpoint.model = endpoint.model.strip()
    if api_key is not None:
        api_key = llm_api_key_clean(api_key)
        endpoint.api_key_encrypted = crypto.encrypt(api_key) if api_key else ""
        # Short keys get no hint: four characters would give away too much of them.
        endpoint.api_key_hint = api_key[-4:] if len(api_key) >= 12 else ""
    endpoint.full_clean(validate_constraints=False)
    others = LLMEndpoint.objects.filter(org=endpoint.org).exclude(pk=endpoint.pk)
    if others.filter(name=endpoint.name).exists():
        raise ValidationError({"name": "Another endpoint of this organization has this name."})
    if endpoint.is_default:
        others.filter(is_default=True).update(is_default=False)
    endpoint.save()
    return endpoint


@transaction.atomic
def llm_endpoint_create(
    *,
    org: Organization,
    name: str,
    base_url: str,
    model: str,
    api_key: str = "",
    timeout_s: float = 10.0,
    is_default: bool = False,
) -> LLMEndpoint:
    endpoint = LLMEndpoint(
        org=org,
        name=name,
        base_url=base_url,
        model=model,
        timeout_s=timeout_s,
        is_default=is_default,
    )
    return _llm_endpoint_save(endpoint, api_key=api_key)


@transaction.atomic
def llm_endpoint_update(*, endpoint: LLMEndpoint, **fields: Any) -> LLMEndpoint:
    """Change the given fields. `api_key`: None (or absent) keeps the key, "" removes it."""
    unknown = set(fields) - set(LLM_ENDPOINT_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown endpoint fields: {', '.join(sorted(unknown))}.")
    api_key = fields.pop("api_key", None)
    for name, value in fields.items():
        setattr(endpoint, name, value)
    return _llm_endpoint_save(endpoint, api_key=api_key)


@transaction.atomic
def llm_endpoint_delete(*, endpoint: LLMEndpoint) -> None:
    """Personas that used it fall back to the organization's default."""
    endpoint.delete()


def llm_endpoint_http_settings(
    *, endpoint: LLMEndpoint, timeout_s: float | None = None
) -> HttpLLMSettings:
    """The engine's settings for `endpoint`, its key decrypted (raises DecryptionError)."""
    api_key = crypto.decrypt(endpoint.api_key_encrypted) if endpoint.api_key_encrypted else ""
    return HttpLLMSettings(
        base_url=endpoint.base_url,
        api_key=api_key,
        model=endpoint.model,
        timeout_s=float(timeout_s if timeout_s is not None else endpoint.timeout_s),
    )


@dataclass(frozen=True, slots=True)
class EndpointCheck:
    """What "Test connection" found: the time to the first token, or why it failed."""

    ok: bool
    first_token_ms: float | None = None
    total_ms: float | None = None
    reply: str = ""
    code: str = ""
    error: str = ""


def llm_endpoint_check(*, endpoint: LLMEndpoint) -> EndpointCheck:
    """Stream a tiny completion from `endpoint` and time its first token."""
    try:
        http = llm_endpoint_http_settings(
            endpoint=endpoint, timeout_s=min(endpoint.timeout_s, LLM_ENDPOINT_CHECK_TIMEOUT_S)
        )
    except crypto.DecryptionError as exc:
        return EndpointCheck(ok=False, code="llm_endpoint_key_unreadable", error=str(exc))
    messages = [{"role": "user", "content": LLM_ENDPOINT_CHECK_PROMPT}]
    options = LLMOptions(max_tokens=8, temperature=0.0)
    started = time.monotonic()
    first_token_ms: float | None = None
    deltas: list[str] = []
    try:
        for delta in HttpLLM(http).stream(messages, options, threading.Event()):
            if first_token_ms is None:
                first_token_ms = 1000.0 * (time.monotonic() - started)
            if isinstance(delta, str):  # no tools are offered: only text comes
                deltas.append(delta)
    except LLMError as exc:
        return EndpointCheck(ok=False, code=exc.code, error=str(exc))
    total_ms = 1000.0 * (time.monotonic() - started)
    if first_token_ms is None:
        return EndpointCheck(
            ok=False,
            total_ms=total_ms,
            code="llm_endpoint_empty",
            error="The endpoint answered but streamed no text. Is it an OpenAI-compatible "
            "/chat/completions with stream=true, and is the model name right?",
        )
    return EndpointCheck(
        ok=True, first_token_ms=first_token_ms, total_ms=total_ms, reply="".join(deltas)
    )


def site_update_from_settings(*, using: str = "default") -> None:
    """Make the sites framework's Site (SITE_ID) carry SITE_NAME and SITE_URL's host:
    allauth signs its emails with them ("[Voice Agents] Please confirm ...")."""
    from django.contrib.sites.models import Site
    from django.db import router

    if not router.allow_migrate_model(using, Site):
        return
    domain = urlsplit(settings.SITE_URL).netloc or "localhost"
    Site.objects.using(using).update_or_create(
        pk=settings.SITE_ID, defaults={"domain": domain, "name": settings.SITE_NAME}
    )
    Site.objects.clear_cache()
