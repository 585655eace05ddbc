"""What grading stores: templates and instances seen, calibrations, submissions, evaluations.

Nothing here refers to participants: the study layer points at these rows, never the reverse.
"""

from __future__ import annotations

from django.db import models


class TaskTemplate(models.Model):
    """A template version from the bank, recorded the first time it is used."""

    slug = models.SlugField(max_length=100)
    version = models.CharField(max_length=32, help_text="Semantic version from template.toml.")
    title = models.CharField(max_length=200)
    track = models.CharField(max_length=3)
    difficulty = models.CharField(max_length=6)
    content_hash = models.CharField(max_length=64, help_text="sha256 of the template's files.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # One row per exact template content: a changed file without a version bump is
            # a new row, so earlier gradings keep pointing at what they really used.
            models.UniqueConstraint(
                fields=["slug", "version", "content_hash"], name="uniq_template_content"
            )
        ]
        ordering = ["slug", "-created_at"]

    def __str__(self) -> str:
        return f"{self.slug} {self.version}"


class TaskInstance(models.Model):
    template = models.ForeignKey(TaskTemplate, on_delete=models.PROTECT, related_name="instances")
    seed = models.BigIntegerField()
    params = models.JSONField(help_text="Technical parameters, constraint, context and names.")
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["template", "seed"], name="uniq_instance_seed")
        ]

    def __str__(self) -> str:
        return f"{self.template} seed {self.seed}"


class Calibration(models.Model):
    """Efficiency thresholds measured on one host with one backend (see docs/calibration.md)."""

    class Status(models.TextChoices):
        VALID = "valid"
        REJECTED = "rejected"
        STALE = "stale"

    template = models.ForeignKey(
        TaskTemplate, on_delete=models.CASCADE, related_name="calibrations"
    )
    perf_fingerprint = models.CharField(
        max_length=64, help_text="sha256 of the performance inputs the thresholds apply to."
    )
    host_fingerprint = models.CharField(max_length=64)
    backend = models.CharField(max_length=16)
    status = models.CharField(max_length=10, choices=Status.choices)
    message = models.TextField(blank=True)
    data = models.JSONField(help_text="Per-test medians, thresholds and raw samples.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # Grading looks up the newest valid calibration for exactly this key.
            models.Index(
                fields=["template", "perf_fingerprint", "host_fingerprint", "backend", "status"],
                name="calibration_lookup",
            )
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.template} @ {self.host_fingerprint[:8]} ({self.backend}, {self.status})"


class Submission(models.Model):
    """An immutable solution for an instance, from anyone: participant, bot or LLM."""

    instance = models.ForeignKey(TaskInstance, on_delete=models.PROTECT, related_name="submissions")
    files = models.JSONField(
        help_text="The instance's editable files as submitted (path -> text); read-only files "
        "always come from the instance."
    )
    sha256 = models.CharField(
        max_length=64,
        help_text="sha256 of solution.py's bytes for a one-file task, else of the files' "
        "canonical JSON.",
    )
    source_label = models.CharField(
        max_length=100, help_text="Who produced it, e.g. 'participant', 'bot:naive', 'llm:gpt-x'."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["sha256"], name="submission_sha")]

    def __str__(self) -> str:
        return f"submission {self.pk} ({self.source_label}, {self.sha256[:10]})"


class Evaluation(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"  # the engine could not grade (never the solution's fault)

    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="evaluations")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    tests_done = models.PositiveIntegerField(default=0)
    tests_total = models.PositiveIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_s = models.FloatField(
        null=True, blank=True, help_text="Task duration supplied by the caller (for PAR-N)."
    )
    time_limit_s = models.FloatField(
        null=True,
        blank=True,
        help_text="The time the solver had (a trial's arm limit): completion time is capped at "
        "it, PAR-N with N its minutes. Empty: an hour.",
    )
    tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"evaluation {self.pk} ({self.status})"
