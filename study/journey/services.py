"""Write operations of the participant journey (the state machine itself is ``flow.py``).

:func:`transition` is the only writer of ``Participant.stage``: every move, whoever makes it,
is checked against ``flow.TRANSITIONS`` there. Moves a participant makes by taking part are
logged; moves that end participation on someone's decision (exclusion, withdrawal) are also
written to the audit log, in the same transaction. Each function here is safe to call twice
(reload, double click, second device).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from study.assignment.services import exclude_for_balance, release_plan
from study.audit import log as audit
from study.journey.flow import Stage, check_transition, session_trials
from study.models import Participant, Trial

logger = logging.getLogger(__name__)

# Moves that are someone's decision about a participant, and their audit action.
AUDITED: dict[str, str] = {Stage.EXCLUDED: audit.EXCLUSION, Stage.WITHDRAWN: audit.WITHDRAWAL}


class SessionNotOpen(Exception):
    """The next session's window has not opened yet, or has closed."""


def transition(
    participant: Participant,
    to: str,
    reason: str,
    *,
    now: datetime | None = None,
    fields: tuple[str, ...] = (),
    by: audit.Actor = None,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Move ``participant`` to stage ``to`` (raises ``IllegalTransition`` for a move the state
    machine does not allow) and save it with ``fields`` changed alongside. Exclusion and
    withdrawal also append an audit event with ``details``."""
    stage_before = participant.stage
    check_transition(stage_before, to)
    participant.stage = to
    participant.last_activity_at = now or timezone.now()
    participant.save(update_fields=["stage", "last_activity_at", *fields])
    logger.info("participant %s: %s -> %s (%s)", participant.pk, stage_before, to, reason)
    if to in AUDITED:
        audit.record(
            AUDITED[to],
            actor=by,
            object_type="participant",
            object_id=participant.pk,
            details={
                "study": participant.study.slug,
                "stage_before": stage_before,
                **(details or {}),
            },
        )


def touch(participant_id: int, now: datetime) -> None:
    """Note activity without a stage change (used by the balancing window and the monitor)."""
    Participant.objects.filter(pk=participant_id).update(last_activity_at=now)


def lock_participant(participant: Participant) -> Participant:
    """The participant's row, locked for the rest of the transaction (on PostgreSQL); the study
    is read along but not locked, so participants of one study never wait for each other."""
    return (
        Participant.objects.select_for_update(of=("self",))
        .select_related("study")
        .get(pk=participant.pk)
    )


@transaction.atomic
def start_session(participant: Participant, now: datetime) -> None:
    """Open the participant's next session (the first one once their plan is assigned)."""
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
    transition(
        participant,
        Stage.IN_SESSION,
        f"session {participant.session_index} started",
        now=now,
        fields=("session_index", "next_session_opens_at", "next_session_closes_at"),
    )


@transaction.atomic
def advance_session(participant: Participant, now: datetime) -> None:
    """After a session's last trial (and its questionnaire): wait for the next session or go to
    the post-study questionnaire. Does nothing while the session still has work in it."""
    participant = lock_participant(participant)
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
    done = f"session {participant.session_index} done"
    if participant.session_index < study.sessions:
        ended = max((t.ended_at for t in trials if t.ended_at), default=now)
        participant.next_session_opens_at = ended + timedelta(
            hours=study.gap_hours - study.window_hours
        )
        participant.next_session_closes_at = ended + timedelta(
            hours=study.gap_hours + study.window_hours
        )
        transition(
            participant,
            Stage.WAITING,
            done,
            now=now,
            fields=("next_session_opens_at", "next_session_closes_at"),
        )
    else:
        transition(participant, Stage.POST_STUDY, done, now=now)


@transaction.atomic
def complete_participation(participant: Participant, now: datetime) -> None:
    """The post-study questionnaire is in: the participant is done (idempotent)."""
    participant = lock_participant(participant)
    if participant.stage == Stage.POST_STUDY:
        participant.ended_at = now
        transition(participant, Stage.COMPLETE, "post-study questionnaire", fields=("ended_at",))


@transaction.atomic
def exclude(participant: Participant, reason: str, *, by: audit.Actor = None) -> None:
    """A researcher excludes a participant (with a reason). A completed participant's plan is
    re-used for the next newcomer (replacement); an active one's slot is released."""
    if not reason.strip():
        raise ValueError("An exclusion needs a reason.")
    participant = lock_participant(participant)
    if participant.stage in (Stage.EXCLUDED, Stage.WITHDRAWN, Stage.DECLINED):
        return
    if hasattr(participant, "assignment"):
        if participant.stage == Stage.COMPLETE:
            exclude_for_balance(participant)
        else:
            release_plan(participant)
    participant.exclusion_reason = reason.strip()
    participant.ended_at = participant.ended_at or timezone.now()
    transition(
        participant,
        Stage.EXCLUDED,
        "excluded by a researcher",
        fields=("exclusion_reason", "ended_at"),
        by=by,
        details={"reason_sha256": audit.sha256_text(participant.exclusion_reason)},
    )
