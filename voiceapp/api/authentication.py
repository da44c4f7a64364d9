from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from voiceapp.tenants.models import Organization, SecretKey
from voiceapp.tenants.services import secret_key_authenticate


@dataclass(frozen=True)
class KeyPrincipal:
    """Who is calling: an organization, through one of its secret keys."""

    org: Organization
    key: SecretKey
    is_authenticated: bool = True


class SecretKeyAuthentication(BaseAuthentication):
    """``Authorization: Bearer sk_...``."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[KeyPrincipal, SecretKey] | None:
        header = get_authorization_header(request).decode("latin-1").split()
        if not header:
            return None
        if header[0].lower() != self.keyword.lower() or len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Use the header “Authorization: Bearer sk_...”.", code="invalid_authorization"
            )
        key = secret_key_authenticate(raw=header[1])
        if key is None:
            raise exceptions.AuthenticationFailed(
                "The API key is invalid or revoked.", code="invalid_api_key"
            )
        return KeyPrincipal(org=key.org, key=key), key

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class SecretKeyScheme(OpenApiAuthenticationExtension):
    target_class = "voiceapp.api.authentication.SecretKeyAuthentication"
    name = "secretKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "sk_..."}
