"""Per-trial bearer tokens for non-browser clients (the ``submit`` script, HTTP telemetry)."""

from __future__ import annotations

from django.db import models


class TrialAccess(models.Model):
    trial = models.OneToOneField("study.Trial", on_delete=models.CASCADE, related_name="access")
    token_sha256 = models.CharField(max_length=64, unique=True, help_text="Only the hash is kept.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"access token of trial {self.trial_id}"
