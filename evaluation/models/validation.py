"""What template validation stores (the paper's appendix B and D): one-attempt C0 pass rates
per model, the status they give a template version, and the experts' ratings of instances."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evaluation.models.engine import TaskInstance, TaskTemplate
from evaluation.models.llm import ModelEndpoint, Sweep


class TemplateValidation(models.Model):
    """One model's one-attempt pass rate on a template's instances."""

    class Role(models.TextChoices):
        BASELINE = "baseline", "Fidelity (baseline model)"
        GENERALISATION = "generalisation", "Generalisation (other model)"

    template = models.ForeignKey(TaskTemplate, on_delete=models.PROTECT, related_name="validations")
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="+")
    endpoint_settings = models.JSONField(help_text="The endpoint's settings when it ran.")
    role = models.CharField(max_length=14, choices=Role.choices)
    sweep = models.ForeignKey(Sweep, on_delete=models.PROTECT, related_name="validations")
    instances = models.PositiveIntegerField()
    passed = models.PositiveIntegerField()
    threshold = models.FloatField(help_text="Highest pass rate that keeps the template.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.template} on {self.endpoint.name}: {self.passed}/{self.instances}"

    @property
    def rate(self) -> float:
        return self.passed / self.instances if self.instances else 0.0

    @property
    def within(self) -> bool:
        return self.rate <= self.threshold


class TemplateStatus(models.Model):
    """Where a template version stands. Studies use accepted templates unless a study allows
    unvalidated ones (pilots)."""

    class Status(models.TextChoices):
        UNVALIDATED = "unvalidated"
        ACCEPTED = "accepted"
        REJECTED = "rejected"  # a model solved too many in the validation that decided it
        COMPROMISED = "compromised"  # accepted, then a later model solved too many

    slug = models.SlugField(max_length=100)
    version = models.CharField(max_length=32)
    status = models.CharField(max_length=12, choices=Status.choices)
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        TemplateValidation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["slug", "version"], name="uniq_template_status")
        ]
        ordering = ["slug", "version"]
        verbose_name_plural = "template statuses"

    def __str__(self) -> str:
        return f"{self.slug} {self.version}: {self.status}"


class ExpertRating(models.Model):
    """One reviewer's Pass/Fail on one quality dimension of one instance (appendix D.2)."""

    class Criterion(models.TextChoices):
        REQUIREMENT_CLARITY = "requirement_clarity", "Requirement clarity"
        CODE_FRAMEWORK = "code_framework", "Code framework correctness"
        DIFFICULTY = "difficulty", "Difficulty consistency"
        COLLABORATION = "collaboration", "Collaboration-necessary characteristics"

    instance = models.ForeignKey(TaskInstance, on_delete=models.PROTECT, related_name="ratings")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    criterion = models.CharField(max_length=20, choices=Criterion.choices)
    passed = models.BooleanField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["instance", "reviewer", "criterion"], name="uniq_expert_rating"
            )
        ]
        ordering = ["instance", "criterion"]

    def __str__(self) -> str:
        return f"{self.criterion} of {self.instance}: {'pass' if self.passed else 'fail'}"
