"""Who may start a call: secret keys, client secrets and publishable keys.

Every refusal is an `AuthError` with an OpenAI-style code, a message a
developer can act on, and the HTTP status a plain HTTP endpoint answers with.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessions.models import ClientSecret
from voiceapp.personas.models import Persona
from voiceapp.tenants.models import Organization, PublishableKey, SecretKey, User
from voiceapp.tenants.origins import origin_normalize
from voiceapp.tenants.services import secret_key_authenticate, token_hash


class AuthError(Exception):
    def __init__(
        self, code: str, message: str, status: int = 401, *, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after  # seconds, for a Retry-After header

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.retry_after else {}

    def as_error(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"type": kind, "code": self.code, "message": self.message}


@dataclass(frozen=True)
class CallGrant:
    """Permission for one call: which org, which persona, the session settings
    a client secret was created with, and who stands behind it (the secret or
    publishable key, or the member on the dashboard, that minted it)."""

    org_id: int
    persona_id: int
    persona_slug: str
    session_config: dict[str, Any]
    origin: str = ""
    secret_key_id: int | None = None
    publishable_key_id: int | None = None
    user_id: int | None = None
    trunk_id: int | None = None  # a phone call: the SIP trunk that delivered it
    caller_number: str = ""  # a phone call: who called (the From user)
    # said instead of the persona's greeting (outbound: a voicemail message; "" to a menu)
    greeting: str | None = None

    @property
    def principal(self) -> str:
        """Who may resume this call: the same key, or the same member. Empty when unknown."""
        if self.secret_key_id is not None:
            return f"sk:{self.secret_key_id}"
        if self.publishable_key_id is not None:
            return f"pk:{self.publishable_key_id}"
        if self.user_id is not None:
            return f"user:{self.user_id}"
        if self.trunk_id is not None:
            return f"trunk:{self.trunk_id}"
        return ""


def _persona_for(org: Organization, model: str | None) -> Persona:
    if not model:
        raise AuthError("missing_model", "Name the persona: ?model=<persona slug>.", 400)
    persona = None
    if "\x00" not in model:  # no slug holds one, and Postgres refuses it in a query
        persona = Persona.objects.filter(org=org, slug=model).select_related("voice").first()
    if persona is None:
        # Another org's persona and a missing one look the same from outside.
        raise AuthError("model_not_found", f"No persona “{model}” in this organization.", 404)
    if not persona.is_active:
        raise AuthError("model_not_active", f"The persona “{model}” is switched off.", 403)
    return persona


def grant_from_secret_key_sync(raw: str, *, model: str | None) -> CallGrant:
    key = secret_key_authenticate(raw=raw)
    if key is None:
        raise AuthError("invalid_api_key", "The API key is invalid or revoked.")
    persona = _persona_for(key.org, model)
    return CallGrant(
        org_id=key.org_id,
        persona_id=persona.pk,
        persona_slug=persona.slug,
        session_config={},
        secret_key_id=key.pk,
    )


grant_from_secret_key = sync_to_async(grant_from_secret_key_sync)


def client_secret_ttl(requested: object) -> int:
    """Seconds a new client secret lives: the request's choice within bounds."""
    default = settings.CLIENT_SECRET_TTL_S
    if requested is None:
        return default
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise AuthError("invalid_value", "expires_after.seconds must be an integer.", 400)
    if not 10 <= requested <= settings.CLIENT_SECRET_MAX_TTL_S:
        raise AuthError(
            "invalid_value",
            f"expires_after.seconds must be between 10 and {settings.CLIENT_SECRET_MAX_TTL_S}.",
            400,
        )
    return requested


@transaction.atomic
def client_secret_create(
    *,
    org: Organization,
    persona: Persona,
    ttl_s: int,
    origin: str = "",
    session_config: dict[str, Any] | None = None,
    secret_key: SecretKey | None = None,
    publishable_key: PublishableKey | None = None,
    created_by: User | None = None,
) -> tuple[ClientSecret, str]:
    """A new client secret, minted by one of `secret_key`, `publishable_key` or
    `created_by` (a member on the dashboard). It dies with its key, and only the
    same minter may resume a call it opened."""
    if sum(x is not None for x in (secret_key, publishable_key, created_by)) > 1:
        raise ValueError("a client secret is minted by one key or one member")
    raw = "ek_" + secrets.token_urlsafe(32)
    secret = ClientSecret.objects.create(
        org=org,
        persona=persona,
        value_hash=token_hash(raw),
        expires_at=timezone.now() + timedelta(seconds=ttl_s),
        origin=origin,
        session_config=session_config or {},
        secret_key=secret_key,
        publishable_key=publishable_key,
        created_by=created_by,
    )
    return secret, raw


