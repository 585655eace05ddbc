"""Telemetry events (append-only) and the integrity flags derived from them."""

from __future__ import annotations

from django.db import models


class TrialEvent(models.Model):
    """One client event. (trial, seq) is unique, so re-sent batches never double."""

    trial = models.ForeignKey("study.Trial", on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField(help_text="Client sequence number, from 1, no gaps.")
    kind = models.CharField(max_length=40)
    client_ts = models.BigIntegerField(help_text="Client clock, milliseconds since the epoch.")
    server_ts = models.DateTimeField(auto_now_add=True)
    payload = models.JSONField(default=dict)

    class Meta:
        constraints = [
            # Idempotent ingestion: a re-sent event is ignored, never stored twice.
            models.UniqueConstraint(fields=["trial", "seq"], name="uniq_event_seq"),
        ]
        ordering = ["trial", "seq"]

    def __str__(self) -> str:
        return f"trial {self.trial_id} #{self.seq} {self.kind}"


class IntegrityFlag(models.Model):
    class Kind(models.TextChoices):
        LARGE_PASTE = "large_paste", "Large paste from outside the editor"
        LONG_BLUR = "long_blur", "Long time away from the page"
        AI_ATTEMPT = "ai_attempt", "AI request in a no-AI arm"

    trial = models.ForeignKey("study.Trial", on_delete=models.CASCADE, related_name="flags")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    detail = models.JSONField(default=dict)
    event_seq = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["trial", "created_at"]
        indexes = [models.Index(fields=["trial", "kind"], name="flag_trial_kind")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} (trial {self.trial_id})"
