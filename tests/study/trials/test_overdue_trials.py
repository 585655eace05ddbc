"""The worker's minute task closes trials whose deadline passed, even when nobody comes back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from study.models import Trial
from study.trials.services import start_trial
from study.trials.tasks import close_overdue_trials
from tests.study.helpers import assigned, journey_study

pytestmark = pytest.mark.django_db


def test_beat_task_closes_trials_nobody_returns_to() -> None:
    study = journey_study()
    _, participant = assigned(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    start_trial(trial, timezone.now() - timedelta(hours=2))
    assert close_overdue_trials() == 1
    trial.refresh_from_db()
    assert trial.status == Trial.Status.EXPIRED
    assert close_overdue_trials() == 0  # idempotent
