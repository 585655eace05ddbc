"""Researchers configure studies in the admin: validation, snapshots, exclusion, track override,
and no access to studies they are not on."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from study.configuration.snapshots import current_snapshot
from study.configuration.validation import configuration_problems
from study.demo.answers import answers_for
from study.enrolment.services import give_consent, submit_screening
from study.models import Participant, Study, TaskPoolEntry, Trial
from study.trials.services import start_trial
from study.trials.tasks import close_overdue_trials
from tests.factories import ResearcherFactory
from tests.study.journey import journey_study, logged_in

pytestmark = pytest.mark.django_db


def test_pool_too_small_is_explained() -> None:
    study = journey_study()
    TaskPoolEntry.objects.filter(study=study, track__code="SDE").exclude(
        template_slug="sde-binary-palindromes"
    ).delete()
    problems = configuration_problems(study)
    assert any("SDE task pool has 1 active task(s)" in p and "needs 4" in p for p in problems)


def test_arm_roles_are_checked() -> None:
    study = journey_study()
    study.arms.filter(condition="B").update(ai_mode="none")
    assert any("Arm B is the AI condition" in p for p in configuration_problems(study))


def test_complete_configuration_has_no_problems() -> None:
    assert configuration_problems(journey_study()) == []


def test_open_recruitment_action_refuses_a_broken_study(admin_client: Client) -> None:
    study = journey_study(status=Study.Status.DRAFT)
    study.arms.filter(condition="B").delete()
    response = admin_client.post(
        "/admin/study/study/",
        {"action": "open_recruitment", "_selected_action": [study.pk]},
        follow=True,
    )
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT
    assert "Add two arms" in response.content.decode()


def test_later_edits_make_a_new_snapshot_version_and_earlier_participants_keep_theirs() -> None:
    study = journey_study()
    first = current_snapshot(study)
    assert current_snapshot(study).pk == first.pk  # unchanged configuration, same snapshot
    study.arms.filter(condition="A").update(time_limit_min=45)
    second = current_snapshot(study)
    assert second.version == first.version + 1
    assert second.sha256 != first.sha256
    assert first.content["arms"]["A"]["time_limit_min"] == 60


def test_trial_time_limit_comes_from_the_participants_snapshot() -> None:
    study = journey_study()
    _, participant = logged_in(study)
    rng = random.Random(3)
    consent = study.consent_form
    assert consent is not None
    give_consent(participant, agree=True, checkboxes={b["id"]: True for b in consent.checkboxes})
    participant.refresh_from_db()
    assert study.screening is not None
    submit_screening(participant, answers_for(study.screening, rng))
    study.arms.update(time_limit_min=5)  # edited after this participant joined
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    trial = start_trial(trial, timezone.now())
    assert trial.deadline is not None
    assert trial.started_at is not None
    assert trial.deadline - trial.started_at == timedelta(minutes=60)


def screened_participant(study: Study) -> Participant:
    _, participant = logged_in(study)
    consent = study.consent_form
    assert consent is not None
    give_consent(participant, agree=True, checkboxes={b["id"]: True for b in consent.checkboxes})
    participant.refresh_from_db()
    assert study.screening is not None
    submit_screening(participant, answers_for(study.screening, random.Random(5)))
    participant.refresh_from_db()
    return participant


def test_beat_task_closes_trials_nobody_returns_to() -> None:
    study = journey_study()
    participant = screened_participant(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    start_trial(trial, timezone.now() - timedelta(hours=2))
    assert close_overdue_trials() == 1
    trial.refresh_from_db()
    assert trial.status == Trial.Status.EXPIRED
    assert close_overdue_trials() == 0  # idempotent


def test_exclusion_with_a_reason_releases_the_slot(admin_client: Client) -> None:
    study = journey_study()
    participant = screened_participant(study)
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


def test_researchers_only_see_their_own_studies() -> None:
    mine = journey_study(title="Mine")
    theirs = journey_study(title="Theirs")
    rita = ResearcherFactory.create()
    mine.researchers.add(rita)
    client = Client()
    client.force_login(rita)
    listing = client.get("/admin/study/study/").content.decode()
    assert "Mine" in listing
    assert "Theirs" not in listing
    assert client.get(f"/admin/study/study/{theirs.pk}/change/").status_code in (302, 404)
    assert client.get(f"/admin/study/study/{mine.pk}/change/").status_code == 200
    assert client.get(f"/admin/study/study/{theirs.pk}/balance/").status_code == 404
