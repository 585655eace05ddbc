"""How long a study keeps contact data and telemetry after it closes."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models


class RetentionPolicy(models.Model):
    """One per study; ``manage.py purge_expired`` applies it. Created on first use."""

    study = models.OneToOneField("study.Study", on_delete=models.CASCADE, related_name="retention")
    contact_days = models.PositiveIntegerField(
        default=90,
        help_text="Days after the study closes until contact data in the vault is deleted "
        "(leave time for payment reconciliation).",
    )
    telemetry_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days after the study closes until editor telemetry and AI request logs are "
        "deleted; empty keeps them (per the data-management plan).",
    )
    ip_log_days = models.PositiveIntegerField(
        default=90,
        help_text="Days to keep IP/User-Agent security logs (recorded for the IRB; the platform "
        "keeps no IP addresses in research tables).",
    )
    closed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the study was closed; retention counts from here."
    )

    class Meta:
        verbose_name_plural = "retention policies"

    def __str__(self) -> str:
        return f"retention of study {self.study_id}"

    def contact_due(self, now: datetime) -> bool:
        return self.closed_at is not None and now >= self.closed_at + timedelta(
            days=self.contact_days
        )

    def telemetry_cutoff(self) -> datetime | None:
        if self.closed_at is None or self.telemetry_days is None:
            return None
        return self.closed_at + timedelta(days=self.telemetry_days)
