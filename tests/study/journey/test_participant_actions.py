"""Researcher actions on participants in the admin: exclusion with a reason (the plan's slot is
released) and a track override before screening (audited; refused once a plan exists)."""

from __future__ import annotations

import random

import pytest
from django.test import Client

from study.audit import log as audit
from study.demo.answers import answers_for
from study.enrolment.services import give_consent, submit_screening
from study.models import AuditEvent, Participant
from tests.study.helpers import assigned, journey_study, logged_in

pytestmark = pytest.mark.django_db


def test_exclusion_with_a_reason_releases_the_slot(admin_client: Client) -> None:
    study = journey_study()
    _, participant = assigned(study)
    page = admin_client.post(
        "/admin/study/participant/",
        {
            "action": "exclude_participants",
            "_selected_action": [participant.pk],
        },
    )
    assert "reason" in page.content.decode()
    assert '<a href="/admin/study/participant/">Cancel</a>' in page.content.decode()
    admin_client.post(
        "/admin/study/participant/",
        {
            "action": "exclude_participants",
            "_selected_action": [participant.pk],
            "apply": "1",
            "reason": "technical failure during session 1",
        },
    )
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.EXCLUDED
    assert participant.exclusion_reason == "technical failure during session 1"
    assert participant.assignment.released


def test_researcher_overrides_the_track_before_screening(admin_client: Client) -> None:
    study = journey_study()
    _, participant = logged_in(study)
    mle = study.tracks.get(code="MLE")
    admin_client.post(
        "/admin/study/participant/",
        {
            "action": "override_track",
            "_selected_action": [participant.pk],
            "apply": "1",
            "track": mle.pk,
        },
    )
    participant.refresh_from_db()
    assert participant.track == mle
    assert participant.track_overridden
    consent = study.consent_form
    assert consent is not None
    give_consent(participant, agree=True, checkboxes={b["id"]: True for b in consent.checkboxes})
    participant.refresh_from_db()
    assert study.screening is not None
    submit_screening(
        participant, answers_for(study.screening, random.Random(2), track_preference="SDE")
    )
    participant.refresh_from_db()
    assert participant.track == mle  # the override wins over the screening answer


def test_a_track_override_is_audited_and_refused_once_a_plan_exists(admin_client: Client) -> None:
    study = journey_study()
    _, planned = assigned(study)
    _, invited = logged_in(study)
    mle = study.tracks.get(code="MLE")
    admin_client.post(
        "/admin/study/participant/",
        {
            "action": "override_track",
            "_selected_action": [planned.pk, invited.pk],
            "apply": "1",
            "track": mle.pk,
        },
    )
    track_before = planned.track
    planned.refresh_from_db()
    invited.refresh_from_db()
    assert planned.track == track_before
    assert not planned.track_overridden
    assert invited.track == mle
    event = AuditEvent.objects.get(action=audit.TRACK_OVERRIDE)
    assert event.object_id == str(invited.pk)
    assert event.details["track"] == "MLE"
    assert event.actor_type == AuditEvent.ActorType.STAFF
