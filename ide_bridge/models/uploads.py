"""Workspace archives uploaded by the ``submit`` script, kept immutably."""

from __future__ import annotations

from django.db import models


class WorkspaceUpload(models.Model):
    trial = models.ForeignKey("study.Trial", on_delete=models.CASCADE, related_name="uploads")
    sha256 = models.CharField(max_length=64)
    archive = models.BinaryField(help_text="The archive exactly as received.")
    size = models.PositiveIntegerField()
    files = models.JSONField(help_text="Member names and sizes.")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # A retried upload of the same archive is the same upload (idempotent).
            models.UniqueConstraint(fields=["trial", "sha256"], name="uniq_upload_sha"),
        ]

    def __str__(self) -> str:
        return f"upload {self.sha256[:10]} (trial {self.trial_id})"
