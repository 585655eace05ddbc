"""Write operations of enrolment: the consent decision and the screening questionnaire.

Login links, recruitment and participant accounts are in ``accounts``; recording one consent
event (and its rendered text) is ``consent.record_consent``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from study.assignment.services import assign_plan
from study.audit.withdrawal import withdraw_participant
from study.configuration.snapshots import current_snapshot
from study.enrolment.consent import record_consent
from study.journey.flow import Stage
from study.journey.services import lock_participant, transition
from study.models import Participant, Response
from study.questionnaires.scoring import decide_track
from study.questionnaires.services import save_response


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
    participant = lock_participant(participant)
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
            transition(participant, Stage.DECLINED, "declined consent", fields=("ended_at",))
        else:  # declining a re-consent ends active participation too
            withdraw_participant(participant, channel="declined re-consent")
        return
    if participant.stage == Stage.INVITED:
        participant.snapshot = current_snapshot(study)
        transition(participant, Stage.CONSENTED, "consent given", fields=("snapshot",))


@transaction.atomic
def submit_screening(participant: Participant, cleaned_data: Mapping[str, Any]) -> Response:
    """Save the screening answers, decide the track (unless a researcher chose it) and assign a
    counterbalanced plan."""
    participant = lock_participant(participant)
    study = participant.study
    version = study.screening
    assert version is not None, "the study has no screening questionnaire"
    response = save_response(participant, version, cleaned_data)
    if participant.stage != Stage.CONSENTED:
        return response  # a repeated submission: nothing more to do
    if not participant.track_overridden:
        participant.track = decide_track(study, response)
    transition(participant, Stage.SCREENED, "screening answered", fields=("track",))
    assign_plan(participant)
    transition(participant, Stage.ASSIGNED, "plan assigned")
    return response
