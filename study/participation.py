"""Write operations of the participant journey (the state machine lives in ``study.flow``).

Each function runs in one transaction, moves the participant only along allowed transitions
and is safe to call twice (reload, double click, second device).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from study import audit
from study.flow import Stage, check_transition, session_trials
from study.models import Participant, QuestionnaireVersion, Response, Study, Trial, Withdrawal
from study.snapshots import current_snapshot

if TYPE_CHECKING:
    from study.audit import Actor


def _move(participant: Participant, target: str, *fields: str, now: datetime | None = None) -> None:
    check_transition(participant.stage, target)
    participant.stage = target
    participant.last_activity_at = now or timezone.now()
    participant.save(update_fields=["stage", "last_activity_at", *fields])


def touch(participant: Participant, now: datetime) -> None:
    Participant.objects.filter(pk=participant.pk).update(last_activity_at=now)


@transaction.atomic
def give_consent(
    participant: Participant,
    *,
    agree: bool,
    checkboxes: dict[str, bool],
    typed_name: str | None = None,
) -> None:
    """Record a consent decision on the study's current form. A first agreement freezes the
    configuration snapshot the participant will see; declining ends participation."""
    from study.consent import record_consent

    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    study = participant.study
    assert study.consent_form is not None, "the study has no consent form"
    record_consent(
        participant,
        study.consent_form,
        decision="agree" if agree else "decline",
        checkboxes=checkboxes,
        typed_name=typed_name,
    )
    if not agree:
        if participant.stage == Stage.INVITED:
            participant.ended_at = timezone.now()
            _move(participant, Stage.DECLINED, "ended_at")
        else:  # declining a re-consent ends active participation too
            withdraw(participant, channel="declined re-consent")
        return
    if participant.stage == Stage.INVITED:
        participant.snapshot = current_snapshot(study)
        _move(participant, Stage.CONSENTED, "snapshot")


@transaction.atomic
def submit_screening(participant: Participant, cleaned_data: dict[str, Any]) -> Response:
    """Save the screening answers, decide the track (unless a researcher chose it) and assign a
    counterbalanced plan."""
    from study.assignment import assign_plan
    from study.questionnaires import decide_track, save_response

    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    study = participant.study
    version = study.screening
    assert version is not None, "the study has no screening questionnaire"
    response = save_response(participant, version, cleaned_data)
    if participant.stage != Stage.CONSENTED:
        return response  # a repeated submission: nothing more to do
    if not participant.track_overridden:
        participant.track = decide_track(study, response)
    _move(participant, Stage.SCREENED, "track")
    assign_plan(participant)
    _move(participant, Stage.ASSIGNED)
    return response


def trial_time_limit(trial: Trial) -> timedelta:
    """From the participant's frozen snapshot, so later edits of the arm do not apply."""
    snapshot = trial.participant.snapshot
    arms = snapshot.content.get("arms", {}) if snapshot else {}
    minutes = arms.get(trial.arm.condition, {}).get("time_limit_min", trial.arm.time_limit_min)
    return timedelta(minutes=int(minutes))


def arm_config(trial: Trial) -> dict[str, Any]:
    snapshot = trial.participant.snapshot
    arms = snapshot.content.get("arms", {}) if snapshot else {}
    frozen = arms.get(trial.arm.condition)
    if frozen:
        return dict(frozen)
    arm = trial.arm
    return {
        "name": arm.name,
        "ai_mode": arm.ai_mode,
        "ide": arm.ide,
        "time_limit_min": arm.time_limit_min,
        "model": arm.model,
        "token_cap": arm.token_cap,
    }


@transaction.atomic
def start_trial(trial: Trial, now: datetime) -> Trial:
    """Opening a trial starts its clock (once). The first trial of a session starts the session."""
    trial = Trial.objects.select_for_update().select_related("participant", "arm").get(pk=trial.pk)
    participant = trial.participant
    if trial.status != Trial.Status.PENDING:
        return trial
    if participant.stage in (Stage.ASSIGNED, Stage.WAITING):
        start_session(participant, now)
    trial.status = Trial.Status.ACTIVE
    trial.started_at = now
    trial.deadline = now + trial_time_limit(trial)
    trial.save(update_fields=["status", "started_at", "deadline"])
    return trial


