from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission

from voiceapp.api.authentication import KeyPrincipal

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


class HasOrganization(BasePermission):
    message = "Authenticate with a secret key: “Authorization: Bearer sk_...”."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.user, KeyPrincipal)
