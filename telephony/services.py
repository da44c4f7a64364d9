"""Writes for trunks and numbers. The dashboard, the admin and the API all come here,
so they give the same messages."""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime, time, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from telephony.models import OutboundCall, PhoneNumber, SipTrunk
from telephony.numbers import normalize_number, parse_networks
from voiceapp.personas.models import Persona
from voiceapp.tenants import crypto
from voiceapp.tenants.models import Organization

MAX_TRUNKS_PER_ORG = 20
MAX_NUMBERS_PER_ORG = 200
MAX_ADDRESSES_PER_TRUNK = 50
OUTBOUND_FIELDS = (
    "outbound_address",
    "caller_id",
    "quiet_hours_start",
    "quiet_hours_end",
    "time_zone",
)
_HOST = re.compile(r"^[A-Za-z0-9.-]{1,190}$|^\[[0-9A-Fa-f:]+\]$")


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
    **outbound: Any,
) -> SipTrunk:
    unknown = set(outbound) - set(OUTBOUND_FIELDS)
    if unknown:
        raise TypeError(f"unknown trunk fields: {sorted(unknown)}")
    with transaction.atomic():
        if SipTrunk.objects.select_for_update().filter(org=org).count() >= MAX_TRUNKS_PER_ORG:
            raise ValidationError(f"An organization has at most {MAX_TRUNKS_PER_ORG} trunks.")
        trunk = SipTrunk(
            org=org,
            name=name.strip(),
            allowed_addresses=clean_addresses(allowed_addresses or []),
            username=username.strip(),
            password_encrypted=crypto.encrypt(password) if password else "",
            **{k: v for k, v in outbound.items() if v is not None or "quiet" in k},
        )
        if not trunk.time_zone:
            trunk.time_zone = "UTC"
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
    for name in ("outbound_address", "caller_id", "time_zone"):
        if name in changes:
            setattr(trunk, name, str(changes[name] or ""))
    for name in ("quiet_hours_start", "quiet_hours_end"):
        if name in changes:
            setattr(trunk, name, changes[name])
    return _save(trunk)