def grant_from_client_secret_sync(raw: str, *, model: str | None) -> CallGrant:
    """Spend a client secret (single use) and return the grant it carries."""
    if not raw.startswith("ek_") or len(raw) > 128:
        raise AuthError("invalid_client_secret", "The client secret is malformed.")
    with transaction.atomic():
        secret = (
            ClientSecret.objects.select_for_update(of=("self",))
            .select_related("persona", "secret_key", "publishable_key")
            .filter(value_hash=token_hash(raw))
            .first()
        )
        if secret is None:
            raise AuthError("invalid_client_secret", "The client secret is not valid.")
        if secret.used_at is not None:
            raise AuthError("client_secret_used", "The client secret was already used.")
        if secret.expires_at <= timezone.now():
            raise AuthError("client_secret_expired", "The client secret has expired.")
        if _minting_key_revoked(secret):
            raise AuthError(
                "client_secret_revoked", "The key that created this client secret was revoked."
            )
        if model and model != secret.persona.slug:
            raise AuthError(
                "model_mismatch", "The client secret was issued for another persona.", 403
            )
        if not secret.persona.is_active:
            raise AuthError("model_not_active", "The persona is switched off.", 403)
        secret.used_at = timezone.now()
        secret.save(update_fields=["used_at"])
    return CallGrant(
        org_id=secret.org_id,
        persona_id=secret.persona_id,
        persona_slug=secret.persona.slug,
        session_config=secret.session_config,
        origin=secret.origin,
        secret_key_id=secret.secret_key_id,
        publishable_key_id=secret.publishable_key_id,
        user_id=secret.created_by_id,
    )


grant_from_client_secret = sync_to_async(grant_from_client_secret_sync)


def _minting_key_revoked(secret: ClientSecret) -> bool:
    if secret.secret_key is not None and secret.secret_key.revoked_at is not None:
        return True
    return secret.publishable_key is not None and secret.publishable_key.revoked_at is not None


def grant_revocation_sync(grant: CallGrant) -> AuthError | None:
    """Why a running call may no longer go on: its key was revoked (or deleted)
    since the call started. None while it may."""
    if (
        grant.secret_key_id is not None
        and not SecretKey.objects.filter(pk=grant.secret_key_id, revoked_at=None).exists()
    ):
        return AuthError("api_key_revoked", "The API key of this call was revoked.")
    if (
        grant.publishable_key_id is not None
        and not PublishableKey.objects.filter(pk=grant.publishable_key_id, revoked_at=None).exists()
    ):
        return AuthError("publishable_key_revoked", "The publishable key of this call was revoked.")
    return None


def persona_for_secret_key_sync(raw: str, *, model: str | None) -> tuple[SecretKey, Persona]:
    key = secret_key_authenticate(raw=raw)
    if key is None:
        raise AuthError("invalid_api_key", "The API key is invalid or revoked.")
    return key, _persona_for(key.org, model)


def widget_grant_sync(
    *, key: str, persona_slug: str, origin: str
) -> tuple[PublishableKey, Persona, str]:
    """Check a publishable key and the page's Origin for the widget; the key, the
    persona and the normalized origin when allowed."""
    if not origin:
        raise AuthError("origin_required", "The widget must be used from a web page (Origin).", 403)
    try:
        normalized = origin_normalize(origin)
    except Exception as exc:
        raise AuthError("origin_not_allowed", "The Origin header is not valid.", 403) from exc
    pk = PublishableKey.objects.select_related("org").filter(key=key, revoked_at=None).first()
    if pk is None or not key.startswith("pk_"):
        raise AuthError("invalid_publishable_key", "The publishable key is invalid or revoked.")
    persona = _persona_for(pk.org, persona_slug)
    allowed = set(pk.allowed_origins) | set(persona.allowed_origins)
    if normalized not in allowed:
        raise AuthError(
            "origin_not_allowed",
            f"{normalized} may not use this key; add it to the key's allowed origins.",
            403,
        )
    return pk, persona, normalized
