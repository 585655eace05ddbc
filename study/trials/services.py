"""Write operations of a trial: start its clock, save a draft, submit, close it at the deadline.

The clock is the server's: ``start_trial`` (a POST, never a page view) sets the deadline from
the participant's frozen arm; past it, submissions and drafts are refused and the trial is
closed with its last saved files (``close_overdue_trial``, also run every minute by the
``study.close_overdue_trials`` task). Closing a session's last trial moves the participant on
(``journey.services.advance_session``).

Files are maps of editable path -> text (``study.trials.files``): a draft is saved file by file
(``save_draft`` merges what it gets into ``Trial.draft_files``), a submission carries the whole
editable set. Bad paths and oversize files raise ``FilesRefused`` / ``FilesTooLarge``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from evaluation.services import submit_solution
from evaluation.submissions import BadSubmission
from study.configuration.snapshots import frozen_arm
from study.journey.flow import Stage
from study.journey.services import advance_session, start_session, touch
from study.models import Arm, Trial
from study.models.config import MODEL_WRITTEN_CHANNELS
from study.trials.files import (
    FilesRefused,
    check_files,
    check_total,
    current_files,
    instance_of,
)

# How a refusal names a channel, and how it points to the ones the trial takes.
_CHANNEL_REFUSED = {
    Arm.Channel.EDITOR: "from the in-browser editor",
    Arm.Channel.UPLOAD: "as an uploaded file",
    Arm.Channel.SCRIPT: "from the submit script",
}
_CHANNEL_USE = {
    Arm.Channel.EDITOR: "the in-browser workspace",
    Arm.Channel.UPLOAD: "the upload page",
    Arm.Channel.SCRIPT: "the submit script",
}


class TrialClosed(Exception):
    """The trial no longer accepts submissions or drafts (message is for the participant)."""


class ChannelNotAllowed(Exception):
    """The trial's arm takes no code through this channel (message is for the participant)."""


def arm_config(trial: Trial) -> dict[str, Any]:
    """The trial's arm as the participant's frozen snapshot has it (later edits of the arm do
    not reach participants who already joined)."""
    snapshot = trial.participant.snapshot
    return frozen_arm(snapshot.content if snapshot else None, trial.arm)


def allowed_channels(trial: Trial) -> list[str]:
    """The submission channels of the trial's frozen arm. A feedback-only arm takes only those
    that carry the assistant's code, whatever its setting says (validation keeps the two in
    line; this also covers arms edited outside the admin)."""
    config = arm_config(trial)
    channels = config.get("submission_channels")
    allowed = [c for c in Arm.Channel.values if not isinstance(channels, list) or c in channels]
    if config.get("ai_mode") == Arm.AIMode.FEEDBACK:
        allowed = [c for c in allowed if c in MODEL_WRITTEN_CHANNELS]
    return allowed


def check_channel(trial: Trial, channel: str) -> None:
    """Raise ``ChannelNotAllowed`` unless the trial takes code through ``channel``."""
    allowed = allowed_channels(trial)
    if channel in allowed:
        return
    message = f"This task does not accept code {_CHANNEL_REFUSED[Arm.Channel(channel)]}."
    if arm_config(trial).get("ai_mode") == Arm.AIMode.FEEDBACK:
        message += " In this condition only code the assistant wrote is submitted."
    if allowed:
        message += " Use " + " or ".join(_CHANNEL_USE[Arm.Channel(c)] for c in allowed) + "."
    raise ChannelNotAllowed(message)


def trial_time_limit(trial: Trial) -> timedelta:
    return timedelta(minutes=int(arm_config(trial)["time_limit_min"]))


def _locked(trial: Trial) -> Trial:
    """The trial's row, locked for the rest of the transaction (only that row: the study and
    snapshot are read along, and the snapshot join is an outer one PostgreSQL cannot lock)."""
    return (
        Trial.objects.select_for_update(of=("self",))
        .select_related("participant__study", "participant__snapshot", "arm")
        .get(pk=trial.pk)
    )


@transaction.atomic
def start_trial(trial: Trial, now: datetime) -> Trial:
    """Start the trial's clock (once; a second call returns the started trial). The first
    trial of a session starts the session, which raises ``SessionNotOpen`` outside its
    window."""
    trial = _locked(trial)
    if trial.status != Trial.Status.PENDING:
        return trial
    if trial.participant.stage in (Stage.ASSIGNED, Stage.WAITING):
        start_session(trial.participant, now)
    trial.status = Trial.Status.ACTIVE
    trial.started_at = now
    trial.deadline = now + trial_time_limit(trial)
    trial.save(update_fields=["status", "started_at", "deadline"])
    return trial


def _close_if_overdue(trial: Trial, now: datetime) -> None:
    """Past the deadline, close the trial in its own transaction (so the closing survives the
    refusal that follows) and refuse."""
    if close_overdue_trial(trial, now):
        raise TrialClosed("The time for this trial ran out; your last saved code was submitted.")


