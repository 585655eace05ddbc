"""Models of the IDE bridge: access tokens, telemetry, AI requests, uploaded workspaces."""

from __future__ import annotations

from ide_bridge.models.access import TrialAccess
from ide_bridge.models.ai import AIRequest, AITokenReservation
from ide_bridge.models.telemetry import IntegrityFlag, TrialEvent
from ide_bridge.models.uploads import WorkspaceUpload

__all__ = [
    "AIRequest",
    "AITokenReservation",
    "IntegrityFlag",
    "TrialAccess",
    "TrialEvent",
    "WorkspaceUpload",
]
