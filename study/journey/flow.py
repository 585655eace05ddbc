"""The participant journey as an explicit state machine.

Stages (``Participant.Stage``) and the only transitions allowed between them:

    invited -> consented | declined
    consented -> screened
    screened -> assigned
    assigned -> in_session               (session 1 starts with the first trial)
    in_session -> waiting | post_study   (after the session's last trial and its questionnaire)
    waiting -> in_session                (the next session opens, within its window)
    post_study -> complete
    any active stage -> withdrawn | excluded
    complete -> excluded                 (a researcher excludes a completed participant)

``services.transition`` is the only writer of ``Participant.stage`` and checks every move here.

``next_step`` maps a participant (and the clock) to the page they must see now, so a reload,
logout or another device always resumes at the right step.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from study.models import Participant, Trial

Stage = Participant.Stage

TRANSITIONS: dict[str, set[str]] = {
    Stage.INVITED: {Stage.CONSENTED, Stage.DECLINED},
    Stage.CONSENTED: {Stage.SCREENED},
    Stage.SCREENED: {Stage.ASSIGNED},
    Stage.ASSIGNED: {Stage.IN_SESSION},
    Stage.IN_SESSION: {Stage.WAITING, Stage.POST_STUDY},
    Stage.WAITING: {Stage.IN_SESSION},
    Stage.POST_STUDY: {Stage.COMPLETE},
    Stage.COMPLETE: {Stage.EXCLUDED},
    Stage.DECLINED: set(),
    Stage.WITHDRAWN: set(),
    Stage.EXCLUDED: set(),
}
ACTIVE = {
    s
    for s in TRANSITIONS
    if s not in {Stage.COMPLETE, Stage.DECLINED, Stage.WITHDRAWN, Stage.EXCLUDED}
}
for _stage in ACTIVE:
    TRANSITIONS[_stage] |= {Stage.WITHDRAWN, Stage.EXCLUDED}


class IllegalTransition(Exception):
    pass


def check_transition(current: str, target: str) -> None:
    if target not in TRANSITIONS.get(current, set()):
        raise IllegalTransition(f"a participant cannot go from {current} to {target}")


class Page(enum.StrEnum):
    WELCOME = "welcome"
    CONSENT = "consent"
    SCREENING = "screening"
    TRIAL = "trial"
    POST_TRIAL = "post_trial"
    WAITING = "waiting"
    SESSION_MISSED = "session_missed"
    POST_STUDY = "post_study"
    COMPLETE = "complete"
    DECLINED = "declined"
    WITHDRAWN = "withdrawn"
    EXCLUDED = "excluded"


@dataclass(frozen=True)
class Step:
    page: Page
    trial: Trial | None = None


def session_trials(participant: Participant, session_index: int) -> list[Trial]:
    return [t for t in participant.trials.all() if t.session_index == session_index]


def pending_post_trial(participant: Participant, trials: list[Trial]) -> Trial | None:
    """A finished trial whose post-trial questionnaire is still unanswered."""
    study = participant.study
    if study.post_trial_id is None:
        return None
    answered = set(
        participant.responses.filter(version_id=study.post_trial_id).values_list(
            "trial_id", flat=True
        )
    )
    for trial in trials:
        if (
            trial.status in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)
            and trial.pk not in answered
        ):
            return trial
    return None


def next_step(participant: Participant, now: datetime, *, needs_consent: bool) -> Step:
    stage = participant.stage
    terminal: dict[str, Page] = {
        Stage.COMPLETE: Page.COMPLETE,
        Stage.DECLINED: Page.DECLINED,
        Stage.WITHDRAWN: Page.WITHDRAWN,
        Stage.EXCLUDED: Page.EXCLUDED,
    }
    if stage in terminal:
        return Step(terminal[stage])
    if stage == Stage.INVITED:
        return Step(Page.WELCOME)
    if needs_consent:
        return Step(Page.CONSENT)
    if stage == Stage.CONSENTED:
        return Step(Page.SCREENING)
    if stage == Stage.POST_STUDY:
        return Step(Page.POST_STUDY)
    if stage == Stage.WAITING:
        closes = participant.next_session_closes_at
        if closes is not None and now > closes:
            return Step(Page.SESSION_MISSED)
        return Step(Page.WAITING)
    trials = session_trials(participant, max(participant.session_index, 1))
    pending = pending_post_trial(participant, trials)
    if pending is not None:
        return Step(Page.POST_TRIAL, pending)
    for trial in trials:
        if trial.status in (Trial.Status.PENDING, Trial.Status.ACTIVE):
            return Step(Page.TRIAL, trial)
    # Every trial of the session is done and answered: the service moves the stage on.
    return Step(Page.WAITING)