def _clean_outbound(trunk: SipTrunk) -> None:
    trunk.outbound_address = trunk.outbound_address.strip()
    if trunk.outbound_address:
        try:
            outbound_target(trunk.outbound_address)
        except ValueError as exc:
            raise ValidationError({"outbound_address": [str(exc)]}) from exc
    if trunk.caller_id:
        try:
            trunk.caller_id = normalize_number(trunk.caller_id)
        except ValueError as exc:
            raise ValidationError({"caller_id": [str(exc)]}) from exc
    if (trunk.quiet_hours_start is None) != (trunk.quiet_hours_end is None):
        raise ValidationError(
            {"quiet_hours_end": ["Give both ends of the quiet hours, or neither."]}
        )
    try:
        zoneinfo.ZoneInfo(trunk.time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationError({"time_zone": [f"{trunk.time_zone!r} is not a time zone."]}) from exc


def outbound_target(address: str) -> tuple[str, int]:
    """ "sip.carrier.example:5060" -> ("sip.carrier.example", 5060); the port defaults to 5060."""
    host, _, port = address.removeprefix("sip:").partition(":")
    if not host or not _HOST.match(host):
        raise ValueError("Give the trunk's SIP address as host or host:port.")
    number = int(port) if port.isdigit() else (5060 if not port else -1)
    if not 1 <= number <= 65535:
        raise ValueError("Give the trunk's SIP address as host or host:port.")
    return host, number


def _save(trunk: SipTrunk) -> SipTrunk:
    check_trunk_auth(trunk)
    _clean_outbound(trunk)
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


# ----- outbound calls ------------------------------------------------------------


class OutboundRefused(Exception):
    """An outbound call that may not be placed now: `code` says why."""

    def __init__(self, code: str, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def in_quiet_hours(trunk: SipTrunk, now: datetime) -> bool:
    start, end = trunk.quiet_hours_start, trunk.quiet_hours_end
    if start is None or end is None:
        return False
    local: time = now.astimezone(zoneinfo.ZoneInfo(trunk.time_zone)).time()
    return start <= local < end if start <= end else (local >= start or local < end)


def outbound_call_create(
    *,
    org: Organization,
    persona: Persona,
    to: str,
    variables: dict[str, Any] | None = None,
    trunk: SipTrunk | None = None,
    now: datetime | None = None,
) -> OutboundCall:
    """Queue a call to `to` by `persona` through the org's trunk; the SIP server dials
    it. Raises ValidationError for bad input, OutboundRefused for a call that may not
    go now (quiet hours, the org's rate)."""
    from django.conf import settings
    from django.utils import timezone

    now = now or timezone.now()
    if persona.org_id != org.pk or (trunk is not None and trunk.org_id != org.pk):
        raise ValidationError("The persona and the trunk must be the organization's own.")
    try:
        number = normalize_number(to)
    except ValueError as exc:
        raise ValidationError({"to": [str(exc)]}) from exc
    if not number.startswith("+"):
        raise ValidationError({"to": ["Give the number in international form, e.g. +15550104477."]})
    if variables is not None and (not isinstance(variables, dict) or len(str(variables)) > 4000):
        raise ValidationError({"variables": ["Give an object of at most 4,000 characters."]})
    if trunk is None:
        trunk = (
            SipTrunk.objects.filter(org=org, enabled=True)
            .exclude(outbound_address="")
            .order_by("pk")
            .first()
        )
        if trunk is None:
            raise ValidationError(
                {"trunk": ["Add a trunk with an outbound address first (Phone page)."]}
            )
    elif not trunk.outbound_address:
        raise ValidationError({"trunk": ["This trunk has no outbound address."]})
    if in_quiet_hours(trunk, now):
        raise OutboundRefused(
            "quiet_hours",
            f"No outbound calls through {trunk.name} between {trunk.quiet_hours_start:%H:%M} "
            f"and {trunk.quiet_hours_end:%H:%M} ({trunk.time_zone}).",
        )
    with transaction.atomic():
        # the org row lock makes the rate check and the insert one step
        Organization.objects.select_for_update().filter(pk=org.pk).first()
        recent = OutboundCall.objects.filter(
            org=org, created_at__gte=now - timedelta(minutes=1)
        ).count()
        if recent >= settings.OUTBOUND_CALLS_PER_MINUTE:
            raise OutboundRefused(
                "rate_limited",
                f"At most {settings.OUTBOUND_CALLS_PER_MINUTE} outbound calls a minute; "
                "try again shortly.",
                status=429,
            )
        return OutboundCall.objects.create(
            org=org,
            persona=persona,
            trunk=trunk,
            to=number,
            variables=variables or {},
            created_at=now,
            updated_at=now,
        )


def outbound_call_progress(
    *, outbound_id: int, status: str, detail: str = "", call_id: str | None = None
) -> OutboundCall:
    """Record an outbound call's progress and send `call.progress` (after the commit)."""
    from django.utils import timezone

    from webhooks.services import emit_event

    with transaction.atomic():
        outbound = (
            OutboundCall.objects.select_for_update()
            .select_related("persona", "org")
            .get(pk=outbound_id)
        )
        outbound.status = status
        outbound.detail = detail[:200]
        if call_id is not None:
            outbound.call_id = call_id
        outbound.updated_at = timezone.now()
        outbound.save(update_fields=["status", "detail", "call", "updated_at"])
        emit_event(
            outbound.org,
            "call.progress",
            {
                "outbound_call_id": outbound.pk,
                "to": outbound.to,
                "persona": outbound.persona.slug,
                "status": status,
                "detail": outbound.detail,
                "call_id": str(outbound.call_id) if outbound.call_id else None,
                "at": outbound.updated_at.isoformat(),
            },
        )
    return outbound


def outbound_calls_claim(limit: int = 5) -> list[OutboundCall]:
    """Queued outbound calls for this SIP server to dial, marked dialing (two servers
    never take the same one)."""
    from django.utils import timezone

    with transaction.atomic():
        rows = list(
            OutboundCall.objects.select_for_update(skip_locked=True)
            .filter(status=OutboundCall.Status.QUEUED)
            .select_related("persona", "trunk", "org")
            .order_by("created_at")[:limit]
        )
        now = timezone.now()
        for row in rows:
            row.status = OutboundCall.Status.DIALING
            row.updated_at = now
            row.save(update_fields=["status", "updated_at"])
    return rows
