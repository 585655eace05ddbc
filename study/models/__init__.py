"""Models of the human study, one module per concern."""

from __future__ import annotations

from study.models.accounts import User
from study.models.assignment import Assignment, AssignmentLock
from study.models.config import Arm, ConfigSnapshot, Study, TaskPoolEntry, Track
from study.models.consent import ConsentEvent, ConsentForm
from study.models.participants import LoginLink, Participant
from study.models.questionnaires import (
    Answer,
    Item,
    Questionnaire,
    QuestionnaireVersion,
    Response,
)
from study.models.trials import Trial

__all__ = [
    "Answer",
    "Arm",
    "Assignment",
    "AssignmentLock",
    "ConfigSnapshot",
    "ConsentEvent",
    "ConsentForm",
    "Item",
    "LoginLink",
    "Participant",
    "Questionnaire",
    "QuestionnaireVersion",
    "Response",
    "Study",
    "TaskPoolEntry",
    "Track",
    "Trial",
    "User",
]
