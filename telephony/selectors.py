"""Reads of trunks and numbers: the org-scoped ones the dashboard and the API use,
and `number_route`, the SIP server's lookup of a dialled number."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from telephony.models import OutboundCall, PhoneNumber, SipTrunk
from telephony.numbers import number_candidates
from voiceapp.tenants.models import Organization


def trunk_list(*, org: Organization) -> QuerySet[SipTrunk]:
    return SipTrunk.objects.filter(org=org)


def trunk_get(*, org: Organization, pk: int) -> SipTrunk:
    return get_object_or_404(trunk_list(org=org), pk=pk)


def phone_number_list(*, org: Organization) -> QuerySet[PhoneNumber]:
    return PhoneNumber.objects.filter(org=org).select_related("persona", "trunk")


def phone_number_get(*, org: Organization, pk: int) -> PhoneNumber:
    return get_object_or_404(phone_number_list(org=org), pk=pk)


def outbound_call_list(*, org: Organization) -> QuerySet[OutboundCall]:
    return OutboundCall.objects.filter(org=org).select_related("persona")


@dataclass(frozen=True)
class TrunkCredentials:
    id: int
    name: str
    allowed_addresses: list[str]
    username: str
    password_encrypted: str


@dataclass(frozen=True)
class NumberRoute:
    """Where a dialled number goes, and which trunks may deliver it."""

    number: str
    org_id: int
    persona_id: int
    persona_slug: str
    trunks: list[TrunkCredentials]
    transfer_to: str = ""  # the persona's phone transfer target


def number_route(user: str) -> NumberRoute | None:
    """The route for a request URI's user part, or None when no number matches
    (or its organization has no enabled trunk that may deliver it)."""
    candidates = number_candidates(user)
    if not candidates:
        return None
    phone = (
        PhoneNumber.objects.filter(number__in=candidates, persona__isnull=False)
        .select_related("persona", "trunk")
        .first()
    )
    if phone is None:
        return None
    trunks = (
        [phone.trunk]
        if phone.trunk is not None
        else list(SipTrunk.objects.filter(org_id=phone.org_id))
    )
    return NumberRoute(
        number=phone.number,
        org_id=phone.org_id,
        persona_id=phone.persona_id,
        persona_slug=phone.persona.slug,
        trunks=[
            TrunkCredentials(
                t.pk, t.name, list(t.allowed_addresses), t.username, t.password_encrypted
            )
            for t in trunks
            if t.enabled
        ],
        transfer_to=phone.persona.transfer_to,
    )
