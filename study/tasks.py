"""Periodic Celery tasks of the study layer (scheduled by beat; see CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from study import participation
from study.exports import tasks as export_tasks  # noqa: F401 - registers study.build_export
from study.models import Trial


@shared_task(name="study.close_overdue_trials")
def close_overdue_trials() -> int:
    """Close every active trial past its deadline, even if the participant never comes back:
    the last saved code is submitted (or the trial expires). Idempotent."""
    now = timezone.now()
    closed = 0
    for trial in Trial.objects.filter(status=Trial.Status.ACTIVE, deadline__lt=now).only("pk"):
        closed += participation.close_overdue_trial(trial, now)
    return closed
