from __future__ import annotations

from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation engine"
    default_auto_field = "django.db.models.BigAutoField"
