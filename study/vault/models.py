"""Vault tables. Nothing in the research schema has a foreign key to them."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class VaultEntry(models.Model):
    """One participant's contact and compensation data as one Fernet-encrypted JSON blob.

    The blob holds ``name``, ``email``, ``institution``, ``payment_notes``, ``external_ids``
    (``{url parameter: value}``) and ``typed_consent_names``. Read it only through
    :func:`study.vault.services.read_vault`, which checks the permission and audits the read.
    """

    # Deliberately not a ForeignKey: research tables must stay droppable without the vault
    # and the vault deletable (withdrawal, study close) without touching research rows.
    internal_id = models.CharField(max_length=16, unique=True)
    study_slug = models.SlugField(max_length=50, db_index=True)
    ciphertext = models.TextField(help_text="Fernet token (url-safe base64) of the JSON blob.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "vault entry"
        verbose_name_plural = "vault entries"
        ordering = ["study_slug", "created_at"]

    def __str__(self) -> str:
        return f"vault entry {self.internal_id} ({self.study_slug})"


class ExternalIdDigest(models.Model):
    """A keyed HMAC of (study slug, external id) pointing at the entry that holds the id.

    Lets a recruitment link recognise a returning external id without decrypting every entry,
    and without the id ever appearing in clear anywhere.
    """

    entry = models.ForeignKey(VaultEntry, on_delete=models.CASCADE, related_name="digests")
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [
            # One external id joins a study once, even when two joins race.
            models.UniqueConstraint(fields=["digest"], name="uniq_vault_external_digest"),
        ]

    def __str__(self) -> str:
        return f"lookup digest for {self.entry.internal_id}"


class VaultRead(models.Model):
    """Audit row: who decrypted which study's vault, when and why. Append-only by convention."""

    who = models.CharField(max_length=150, help_text="Username of the reader.")
    when = models.DateTimeField(default=timezone.now, db_index=True)
    study_slug = models.SlugField(max_length=50)
    purpose = models.CharField(max_length=200)
    n_entries = models.PositiveIntegerField()

    class Meta:
        ordering = ["-when"]

    def __str__(self) -> str:
        return f"{self.who} read {self.study_slug} ({self.n_entries} entries)"
