"""Web origins (``scheme://host[:port]``) as publishable keys and personas store them.

Pure functions: no models, no database, so models of any app may use them in
their validation without importing another app's services."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError


def origin_normalize(value: str) -> str:
    """``https://Example.com:443/`` -> ``https://example.com``; raises
    ``ValidationError`` on anything that is not a bare http(s) origin."""
    value = value.strip()
    if any(char.isspace() for char in value):  # "not a url", or two origins on one line
        raise ValidationError(f"“{value}” is not an origin like https://example.com.")
    try:
        parts = urlsplit(value)
    except ValueError as exc:  # "http://[": not even a URL
        raise ValidationError(f"“{value}” is not an origin like https://example.com.") from exc
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


def origins_normalize(values: Iterable[str]) -> list[str]:
    """Each origin normalized, blanks skipped, duplicates dropped (first kept);
    one ``ValidationError`` listing every bad value."""
    errors: list[str] = []
    result: list[str] = []
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
