"""Reads for tenants. Everything tenant-owned is looked up through the org."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from voiceapp.tenants.models import (
    Invitation,
    LLMEndpoint,
    Membership,
    Organization,
    PublishableKey,
    SecretKey,
    User,
)


def membership_list_for_user(*, user: User) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("org").order_by("org__name")


def membership_get(*, user: User, org: Organization) -> Membership | None:
    return Membership.objects.filter(user=user, org=org).first()


def membership_list(*, org: Organization) -> QuerySet[Membership]:
    return Membership.objects.filter(org=org).select_related("user").order_by("created_at")


def membership_get_in_org(*, org: Organization, pk: int) -> Membership:
    return get_object_or_404(Membership.objects.select_related("user", "org"), org=org, pk=pk)


def invitation_list_pending(*, org: Organization) -> list[Invitation]:
    return [i for i in Invitation.objects.filter(org=org) if i.is_pending]


def invitation_get(*, org: Organization, pk: int) -> Invitation:
    return get_object_or_404(Invitation, org=org, pk=pk)


def secret_key_list(*, org: Organization) -> QuerySet[SecretKey]:
    return SecretKey.objects.filter(org=org).select_related("created_by")


def secret_key_get(*, org: Organization, pk: int) -> SecretKey:
    return get_object_or_404(SecretKey, org=org, pk=pk)


def publishable_key_list(
    *, org: Organization, active_only: bool = False
) -> QuerySet[PublishableKey]:
    keys = PublishableKey.objects.filter(org=org)
    return keys.filter(revoked_at=None) if active_only else keys


def publishable_key_get(*, org: Organization, pk: int) -> PublishableKey:
    return get_object_or_404(PublishableKey, org=org, pk=pk)


def llm_endpoint_list(*, org: Organization) -> QuerySet[LLMEndpoint]:
    return LLMEndpoint.objects.filter(org=org)


def llm_endpoint_get(*, org: Organization, pk: int) -> LLMEndpoint:
    return get_object_or_404(llm_endpoint_list(org=org), pk=pk)


def llm_endpoint_default(*, org: Organization) -> LLMEndpoint | None:
    return llm_endpoint_list(org=org).filter(is_default=True).first()
