"""Export pseudonyms: ``"S" + base32(HMAC-SHA256(key, f"{scope}:{internal_id}"))[:10]``.

The key is ``settings.EXPORT_HMAC_KEY`` (environment variable ``EXPORT_HMAC_KEY``). It lives
outside the database and outside every package; ``manifest.json`` records only its ``key_id``
(the first 8 hex digits of its sha256). Production refuses to start without it. Development and
test runs without a key use a fallback derived from ``SECRET_KEY`` and labelled as such in the
manifest, so such a package can never pass for a real release.

The *scope* decides linkability: the same scope across releases gives the same pseudonyms
(errata, follow-up releases); a new scope per release makes releases unlinkable. The default is
``<study slug>:<profile>``, so internal and public packages never share pseudonyms.

``internal_id`` is random (``secrets.token_hex``) and never derived from personal data, so the
pseudonym is not either (HIPAA 164.514(c)).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEV_FALLBACK_LABEL = "development fallback derived from DJANGO_SECRET_KEY (not for real studies)"
_FALLBACK_CONTEXT = b"haieval-export-pseudonyms-dev-fallback-v1"
MIN_KEY_LENGTH = 32


@dataclass(frozen=True)
class ExportKey:
    secret: bytes
    source: str  # "environment" or DEV_FALLBACK_LABEL

    @property
    def key_id(self) -> str:
        return hashlib.sha256(self.secret).hexdigest()[:8]

    @property
    def is_fallback(self) -> bool:
        return self.source != "environment"


def export_key() -> ExportKey:
    configured = str(getattr(settings, "EXPORT_HMAC_KEY", "") or "")
    if configured:
        if len(configured) < MIN_KEY_LENGTH and not settings.DEBUG:
            raise ImproperlyConfigured(
                f"EXPORT_HMAC_KEY is shorter than {MIN_KEY_LENGTH} characters; use a long "
                "random secret."
            )
        return ExportKey(configured.encode(), "environment")
    if not settings.SECRET_KEY:
        raise ImproperlyConfigured("EXPORT_HMAC_KEY is not set and there is no SECRET_KEY.")
    derived = hmac.new(settings.SECRET_KEY.encode(), _FALLBACK_CONTEXT, hashlib.sha256).digest()
    return ExportKey(derived, DEV_FALLBACK_LABEL)


def default_scope(study_slug: str, profile: str) -> str:
    return f"{study_slug}:{profile}"


class Pseudonymiser:
    """Maps internal ids to pseudonyms under one key and scope (cached: ids repeat a lot)."""

    def __init__(self, key: ExportKey, scope: str) -> None:
        if not scope.strip():
            raise ValueError("An export scope must not be empty.")
        self.key = key
        self.scope = scope
        self._cache: dict[str, str] = {}

    def __call__(self, internal_id: str) -> str:
        cached = self._cache.get(internal_id)
        if cached is None:
            digest = hmac.new(
                self.key.secret, f"{self.scope}:{internal_id}".encode(), hashlib.sha256
            ).digest()
            cached = "S" + base64.b32encode(digest).decode("ascii")[:10]
            self._cache[internal_id] = cached
        return cached

    def describe(self) -> dict[str, str]:
        return {
            "method": 'S + base32(HMAC-SHA256(key, "<scope>:<internal_id>"))[:10]',
            "scope": self.scope,
            "key_id": self.key.key_id,
            "key_source": self.key.source,
        }
