"""Counterbalanced plans and their audit trail."""

from __future__ import annotations

from django.db import models


class AssignmentLock(models.Model):
    """One row per study, locked (SELECT ... FOR UPDATE) while a plan is chosen, so two
    participants consenting at once never read the same counts."""

    study = models.OneToOneField("study.Study", on_delete=models.CASCADE, related_name="lock")

    def __str__(self) -> str:
        return f"assignment lock of study {self.study_id}"


class Assignment(models.Model):
    """The plan a participant got and why: enough to replay the choice."""

    participant = models.OneToOneField(
        "study.Participant", on_delete=models.CASCADE, related_name="assignment"
    )
    study = models.ForeignKey("study.Study", on_delete=models.CASCADE, related_name="assignments")
    track = models.ForeignKey("study.Track", on_delete=models.PROTECT, related_name="+")
    sequence = models.CharField(max_length=12, help_text="Conditions by period, e.g. ABBA.")
    tasks = models.JSONField(help_text="Template slugs by period.")
    seed = models.BigIntegerField()
    counts_before = models.JSONField()
    min_score = models.FloatField()
    n_tied = models.PositiveIntegerField()
    n_candidates = models.PositiveIntegerField()
    p_best = models.FloatField()
    algorithm_version = models.CharField(max_length=20)
    replaces = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The released plan this one re-uses (replacement of excluded participants).",
    )
    released = models.BooleanField(
        default=False, help_text="No longer counted for balance (dropout, withdrawal)."
    )
    excluded_for_balance = models.BooleanField(
        default=False, help_text="Excluded after completion; the next participant gets this plan."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.participant}: {self.sequence} {self.tasks}"


class DesignPreview(models.Model):
    """A simulated allocation of a study's design before recruitment (the worker runs it)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Ready"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(
        "study.Study", on_delete=models.CASCADE, related_name="design_previews"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    seed = models.PositiveIntegerField(help_text="Seed of the simulation (same seed, same run).")
    dropout = models.FloatField(help_text="The study's expected dropout when it was started.")
    created_by = models.CharField(max_length=150, help_text="Username of the researcher.")
    result = models.JSONField(
        default=dict,
        blank=True,
        help_text="The simulation's summary (per track), its warnings and the allocation table.",
    )
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.study.slug} design preview #{self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
