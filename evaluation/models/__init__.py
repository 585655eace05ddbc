"""The engine's tables: grading (``engine``), the LLM arm (``llm``), template validation
(``validation``). Nothing here refers to participants."""

from __future__ import annotations

from evaluation.models.engine import (
    Calibration,
    Evaluation,
    Submission,
    TaskInstance,
    TaskTemplate,
)
from evaluation.models.llm import (
    AgentRequest,
    AgentRun,
    Dataset,
    Intervention,
    ModelEndpoint,
    Sweep,
)
from evaluation.models.validation import ExpertRating, TemplateStatus, TemplateValidation

__all__ = [
    "AgentRequest",
    "AgentRun",
    "Calibration",
    "Dataset",
    "Evaluation",
    "ExpertRating",
    "Intervention",
    "ModelEndpoint",
    "Submission",
    "Sweep",
    "TaskInstance",
    "TaskTemplate",
    "TemplateStatus",
    "TemplateValidation",
]