@transaction.atomic
def start_session(participant: Participant, now: datetime) -> None:
    participant.refresh_from_db(
        fields=["stage", "session_index", "next_session_opens_at", "next_session_closes_at"]
    )
    if participant.stage == Stage.IN_SESSION:
        return  # already started (double click, second device)
    if participant.stage == Stage.ASSIGNED:
        participant.session_index = 1
    elif participant.stage == Stage.WAITING:
        opens, closes = participant.next_session_opens_at, participant.next_session_closes_at
        if opens and now < opens:
            raise SessionNotOpen(f"The next session opens at {opens:%Y-%m-%d %H:%M} UTC.")
        if closes and now > closes:
            raise SessionNotOpen("The window for the next session has closed.")
        participant.session_index += 1
    participant.next_session_opens_at = participant.next_session_closes_at = None
    _move(
        participant,
        Stage.IN_SESSION,
        "session_index",
        "next_session_opens_at",
        "next_session_closes_at",
        now=now,
    )


class SessionNotOpen(Exception):
    pass


class TrialClosed(Exception):
    """The trial no longer accepts submissions."""


def _close_if_overdue(trial: Trial, now: datetime) -> None:
    """Past the deadline, close the trial in its own transaction (so the closing survives the
    refusal that follows) and refuse."""
    if close_overdue_trial(trial, now):
        raise TrialClosed("The time for this trial ran out; your last saved code was submitted.")


def submit_trial(
    trial: Trial, source: bytes, now: datetime, *, label: str = "participant"
) -> Trial:
    """Store the solution and queue its grading. A second submission is refused; past the
    deadline the trial closes instead (with its last saved code, if any)."""
    _close_if_overdue(trial, now)
    return _submit_trial(trial, source, now, label)


@transaction.atomic
def _submit_trial(trial: Trial, source: bytes, now: datetime, label: str) -> Trial:
    from evaluation.services import submit_solution

    trial = Trial.objects.select_for_update().select_related("participant", "arm").get(pk=trial.pk)
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
    evaluation = submit_solution(
        template_slug=trial.template_slug,
        seed=trial.seed,
        source=source,
        source_label=label,
        duration_s=(now - trial.started_at).total_seconds(),
    )
    trial.submission = evaluation.submission
    trial.evaluation = evaluation
    trial.status = Trial.Status.SUBMITTED
    trial.ended_at = now
    trial.save(update_fields=["submission", "evaluation", "status", "ended_at"])
    touch(trial.participant, now)
    return trial


@transaction.atomic
def close_overdue_trial(trial: Trial, now: datetime) -> bool:
    """Close an active trial past its deadline: submit the last saved code, or mark it expired.
    Either way it counts as the full time limit (PAR). Returns True if it closed the trial."""
    from evaluation.services import submit_solution

    trial = Trial.objects.select_for_update().get(pk=trial.pk)
    if trial.status != Trial.Status.ACTIVE or trial.deadline is None or now <= trial.deadline:
        return False
    fields = ["status", "ended_at"]
    if trial.draft_code.strip():
        assert trial.started_at is not None
        evaluation = submit_solution(
            template_slug=trial.template_slug,
            seed=trial.seed,
            source=trial.draft_code.encode(),
            source_label="participant:auto-submitted",
            duration_s=(trial.deadline - trial.started_at).total_seconds(),
        )
        trial.submission, trial.evaluation = evaluation.submission, evaluation
        fields += ["submission", "evaluation"]
    trial.status = Trial.Status.EXPIRED
    trial.ended_at = trial.deadline
    trial.save(update_fields=fields)
    return True


@transaction.atomic
def submit_post_trial(participant: Participant, trial: Trial, cleaned: dict[str, Any]) -> Response:
    from study.questionnaires import save_response

    version = participant.study.post_trial
    assert version is not None
    response = save_response(participant, version, cleaned, trial=trial)
    advance_session(participant, timezone.now())
    return response


