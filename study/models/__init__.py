"""Models of the human study, one module per concern."""

from __future__ import annotations

from study.models.accounts import User
from study.models.assignment import Assignment, AssignmentLock, DesignPreview
from study.models.audit import AuditEvent
from study.models.config import Arm, ConfigSnapshot, Study, TaskPoolEntry, Track
from study.models.consent import ConsentEvent, ConsentForm
from study.models.exports import ExportJob
from study.models.participants import LoginLink, Participant
from study.models.questionnaires import (
    Answer,
    Item,
    Questionnaire,
    QuestionnaireVersion,
    Response,
)
from study.models.retention import RetentionPolicy
from study.models.trials import Trial
from study.models.withdrawal import Withdrawal

__all__ = [
    "Answer",
    "Arm",
    "Assignment",
    "AssignmentLock",
    "AuditEvent",
    "ConfigSnapshot",
    "ConsentEvent",
    "ConsentForm",
    "DesignPreview",
    "ExportJob",
    "Item",
    "LoginLink",
    "Participant",
    "Questionnaire",
    "QuestionnaireVersion",
    "Response",
    "RetentionPolicy",
    "Study",
    "TaskPoolEntry",
    "Track",
    "Trial",
    "User",
    "Withdrawal",
]
