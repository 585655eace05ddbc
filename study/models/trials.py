"""Trials: one participant x one task instance x one condition, timed on the server."""

from __future__ import annotations

from django.db import models


class Trial(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Not started"
        ACTIVE = "active", "In progress"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Time ran out"

    participant = models.ForeignKey(
        "study.Participant", on_delete=models.CASCADE, related_name="trials"
    )
    session_index = models.PositiveSmallIntegerField()
    period = models.PositiveSmallIntegerField(help_text="Position across the whole study, 1-based.")
    arm = models.ForeignKey("study.Arm", on_delete=models.PROTECT, related_name="trials")
    template_slug = models.SlugField(max_length=100)
    seed = models.BigIntegerField()
    instance = models.ForeignKey(
        "evaluation.TaskInstance", on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    started_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    submission = models.ForeignKey(
        "evaluation.Submission", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    evaluation = models.ForeignKey(
        "evaluation.Evaluation", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Only the editable files the participant saved at least once (autosave sends the file
    # that changed); an editable path that is missing here is still the instance's starter.
    draft_files = models.JSONField(
        default=dict,
        blank=True,
        help_text="Last saved text of each editable file the participant changed (path -> text); "
        "the others are the starter's.",
    )
    draft_saved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["participant", "period"], name="uniq_trial_period")
        ]
        ordering = ["participant", "period"]

    def __str__(self) -> str:
        return f"{self.participant} P{self.period} {self.template_slug} ({self.arm.condition})"

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.ended_at:
            return (self.ended_at - self.started_at).total_seconds()
        return None
