"""Versioned, immutable consent forms and the consent decisions made on them."""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models


class ConsentForm(models.Model):
    class Mode(models.TextChoices):
        WAIVER = "waiver", "Click to consent (documentation waived)"
        TYPED_NAME = "typed_name", "Type your name to consent"

    study = models.ForeignKey("study.Study", on_delete=models.CASCADE, related_name="consent_forms")
    version = models.CharField(max_length=20, help_text="e.g. 1.0; a new text needs a new version.")
    title = models.CharField(max_length=200, default="Consent to take part in this study")
    body_markdown = models.TextField(help_text="The consent text (Markdown).")
    checkboxes = models.JSONField(
        default=list,
        blank=True,
        help_text='List of {"id": "...", "label": "...", "required": true|false}.',
    )
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.WAIVER)
    irb_reference = models.CharField(max_length=100, blank=True)
    content_sha256 = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "version"], name="uniq_consent_version")
        ]
        ordering = ["study", "-created_at"]

    def __str__(self) -> str:
        return f"{self.study.slug} consent {self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            stored = ConsentForm.objects.filter(pk=self.pk).values_list("content_sha256", flat=True)
            if stored and stored[0] != self.compute_hash():
                raise ValidationError(
                    "A consent form cannot change once created; add a new version instead."
                )
        self.content_sha256 = self.compute_hash()
        super().save(*args, **kwargs)

    def compute_hash(self) -> str:
        import json

        blob = json.dumps(
            [self.version, self.title, self.body_markdown, self.checkboxes, self.mode],
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()


class ConsentEvent(models.Model):
    """One decision: what exactly was shown, when, and what was ticked. Append-only."""

    class Decision(models.TextChoices):
        AGREE = "agree"
        DECLINE = "decline"

    participant = models.ForeignKey(
        "study.Participant", on_delete=models.CASCADE, related_name="consent_events"
    )
    form = models.ForeignKey(ConsentForm, on_delete=models.PROTECT, related_name="events")
    form_sha256 = models.CharField(max_length=64)
    decision = models.CharField(max_length=8, choices=Decision.choices)
    checkboxes = models.JSONField(default=dict, help_text="Checkbox id -> ticked.")
    typed_name_given = models.BooleanField(
        default=False, help_text="The typed name itself is kept only in the vault."
    )
    rendered_html = models.TextField(help_text="The exact text shown, as HTML.")
    rendered_sha256 = models.CharField(max_length=64)
    decided_at = models.DateTimeField()

    class Meta:
        ordering = ["decided_at"]

    def __str__(self) -> str:
        return f"{self.participant} {self.decision} {self.form.version}"