@transaction.atomic
def advance_session(participant: Participant, now: datetime) -> None:
    """After a session's last trial (and its questionnaire): wait for the next session or go to
    the post-study questionnaire."""
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.stage != Stage.IN_SESSION:
        return
    study = participant.study
    trials = session_trials(participant, participant.session_index)
    if any(t.status in (Trial.Status.PENDING, Trial.Status.ACTIVE) for t in trials):
        return
    if study.post_trial_id is not None:
        answered = set(
            participant.responses.filter(version_id=study.post_trial_id).values_list(
                "trial_id", flat=True
            )
        )
        if any(t.pk not in answered for t in trials):
            return
    if participant.session_index < study.sessions:
        ended = max((t.ended_at for t in trials if t.ended_at), default=now)
        participant.next_session_opens_at = ended + timedelta(
            hours=study.gap_hours - study.window_hours
        )
        participant.next_session_closes_at = ended + timedelta(
            hours=study.gap_hours + study.window_hours
        )
        _move(
            participant, Stage.WAITING, "next_session_opens_at", "next_session_closes_at", now=now
        )
    else:
        _move(participant, Stage.POST_STUDY, now=now)


@transaction.atomic
def submit_post_study(participant: Participant, cleaned: dict[str, Any]) -> Response:
    from study.questionnaires import save_response

    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    version = participant.study.post_study
    assert version is not None
    response = save_response(participant, version, cleaned)
    if participant.stage == Stage.POST_STUDY:
        participant.ended_at = timezone.now()
        _move(participant, Stage.COMPLETE, "ended_at")
    return response


def withdraw(
    participant: Participant, *, channel: str = "participant", by: Actor = None
) -> Withdrawal | None:
    """Stop participation at once. Data is kept or deleted per the study's policy; the plan's
    slot is released so balance counts move on; a tombstone and an audit event are written
    (``study.withdrawal``). None if the participation had already ended."""
    from study.withdrawal import withdraw_participant

    return withdraw_participant(participant, channel=channel, by=by)


def delete_research_data(participant: Participant) -> dict[str, int]:
    """Remove answers, working code, trial telemetry and contact data; returns counts."""
    from study.withdrawal import delete_research_data as delete

    return delete(participant)


@transaction.atomic
def exclude(participant: Participant, reason: str, *, by: Actor = None) -> None:
    """A researcher excludes a participant (with a reason). A completed participant's plan is
    re-used for the next newcomer (replacement); an active one's slot is released."""
    from study.assignment import exclude_for_balance, release_plan

    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if not reason.strip():
        raise ValueError("An exclusion needs a reason.")
    if participant.stage in (Stage.EXCLUDED, Stage.WITHDRAWN, Stage.DECLINED):
        return
    if hasattr(participant, "assignment"):
        if participant.stage == Stage.COMPLETE:
            exclude_for_balance(participant)
        else:
            release_plan(participant)
    participant.exclusion_reason = reason.strip()
    participant.ended_at = participant.ended_at or timezone.now()
    stage_before, participant.stage = participant.stage, Stage.EXCLUDED  # from every stage
    participant.save(update_fields=["stage", "exclusion_reason", "ended_at"])
    audit.record(
        audit.EXCLUSION,
        actor=by,
        object_type="participant",
        object_id=participant.pk,
        details={
            "study": participant.study.slug,
            "stage_before": stage_before,
            "reason_sha256": audit.sha256_text(participant.exclusion_reason),
        },
    )


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


def versions_answered(participant: Participant, version: QuestionnaireVersion) -> bool:
    return participant.responses.filter(version=version, trial__isnull=True).exists()


MAX_DRAFT_BYTES = 256 * 1024


def save_draft(trial: Trial, code: str, now: datetime) -> Trial:
    """Autosave: keep the participant's latest code on the server (used for auto-submission at
    the deadline, reload and a second device). Refused once the trial is closed."""
    _close_if_overdue(trial, now)
    return _save_draft(trial, code, now)


@transaction.atomic
def _save_draft(trial: Trial, code: str, now: datetime) -> Trial:
    trial = Trial.objects.select_for_update().select_related("participant").get(pk=trial.pk)
    if trial.status != Trial.Status.ACTIVE or not trial.participant.is_active:
        raise TrialClosed("This trial is closed; changes are no longer saved.")
    if trial.deadline is not None and now > trial.deadline:
        raise TrialClosed("The time for this trial ran out.")
    if len(code.encode()) > MAX_DRAFT_BYTES:
        raise ValueError(f"solution.py is larger than the {MAX_DRAFT_BYTES // 1024} KiB limit.")
    trial.draft_code = code
    trial.draft_saved_at = now
    trial.save(update_fields=["draft_code", "draft_saved_at"])
    Participant.objects.filter(pk=trial.participant_id).update(last_activity_at=now)
    return trial
