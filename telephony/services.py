"""Writes for trunks and numbers. The dashboard, the admin and the API all come here,
so they give the same messages."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from telephony.models import PhoneNumber, SipTrunk
from telephony.numbers import normalize_number, parse_networks
from voiceapp.personas.models import Persona
from voiceapp.tenants import crypto
from voiceapp.tenants.models import Organization

MAX_TRUNKS_PER_ORG = 20
MAX_NUMBERS_PER_ORG = 200
MAX_ADDRESSES_PER_TRUNK = 50


def clean_addresses(addresses: Any) -> list[str]:
    if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
        raise ValidationError({"allowed_addresses": ["Give a list of addresses or networks."]})
    entries = [a.strip() for a in addresses if a.strip()]
    if len(entries) > MAX_ADDRESSES_PER_TRUNK:
        raise ValidationError(
            {"allowed_addresses": [f"At most {MAX_ADDRESSES_PER_TRUNK} addresses a trunk."]}
        )
    try:
        networks = parse_networks(entries)
    except ValueError as exc:
        raise ValidationError({"allowed_addresses": [str(exc)]}) from exc
    for network in networks:
        if network.prefixlen == 0:
            raise ValidationError(
                {"allowed_addresses": [f"{network} allows every address; use digest auth instead."]}
            )
    return [str(n) if n.num_addresses > 1 else str(n.network_address) for n in networks]


def check_trunk_auth(trunk: SipTrunk) -> None:
    if not trunk.allowed_addresses and not trunk.uses_digest:
        raise ValidationError(
            "A trunk needs allowed addresses, or a username and password, or both."
        )
    if bool(trunk.username) != bool(trunk.password_encrypted):
        raise ValidationError(
            {"password": ["A username needs a password, and a password a username."]}
        )


def trunk_create(
    *,
    org: Organization,
    name: str,
    allowed_addresses: list[str] | None = None,
    username: str = "",
    password: str = "",
) -> SipTrunk:
    with transaction.atomic():
        if SipTrunk.objects.select_for_update().filter(org=org).count() >= MAX_TRUNKS_PER_ORG:
            raise ValidationError(f"An organization has at most {MAX_TRUNKS_PER_ORG} trunks.")
        trunk = SipTrunk(
            org=org,
            name=name.strip(),
            allowed_addresses=clean_addresses(allowed_addresses or []),
            username=username.strip(),
            password_encrypted=crypto.encrypt(password) if password else "",
        )
        return _save(trunk)


def trunk_update(trunk: SipTrunk, **changes: Any) -> SipTrunk:
    if "name" in changes:
        trunk.name = str(changes["name"]).strip()
    if "allowed_addresses" in changes:
        trunk.allowed_addresses = clean_addresses(changes["allowed_addresses"])
    if "username" in changes:
        trunk.username = str(changes["username"]).strip()
        if not trunk.username:
            trunk.password_encrypted = ""
    if changes.get("password"):
        trunk.password_encrypted = crypto.encrypt(str(changes["password"]))
    if "enabled" in changes:
        trunk.enabled = bool(changes["enabled"])
    return _save(trunk)


def _save(trunk: SipTrunk) -> SipTrunk:
    check_trunk_auth(trunk)
    trunk.full_clean(exclude=["org", "password_encrypted"], validate_unique=False)
    if SipTrunk.objects.filter(org=trunk.org, name=trunk.name).exclude(pk=trunk.pk).exists():
        raise ValidationError({"name": ["A trunk of this organization has this name."]})
    if (
        trunk.username
        and SipTrunk.objects.filter(username=trunk.username).exclude(pk=trunk.pk).exists()
    ):
        raise ValidationError({"username": ["This username is taken; choose another."]})
    try:
        with transaction.atomic():
            trunk.save()
    except IntegrityError as exc:
        raise ValidationError("This name or username is taken.") from exc
    return trunk


def trunk_delete(trunk: SipTrunk) -> None:
    trunk.delete()


def phone_number_create(
    *,
    org: Organization,
    number: str,
    persona: Persona,
    trunk: SipTrunk | None = None,
    label: str = "",
) -> PhoneNumber:
    if persona.org_id != org.pk or (trunk is not None and trunk.org_id != org.pk):
        raise ValidationError("The persona and the trunk must be the organization's own.")
    try:
        normalized = normalize_number(number)
    except ValueError as exc:
        raise ValidationError({"number": [str(exc)]}) from exc
    with transaction.atomic():
        if PhoneNumber.objects.select_for_update().filter(org=org).count() >= MAX_NUMBERS_PER_ORG:
            raise ValidationError(f"An organization has at most {MAX_NUMBERS_PER_ORG} numbers.")
        if PhoneNumber.objects.filter(number=normalized).exists():
            raise ValidationError({"number": ["This number is already in use."]})
        phone = PhoneNumber(org=org, number=normalized, persona=persona, trunk=trunk, label=label)
        phone.full_clean(exclude=["org", "persona", "trunk"], validate_unique=False)
        try:
            with transaction.atomic():
                phone.save()
        except IntegrityError as exc:
            raise ValidationError({"number": ["This number is already in use."]}) from exc
    return phone


def phone_number_update(
    phone: PhoneNumber,
    *,
    persona: Persona | None = None,
    trunk: Any = ...,
    label: str | None = None,
) -> PhoneNumber:
    if persona is not None:
        if persona.org_id != phone.org_id:
            raise ValidationError("The persona must be the organization's own.")
        phone.persona = persona
    if trunk is not ...:
        if trunk is not None and trunk.org_id != phone.org_id:
            raise ValidationError("The trunk must be the organization's own.")
        phone.trunk = trunk
    if label is not None:
        phone.label = label
    phone.full_clean(exclude=["org", "persona", "trunk"], validate_unique=False)
    phone.save()
    return phone


def phone_number_delete(phone: PhoneNumber) -> None:
    phone.delete()


def trunk_password_of(trunk: Any) -> str:
    """The password of a trunk as the SIP server holds it (`TrunkCredentials`)."""
    return crypto.decrypt(trunk.password_encrypted) if trunk.password_encrypted else ""
