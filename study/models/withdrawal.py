"""Withdrawal tombstones: who left, how, and what was removed."""

from __future__ import annotations

import hashlib

from django.db import models


def internal_id_digest(internal_id: str) -> str:
    return hashlib.sha256(internal_id.encode()).hexdigest()


class Withdrawal(models.Model):
    """A processed withdrawal. Outlives the participant row (``participant`` becomes null) so
    later exports and backup restores can still exclude the person by ``internal_id_sha256``."""

    class Channel(models.TextChoices):
        PARTICIPANT = "participant", "Participant (withdraw button)"
        RESEARCHER = "researcher", "Researcher, on the participant's request"
        RECONSENT = "declined_reconsent", "Declined a new consent version"

    class Scope(models.TextChoices):
        KEEP = "keep", "Stop participation; keep data collected so far"
        DELETE = "delete", "Stop participation; delete research and contact data"

    participant = models.OneToOneField(
        "study.Participant",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="withdrawal",
    )
    study = models.ForeignKey("study.Study", on_delete=models.PROTECT, related_name="withdrawals")
    internal_id_sha256 = models.CharField(
        max_length=64, help_text="sha256 of the participant's internal id (the tombstone)."
    )
    channel = models.CharField(max_length=20, choices=Channel.choices)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    requested_at = models.DateTimeField()
    processed_at = models.DateTimeField(null=True, blank=True)
    processed_by = models.CharField(
        max_length=150, blank=True, help_text='Username of who processed it, or "system".'
    )
    removed = models.JSONField(
        default=dict, blank=True, help_text="What was deleted, as counts per kind."
    )

    class Meta:
        indexes = [
            # Exports and restores look tombstones up by the hashed internal id.
            models.Index(fields=["internal_id_sha256"], name="withdrawal_tombstone"),
        ]
        ordering = ["-requested_at"]

    def __str__(self) -> str:
        return f"withdrawal ({self.get_scope_display()}) via {self.channel}"
