"""Phone numbers and SIP users as the SIP server and the forms see them: plain
functions, no models."""

from __future__ import annotations

import ipaddress
import re

_PUNCTUATION = re.compile(r"[\s().\-/]")
_PHONE = re.compile(r"^\+?[0-9]{3,20}$")
_SIP_USER = re.compile(r"^[a-z0-9][a-z0-9._+-]{0,39}$")


def normalize_number(raw: str) -> str:
    """ "+1 (555) 010-4477" -> "+15550104477"; a SIP user is lower-cased ("Sales" ->
    "sales"). Raises ValueError for anything else."""
    text = raw.strip()
    compact = _PUNCTUATION.sub("", text)
    if _PHONE.match(compact):
        return compact
    lowered = text.lower()
    if _SIP_USER.match(lowered) and not lowered.lstrip("+").isdigit():
        return lowered
    raise ValueError(
        "Enter a phone number in international form (+15550104477) or a SIP user name "
        "(letters, digits, dots, dashes; up to 40)."
    )


def number_candidates(user: str) -> list[str]:
    """The stored forms a request URI's user part may match: itself, and a phone
    number with and without its leading "+" (carriers send either)."""
    try:
        number = normalize_number(user)
    except ValueError:
        return []
    if _PHONE.match(number):
        bare = number.lstrip("+")
        return [number, f"+{bare}", bare] if number.startswith("+") else [number, f"+{bare}"]
    return [number]


def parse_networks(entries: list[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Addresses or CIDR networks; raises ValueError naming the first bad one."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not an IP address or network.") from exc
    return networks


def address_allowed(address: str, entries: list[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    try:
        networks = parse_networks(entries)
    except ValueError:
        return False
    return any(ip in network for network in networks)
