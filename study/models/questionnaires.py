"""Questionnaires built in the admin: versioned item lists and the answers given to them."""

from __future__ import annotations

from django.db import models


class Questionnaire(models.Model):
    class Kind(models.TextChoices):
        SCREENING = "screening", "Pre-study screening"
        POST_TRIAL = "post_trial", "After each trial"
        POST_STUDY = "post_study", "After the last trial"

    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=12, choices=Kind.choices)

    def __str__(self) -> str:
        return self.title


class QuestionnaireVersion(models.Model):
    """Items are edited only while a version is unpublished; publishing freezes it."""

    questionnaire = models.ForeignKey(
        Questionnaire, on_delete=models.CASCADE, related_name="versions"
    )
    version = models.PositiveIntegerField(default=1)
    intro = models.TextField(blank=True, help_text="Shown above the items (Markdown).")
    published = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["questionnaire", "version"], name="uniq_questionnaire_version"
            )
        ]
        ordering = ["questionnaire", "-version"]

    def __str__(self) -> str:
        return f"{self.questionnaire.title} v{self.version}"


class Item(models.Model):
    class Type(models.TextChoices):
        SINGLE = "single", "Single choice"
        MULTIPLE = "multiple", "Multiple choice"
        LIKERT5 = "likert5", "Likert scale (5 points)"
        LIKERT7 = "likert7", "Likert scale (7 points)"
        NUMBER = "number", "Number"
        SHORT_TEXT = "short_text", "Short text"
        LONG_TEXT = "long_text", "Long text"

    version = models.ForeignKey(
        QuestionnaireVersion, on_delete=models.CASCADE, related_name="items"
    )
    key = models.SlugField(max_length=60, help_text="Stable id used in exports, e.g. tlx_mental.")
    order = models.PositiveIntegerField(default=0)
    type = models.CharField(max_length=12, choices=Type.choices)
    text = models.TextField()
    help_text = models.CharField(max_length=300, blank=True)
    required = models.BooleanField(default=True)
    choices = models.JSONField(
        default=list,
        blank=True,
        help_text='Choice items: list of {"value": "...", "label": "..."}. Likert: optional '
        '{"low": "...", "high": "..."} anchors as the only element.',
    )
    min_value = models.FloatField(null=True, blank=True)
    max_value = models.FloatField(null=True, blank=True)
    show_if = models.JSONField(
        default=dict,
        blank=True,
        help_text='Conditional display: {"item": "<key>", "in": ["value", ...]}; empty: always.',
    )
    scale = models.CharField(
        max_length=40, blank=True, help_text="Scale this item scores into, e.g. nasa_tlx."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "key"], name="uniq_item_key")]
        ordering = ["version", "order", "pk"]

    def __str__(self) -> str:
        return self.key


class Response(models.Model):
    participant = models.ForeignKey(
        "study.Participant", on_delete=models.CASCADE, related_name="responses"
    )
    version = models.ForeignKey(QuestionnaireVersion, on_delete=models.PROTECT, related_name="+")
    trial = models.ForeignKey(
        "study.Trial", null=True, blank=True, on_delete=models.CASCADE, related_name="responses"
    )
    submitted_at = models.DateTimeField()

    class Meta:
        constraints = [
            # One answer sheet per questionnaire and trial: double submissions are idempotent.
            models.UniqueConstraint(
                fields=["participant", "version", "trial"],
                name="uniq_response_per_trial",
                nulls_distinct=False,
            )
        ]

    def __str__(self) -> str:
        return f"{self.participant} -> {self.version}"


class Answer(models.Model):
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="answers")
    value = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["response", "item"], name="uniq_answer_item")
        ]

    def __str__(self) -> str:
        return f"{self.item.key}={self.value!r}"
