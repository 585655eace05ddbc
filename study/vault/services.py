"""Write and read the vault. The only supported way in or out of ``VaultEntry``.

- Writes (``store_contact``, ``add_external_id``, ``add_typed_consent_name``) merge into the
  participant's encrypted blob, creating the entry on first use.
- ``read_vault`` decrypts a study's entries for a user holding ``study.view_vault`` and records a
  ``VaultRead`` row and an audit event in the same transaction.
- ``delete_contact`` removes an entry (withdrawal, end of retention).
- ``rotate_vault_keys`` re-encrypts everything under the first key of ``VAULT_KEYS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from study.audit import log as audit
from study.models import Participant, User
from study.vault import crypto
from study.vault.models import ExternalIdDigest, VaultEntry, VaultRead

VAULT_PERMISSION = "study.view_vault"
CONTACT_FIELDS = ("name", "email", "institution", "payment_notes")


class ExternalIdTaken(Exception):
    """The external id already belongs to another entry of the same study."""


def empty_blob() -> dict[str, Any]:
    return {
        "name": "",
        "email": "",
        "institution": "",
        "payment_notes": "",
        "external_ids": {},
        "typed_consent_names": [],
    }


def _study_slug_of(internal_id: str) -> str:
    slug = (
        Participant.objects.filter(internal_id=internal_id)
        .values_list("study__slug", flat=True)
        .first()
    )
    if slug is None:
        raise ValueError(f"No participant has internal id {internal_id!r}; give the study slug.")
    return slug


def _update(
    internal_id: str, study_slug: str | None, change: Callable[[dict[str, Any]], None]
) -> VaultEntry:
    """Decrypt, change and re-encrypt one entry under a row lock; create it if missing."""
    with transaction.atomic():
        entry = VaultEntry.objects.select_for_update().filter(internal_id=internal_id).first()
        if entry is None:
            data = empty_blob()
            change(data)
            return VaultEntry.objects.create(
                internal_id=internal_id,
                study_slug=study_slug or _study_slug_of(internal_id),
                ciphertext=crypto.encrypt(data),
            )
        if study_slug and study_slug != entry.study_slug:
            raise ValueError(f"Vault entry {internal_id} belongs to another study.")
        data = {**empty_blob(), **crypto.decrypt(entry.ciphertext)}
        change(data)
        entry.ciphertext = crypto.encrypt(data)
        entry.save(update_fields=["ciphertext", "updated_at"])
        return entry


def store_contact(internal_id: str, study_slug: str, **fields: str) -> VaultEntry:
    """Set some of ``name``, ``email``, ``institution``, ``payment_notes``; keep the rest."""
    unknown = set(fields) - set(CONTACT_FIELDS)
    if unknown:
        raise TypeError(f"Unknown vault fields: {', '.join(sorted(unknown))}.")

    def change(data: dict[str, Any]) -> None:
        data.update({key: str(value) for key, value in fields.items()})

    return _update(internal_id, study_slug, change)


def add_external_id(internal_id: str, study_slug: str, param: str, value: str) -> VaultEntry:
    """Record an external id (e.g. ``PROLIFIC_PID``) and its keyed lookup digest.

    Raises ``ExternalIdTaken`` when another entry of the study already holds the same value.
    """

    def change(data: dict[str, Any]) -> None:
        data["external_ids"][param] = value

    with transaction.atomic():
        entry = _update(internal_id, study_slug, change)
        digest = crypto.lookup_digest(entry.study_slug, value)
        known = entry.digests.filter(digest__in=crypto.lookup_digests(entry.study_slug, value))
        if not known.exists():
            try:
                with transaction.atomic():
                    ExternalIdDigest.objects.create(entry=entry, digest=digest)
            except IntegrityError as exc:
                raise ExternalIdTaken(f"{param} is already registered in {study_slug}.") from exc
    return entry


def add_typed_consent_name(internal_id: str, name: str, study_slug: str | None = None) -> None:
    """Keep the name a participant typed to sign a consent form (never in research tables)."""

    def change(data: dict[str, Any]) -> None:
        data["typed_consent_names"].append(name)

    _update(internal_id, study_slug, change)


def find_internal_id(study_slug: str, external_id: str) -> str | None:
    """The internal id that joined ``study_slug`` with ``external_id`` before, if any."""
    return (
        ExternalIdDigest.objects.filter(
            digest__in=crypto.lookup_digests(study_slug, external_id),
            entry__study_slug=study_slug,
        )
        .values_list("entry__internal_id", flat=True)
        .first()
    )


def read_vault(user: User | AnonymousUser, study_slug: str, purpose: str) -> list[dict[str, Any]]:
    """Decrypt every entry of a study, for a reader holding ``study.view_vault``; audited."""
    if not user.is_active or not user.has_perm(VAULT_PERMISSION):
        raise PermissionDenied(f"Reading the vault needs the {VAULT_PERMISSION} permission.")
    purpose = purpose.strip()
    if not purpose:
        raise ValueError("Say why you read the vault (purpose).")
    with transaction.atomic():
        entries = VaultEntry.objects.filter(study_slug=study_slug).order_by("created_at", "pk")
        rows = [
            {"internal_id": entry.internal_id, **empty_blob(), **crypto.decrypt(entry.ciphertext)}
            for entry in entries
        ]
        read = VaultRead.objects.create(
            who=user.get_username(),
            study_slug=study_slug,
            purpose=purpose[:200],
            n_entries=len(rows),
        )
        audit.record(
            audit.VAULT_READ,
            actor=user,
            object_type="vault",
            object_id=study_slug,
            details={"study": study_slug, "n_entries": len(rows), "vault_read": read.pk},
        )
    return rows


def delete_contact(internal_id: str) -> bool:
    """Remove a participant's vault entry and its lookup digests. True if there was one."""
    deleted, _ = VaultEntry.objects.filter(internal_id=internal_id).delete()
    return deleted > 0


@transaction.atomic
def rotate_vault_keys() -> int:
    """Re-encrypt every entry and recompute every digest under the first key. Returns the count.

    Run after prepending a new key to ``VAULT_KEYS``; afterwards the old key can be removed.
    """
    count = 0
    for entry in VaultEntry.objects.select_for_update().order_by("pk"):
        data = crypto.decrypt(entry.ciphertext)
        entry.ciphertext = crypto.reencrypt(entry.ciphertext)
        entry.save(update_fields=["ciphertext", "updated_at"])
        entry.digests.all().delete()
        values = {str(value) for value in data.get("external_ids", {}).values()}
        ExternalIdDigest.objects.bulk_create(
            ExternalIdDigest(entry=entry, digest=crypto.lookup_digest(entry.study_slug, value))
            for value in sorted(values)
        )
        count += 1
    return count
