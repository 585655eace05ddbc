"""Deleting IDE data when the study layer asks (withdrawal with deletion, retention purges).

The study app cannot import this app, so it sends signals (``study.signals``); these receivers
do the work and report counts, which end up in the tombstone and the audit log.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ide_bridge.models import AIRequest, IntegrityFlag, TrialEvent, WorkspaceUpload


def delete_participant_data(sender: Any, trial_ids: list[int], **_: Any) -> dict[str, int]:
    """Everything the IDE kept for these trials: telemetry, flags, AI requests, uploads."""
    counts = {}
    for label, model in (
        ("telemetry_events", TrialEvent),
        ("integrity_flags", IntegrityFlag),
        ("ai_requests", AIRequest),
        ("workspace_uploads", WorkspaceUpload),
    ):
        counts[label], _ = model.objects.filter(trial_id__in=trial_ids).delete()
    return counts


def purge_telemetry(
    sender: Any, trial_ids: list[int], before: datetime, dry_run: bool = False, **_: Any
) -> dict[str, int]:
    events = TrialEvent.objects.filter(trial_id__in=trial_ids, server_ts__lt=before)
    if dry_run:
        return {"telemetry_events": events.count()}
    deleted, _ = events.delete()
    return {"telemetry_events": deleted}
