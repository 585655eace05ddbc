"""Celery tasks of trials (scheduled by beat; see ``CELERY_BEAT_SCHEDULE``)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from study.models import Trial
from study.trials.services import close_overdue_trial


@shared_task(name="study.close_overdue_trials")
def close_overdue_trials() -> int:
    """Close every active trial past its deadline, even if the participant never comes back:
    the last saved code is submitted (or the trial expires). Idempotent."""
    now = timezone.now()
    closed = 0
    for trial in Trial.objects.filter(status=Trial.Status.ACTIVE, deadline__lt=now).only("pk"):
        closed += close_overdue_trial(trial, now)
    return closed