def submit_trial(
    trial: Trial,
    files: Mapping[str, str | bytes],
    now: datetime,
    *,
    channel: str,
    label: str = "participant",
) -> Trial:
    """Store the editable files that came through ``channel`` (an ``Arm.Channel``) and queue
    their grading. ``files`` is the whole editable set (path -> text; an editable path left out
    is the starter's, the engine's rule). A channel the arm does not allow raises
    ``ChannelNotAllowed``; a bad path or size ``FilesRefused``/``FilesTooLarge``; a second
    submission is refused; past the deadline the trial closes instead (with its last saved
    files, if any)."""
    check_channel(trial, channel)
    instance = instance_of(trial)
    checked = check_files(instance, files)
    check_total(instance.starter_files() | checked)
    _close_if_overdue(trial, now)
    return _submit_trial(trial, checked, now, label)


def _engine_submit(trial: Trial, files: dict[str, str], **kwargs: Any) -> Any:
    try:
        return submit_solution(
            template_slug=trial.template_slug, seed=trial.seed, files=files, **kwargs
        )
    except BadSubmission as exc:  # checked above; the engine's own net
        raise FilesRefused(str(exc)) from None


@transaction.atomic
def _submit_trial(trial: Trial, files: dict[str, str], now: datetime, label: str) -> Trial:
    trial = _locked(trial)
    if not trial.participant.is_active:
        raise TrialClosed("Your participation has ended; submissions are no longer accepted.")
    if trial.status in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED):
        raise TrialClosed(
            "This trial has already been submitted; a second submission is not accepted."
        )
    if trial.status == Trial.Status.PENDING:
        raise TrialClosed("This trial has not started yet.")
    assert trial.deadline is not None
    assert trial.started_at is not None
    if now > trial.deadline:  # closed by another request in the meantime
        raise TrialClosed("The time for this trial ran out.")
    evaluation = _engine_submit(
        trial,
        files,
        source_label=label,
        duration_s=(now - trial.started_at).total_seconds(),
        time_limit_s=trial_time_limit(trial).total_seconds(),  # PAR-N caps at the arm's limit
    )
    trial.submission = evaluation.submission
    trial.evaluation = evaluation
    trial.status = Trial.Status.SUBMITTED
    trial.ended_at = now
    trial.save(update_fields=["submission", "evaluation", "status", "ended_at"])
    touch(trial.participant_id, now)
    advance_session(trial.participant, now)
    return trial


@transaction.atomic
def close_overdue_trial(trial: Trial, now: datetime) -> bool:
    """Close an active trial past its deadline: submit the last saved files (the draft over the
    starter) when the participant saved at least one file that is not blank, else mark it
    expired without a submission. Either way it counts as the full time limit (PAR). Returns
    True if it closed the trial."""
    trial = _locked(trial)
    if trial.status != Trial.Status.ACTIVE or trial.deadline is None or now <= trial.deadline:
        return False
    fields = ["status", "ended_at"]
    if any(str(text).strip() for text in (trial.draft_files or {}).values()):
        assert trial.started_at is not None
        evaluation = _engine_submit(
            trial,
            current_files(trial),
            source_label="participant:auto-submitted",
            duration_s=(trial.deadline - trial.started_at).total_seconds(),
            time_limit_s=trial_time_limit(trial).total_seconds(),
        )
        trial.submission, trial.evaluation = evaluation.submission, evaluation
        fields += ["submission", "evaluation"]
    trial.status = Trial.Status.EXPIRED
    trial.ended_at = trial.deadline
    trial.save(update_fields=fields)
    advance_session(trial.participant, now)
    return True


def save_draft(trial: Trial, files: Mapping[str, str], now: datetime) -> Trial:
    """Autosave: keep the participant's latest text of the editable files in ``files`` on the
    server (used for auto-submission at the deadline, reload and a second device). Only the
    files sent change; the others keep their saved text. Refused once the trial is closed;
    bad paths and sizes raise ``FilesRefused``/``FilesTooLarge`` and save nothing."""
    checked = check_files(instance_of(trial), files)
    _close_if_overdue(trial, now)
    return _save_draft(trial, checked, now)


@transaction.atomic
def _save_draft(trial: Trial, files: dict[str, str], now: datetime) -> Trial:
    trial = _locked(trial)
    if trial.status != Trial.Status.ACTIVE or not trial.participant.is_active:
        raise TrialClosed("This trial is closed; changes are no longer saved.")
    if trial.deadline is not None and now > trial.deadline:
        raise TrialClosed("The time for this trial ran out.")
    merged = {**(trial.draft_files or {}), **files}
    check_total(current_files(trial) | merged)
    trial.draft_files = dict(sorted(merged.items()))
    trial.draft_saved_at = now
    trial.save(update_fields=["draft_files", "draft_saved_at"])
    touch(trial.participant_id, now)
    return trial
