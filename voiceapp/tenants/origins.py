"""Allowed origins as people type them, checked so that no text escapes as a 500."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from voiceapp.tenants.services import origins_normalize


def origins_clean(values: list[str]) -> list[str]:
    """`origins_normalize`, except that text `urlsplit` cannot read at all (``http://[``,
    ``https://[nope]``) is one more “not an origin” message instead of a ValueError."""
    messages: list[str] = []
    readable: list[str] = []
    for value in values:
        try:
            urlsplit(value.strip())
        except ValueError:
            messages.append(f"“{value.strip()}” is not an origin like https://example.com.")
        else:
            readable.append(value)
    try:
        origins = origins_normalize(readable)
    except ValidationError as exc:
        messages.extend(exc.messages)
    if messages:
        raise ValidationError(messages)
    return origins
