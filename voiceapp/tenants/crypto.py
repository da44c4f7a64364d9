"""Encryption of secrets kept in the database (LLM endpoint API keys).

Fernet (AES-128-CBC with an HMAC-SHA256, from `cryptography`) with a key
derived from `FIELD_ENCRYPTION_KEY` (by default `SECRET_KEY`). Keys listed in
`FIELD_ENCRYPTION_OLD_KEYS` still decrypt, so the key can be rotated: set the
new one, move the old one there, and values are re-encrypted when next saved.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

_CONTEXT = b"voiceapp field encryption v1\x00"


class DecryptionError(ValueError):
    """A stored secret cannot be read with the configured keys."""


def _fernet_key(secret: str) -> bytes:
    return base64.urlsafe_b64encode(hashlib.sha256(_CONTEXT + secret.encode()).digest())


def _fernet() -> MultiFernet:
    current = settings.FIELD_ENCRYPTION_KEY or settings.SECRET_KEY
    secrets = [current, *settings.FIELD_ENCRYPTION_OLD_KEYS]
    return MultiFernet([Fernet(_fernet_key(s)) for s in secrets if s])


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError) as exc:
        raise DecryptionError(
            "The stored secret cannot be decrypted with FIELD_ENCRYPTION_KEY "
            "(was the key or SECRET_KEY changed?). Enter it again."
        ) from exc
