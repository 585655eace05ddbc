"""Which score reports a participant may see now, under the study's release policy."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from evaluation.report import participant_view
from study.journey.flow import Stage
from study.models import Participant, Study, Trial


def report_released(trial: Trial, now: datetime) -> bool:
    """Whether the participant may see this trial's report under the study's release policy."""
    participant = trial.participant
    policy = participant.study.report_release
    if trial.evaluation is None or trial.evaluation.status != "done":
        return False
    if policy == Study.ReleasePolicy.IMMEDIATELY:
        return True
    if policy == Study.ReleasePolicy.AFTER_SESSION:
        return participant.session_index > trial.session_index or participant.stage in (
            Stage.WAITING,
            Stage.POST_STUDY,
            Stage.COMPLETE,
        )
    if policy == Study.ReleasePolicy.STUDY_END:
        return participant.study.status == Study.Status.CLOSED
    return False


def released_view(trial: Trial, now: datetime) -> dict[str, Any] | None:
    """The participant's view of the trial's report, or None while it is not released."""
    evaluation = trial.evaluation
    if evaluation is None or not evaluation.report or not report_released(trial, now):
        return None
    return participant_view(evaluation.report)


def released_reports(
    participant: Participant, now: datetime
) -> list[tuple[Trial, dict[str, Any] | None]]:
    """Every trial of the participant in order, with its released report (or None)."""
    trials = list(participant.trials.select_related("evaluation").order_by("period"))
    for trial in trials:
        trial.participant = participant
    return [(trial, released_view(trial, now)) for trial in trials]
