"""Export jobs started from the researcher pages and built in the worker."""

from __future__ import annotations

from django.db import models


class ExportJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Ready"
        FAILED = "failed", "Failed"

    class Profile(models.TextChoices):
        PUBLIC = "public", "Public / IRB-shareable (de-identified)"
        INTERNAL = "internal", "Internal (study team only)"

    study = models.ForeignKey("study.Study", on_delete=models.CASCADE, related_name="exports")
    profile = models.CharField(max_length=10, choices=Profile.choices)
    scope = models.CharField(max_length=200, help_text="Pseudonym scope of the package.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    progress_note = models.CharField(max_length=100, blank=True)
    created_by = models.CharField(max_length=150, help_text="Username of the researcher.")
    zip_path = models.CharField(
        max_length=300, blank=True, help_text="The zip, relative to MEDIA_ROOT (exports/...)."
    )
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    summary = models.JSONField(
        default=dict, blank=True, help_text="Row counts, achieved k, withdrawn counts, key id."
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # The export page lists a study's jobs, newest first.
            models.Index(fields=["study", "-created_at"], name="exportjob_study_created"),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} {self.profile} export #{self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
