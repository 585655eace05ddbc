"""Encryption of vault entries and keyed lookup digests.

Keys come from ``settings.VAULT_KEYS``: a list of url-safe base64 Fernet keys (the environment
variable ``VAULT_KEYS``, comma-separated). The first key encrypts; every key decrypts
(:class:`~cryptography.fernet.MultiFernet`), so a rotation is: prepend a new key, run
:func:`study.vault.services.rotate_vault_keys`, then drop the old key.

Lookup digests (to find "has this external id joined this study before?" without decrypting every
entry) are ``HMAC-SHA256(subkey, study_slug || external_id)`` where ``subkey`` is derived from a
vault key. A digest is computed under every configured key, so lookups keep working during a
rotation; the rotation recomputes the stored digests under the new first key.

Generate a key with ``python -c "from cryptography.fernet import Fernet;
print(Fernet.generate_key().decode())"``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

_LOOKUP_CONTEXT = b"haieval-vault-lookup-v1"


class VaultKeyError(ImproperlyConfigured):
    """``VAULT_KEYS`` is missing or holds something that is not a Fernet key."""


class VaultDecryptError(Exception):
    """An entry cannot be decrypted with any configured key (a key was dropped too early)."""


def configured_keys() -> list[str]:
    keys = getattr(settings, "VAULT_KEYS", None) or []
    if isinstance(keys, str):
        keys = keys.split(",")
    cleaned = [key.strip() for key in keys if key.strip()]
    if not cleaned:
        raise VaultKeyError(
            "VAULT_KEYS is not set; the contact vault needs at least one Fernet key "
            "(comma-separated, first one encrypts)."
        )
    return cleaned


def validate_keys(keys: list[str]) -> list[Fernet]:
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError) as exc:
            raise VaultKeyError(
                f"VAULT_KEYS entry {position} is not a Fernet key (32 url-safe base64-encoded "
                "bytes)."
            ) from exc
    return fernets


def multi_fernet() -> MultiFernet:
    """The configured keys, first one encrypting. Built per call so settings overrides apply."""
    return MultiFernet(validate_keys(configured_keys()))


def encrypt(data: dict[str, Any]) -> str:
    plaintext = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    return multi_fernet().encrypt(plaintext).decode("ascii")


def decrypt(ciphertext: str) -> dict[str, Any]:
    try:
        plaintext = multi_fernet().decrypt(ciphertext.encode("ascii"))
    except InvalidToken as exc:
        raise VaultDecryptError(
            "A vault entry cannot be decrypted with any key in VAULT_KEYS."
        ) from exc
    data: dict[str, Any] = json.loads(plaintext)
    return data


def reencrypt(ciphertext: str) -> str:
    """The same plaintext encrypted under the first key."""
    return multi_fernet().rotate(ciphertext.encode("ascii")).decode("ascii")


def _lookup_subkey(key: str) -> bytes:
    raw = base64.urlsafe_b64decode(key)
    return hmac.new(raw, _LOOKUP_CONTEXT, hashlib.sha256).digest()


def _digest(key: str, study_slug: str, external_id: str) -> str:
    message = f"{study_slug}\x00{external_id}".encode()
    return hmac.new(_lookup_subkey(key), message, hashlib.sha256).hexdigest()


def lookup_digest(study_slug: str, external_id: str) -> str:
    """The digest to store, under the first (encrypting) key."""
    return _digest(configured_keys()[0], study_slug, external_id)


def lookup_digests(study_slug: str, external_id: str) -> list[str]:
    """The digest under every configured key, for lookups during a rotation."""
    return [_digest(key, study_slug, external_id) for key in configured_keys()]
