"""The participant journey over HTTP: personal link -> consent -> screening -> trials ->
questionnaires -> waiting -> session 2 -> post-study -> complete, with every step resumable."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from study.demo.answers import answers_for
from study.journey.routing import trial_url
from study.models import Participant, Study, Trial
from study.trials.services import start_trial
from study.trials.tasks import close_overdue_trials
from tests.study.helpers import grading_queued, journey_study, logged_in

pytestmark = pytest.mark.django_db(transaction=True)


def consent_payload(study: Study) -> dict[str, Any]:
    form = study.consent_form
    assert form is not None
    data: dict[str, Any] = {"decision": "agree"}
    for box in form.checkboxes:
        data[f"cb_{box['id']}"] = "on"
    return data


def form_payload(answers: dict[str, Any]) -> dict[str, Any]:
    return {k: [str(x) for x in v] if isinstance(v, list) else str(v) for k, v in answers.items()}


def starter(trial: Trial) -> bytes:
    from evaluation.instances import get_instance

    return get_instance(trial.template_slug, trial.seed).participant_files["solution.py"].encode()


def upload(client: Client, trial: Trial) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(
        f"/study/trials/{trial.pk}/",
        {"file-0": SimpleUploadedFile("solution.py", starter(trial), "text/x-python")},
    )


def test_full_journey_over_http() -> None:
    study = journey_study(sessions=2, trials_per_session=2)
    client, participant = logged_in(study)
    rng = random.Random(7)

    assert client.get("/study/journey/")["Location"] == "/study/journey/welcome/"
    assert "consent" in client.get("/study/journey/welcome/").content.decode().lower()
    page = client.get("/study/enrolment/consent/")
    assert page.status_code == 200
    response = client.post("/study/enrolment/consent/", consent_payload(study))
    assert response.status_code == 302
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.CONSENTED
    assert participant.snapshot is not None

    assert client.get("/study/journey/")["Location"] == "/study/questionnaires/screening/"
    screening = study.screening
    assert screening is not None
    answers = answers_for(screening, rng, track_preference="MLE")
    response = client.post("/study/questionnaires/screening/", form_payload(answers))
    assert response.status_code == 302, response.content.decode()[:2000]
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.ASSIGNED
    assert participant.track is not None
    assert participant.track.code == "MLE"
    trials = list(participant.trials.order_by("period"))
    assert len(trials) == 4
    assert {t.arm.condition for t in trials[:2]} == {"A", "B"}  # one of each per session
    assert len({t.template_slug for t in trials}) == 4
    assert len({t.seed for t in trials}) == 4

    with grading_queued():
        for period in (1, 2):
            trial = trials[period - 1]
            assert client.get("/study/journey/")["Location"] == trial_url(trial)
            page = client.get(f"/study/trials/{trial.pk}/")
            assert page.status_code == 200
            assert 'id="start-task"' in page.content.decode()
            trial.refresh_from_db()
            assert trial.status == Trial.Status.PENDING  # a page view starts no clock
            started = client.post(f"/study/trials/{trial.pk}/start/")
            assert started["Location"] == f"/study/trials/{trial.pk}/"
            trial.refresh_from_db()
            assert trial.status == Trial.Status.ACTIVE
            assert trial.deadline is not None
            assert upload(client, trial).status_code == 302
            trial.refresh_from_db()
            assert trial.status == Trial.Status.SUBMITTED
            assert trial.submission is not None
            # A second submission is refused with a message, and nothing changes.
            again = upload(client, trial)
            assert again.status_code == 400
            assert "already been submitted" in again.content.decode()
            status = client.get(f"/study/trials/{trial.pk}/status/").json()
            assert status["grading"]["status"] == "queued"
            assert (
                client.get("/study/journey/")["Location"]
                == f"/study/questionnaires/post-trial/{trial.pk}/"
            )
            post_trial = study.post_trial
            assert post_trial is not None
            response = client.post(
                f"/study/questionnaires/post-trial/{trial.pk}/",
                form_payload(answers_for(post_trial, rng)),
            )
            assert response.status_code == 302

    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.WAITING
    assert client.get("/study/journey/")["Location"] == "/study/journey/waiting/"
    assert "opens on" in client.get("/study/journey/waiting/").content.decode()
    # Early: starting session 2 is refused.
    assert client.post("/study/journey/waiting/").status_code == 200
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.WAITING

    # Inside the window the next session starts (move the window instead of the clock).
    now = timezone.now()
    Participant.objects.filter(pk=participant.pk).update(
        next_session_opens_at=now - timedelta(minutes=5),
        next_session_closes_at=now + timedelta(hours=2),
    )
    assert "Start session" in client.get("/study/journey/waiting/").content.decode()
    assert client.post("/study/journey/waiting/").status_code == 302
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.IN_SESSION
    assert participant.session_index == 2

    with grading_queued():
        for trial in trials[2:]:
            client.post(f"/study/trials/{trial.pk}/start/")
            assert upload(client, trial).status_code == 302
            post_trial = study.post_trial
            assert post_trial is not None
            client.post(
                f"/study/questionnaires/post-trial/{trial.pk}/",
                form_payload(answers_for(post_trial, rng)),
            )

    assert client.get("/study/journey/")["Location"] == "/study/questionnaires/post-study/"
    post_study = study.post_study
    assert post_study is not None
    response = client.post(
        "/study/questionnaires/post-study/", form_payload(answers_for(post_study, rng))
    )
    assert response.status_code == 302
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.COMPLETE
    assert "completed the study" in client.get("/study/journey/done/").content.decode()


def test_invalid_screening_answers_rerender_with_messages() -> None:
    study = journey_study()
    client, participant = logged_in(study)
    client.post("/study/enrolment/consent/", consent_payload(study))
    response = client.post("/study/questionnaires/screening/", {})
    assert response.status_code == 200
    assert "required" in response.content.decode().lower()
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.CONSENTED


def test_declining_consent_ends_participation_politely() -> None:
    study = journey_study()
    client, participant = logged_in(study)
    response = client.post("/study/enrolment/consent/", {"decision": "decline"})
    assert response.status_code == 302
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.DECLINED
    assert "Thank you for considering" in client.get("/study/journey/done/").content.decode()
    assert client.get("/study/questionnaires/screening/")["Location"] == "/study/journey/done/"


def screened(study: Study) -> tuple[Client, Participant]:
    client, participant = logged_in(study)
    client.post("/study/enrolment/consent/", consent_payload(study))
    screening = study.screening
    assert screening is not None
    client.post(
        "/study/questionnaires/screening/", form_payload(answers_for(screening, random.Random(1)))
    )
    participant.refresh_from_db()
    return client, participant


def test_a_trial_past_its_deadline_closes_and_counts_as_the_full_time() -> None:
    study = journey_study()
    client, participant = screened(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    start_trial(trial, timezone.now() - timedelta(minutes=90))
    assert client.get("/study/journey/")["Location"] == trial_url(trial)  # GET closes nothing
    assert close_overdue_trials() == 1  # the minute task of the worker's beat
    assert (
        client.get("/study/journey/")["Location"] == f"/study/questionnaires/post-trial/{trial.pk}/"
    )
    trial.refresh_from_db()
    assert trial.status == Trial.Status.EXPIRED
    assert trial.deadline is not None
    assert trial.ended_at == trial.deadline
    assert trial.duration_s == 3600
    response = upload(client, trial)
    assert response.status_code == 400
    assert "already been submitted" in response.content.decode()


def test_reload_and_a_second_device_resume_at_the_same_step() -> None:
    study = journey_study()
    client, participant = screened(study)
    first = client.get("/study/journey/")["Location"]
    client.post(first + "start")
    # Another device: a fresh login link for the same participant.
    from study.enrolment.accounts import issue_login_link

    other = Client()
    path = issue_login_link(participant)
    other.post(path)
    assert other.get("/study/journey/")["Location"] == first
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    deadline_one = client.get(f"/study/trials/{trial.pk}/status/").json()["deadline"]
    deadline_two = other.get(f"/study/trials/{trial.pk}/status/").json()["deadline"]
    assert deadline_one == deadline_two  # the clock is the server's, started once


def test_participants_never_see_each_others_trials_or_files() -> None:
    study = journey_study()
    client, participant = screened(study)
    other_client, _ = screened(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    for url in (
        f"/study/trials/{trial.pk}/",
        f"/study/trials/{trial.pk}/status/",
        f"/study/trials/{trial.pk}/files/solution.py",
        f"/study/questionnaires/post-trial/{trial.pk}/",
    ):
        assert other_client.get(url).status_code == 404, url
    assert client.get(f"/study/trials/{trial.pk}/files/README.md").status_code == 200
    # Hidden files are not served even to the owner.
    assert client.get(f"/study/trials/{trial.pk}/files/generator.py").status_code == 404


def test_session_window_missed_is_explained() -> None:
    study = journey_study(sessions=2, trials_per_session=2)
    client, participant = screened(study)
    Participant.objects.filter(pk=participant.pk).update(
        stage=Participant.Stage.WAITING,
        session_index=1,
        next_session_opens_at=timezone.now() - timedelta(hours=30),
        next_session_closes_at=timezone.now() - timedelta(hours=26),
    )
    page = client.get("/study/journey/waiting/")
    assert "has closed" in page.content.decode()
    assert client.post("/study/journey/waiting/").status_code == 200
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.WAITING


def test_withdrawal_button_works_at_any_time_and_keeps_or_deletes_per_policy() -> None:
    study = journey_study(withdrawal_policy=Study.WithdrawalPolicy.DELETE)
    client, participant = screened(study)
    assert participant.responses.exists()
    assert "Withdraw" in client.get("/study/journey/withdraw/").content.decode()
    assert client.post("/study/journey/withdraw/").status_code == 302
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.WITHDRAWN
    assert not participant.responses.exists()
    assert participant.assignment.released
    participant.user.refresh_from_db()
    assert participant.user.is_active is False


def test_a_new_consent_version_asks_active_participants_again() -> None:
    from study.enrolment.consent import needs_consent
    from study.models import ConsentForm

    study = journey_study()
    client, participant = screened(study)
    old = study.consent_form
    assert old is not None
    new = ConsentForm.objects.create(
        study=study,
        version="2.0",
        body_markdown=old.body_markdown + "\n\nA new paragraph.",
        checkboxes=old.checkboxes,
    )
    study.consent_form = new
    study.save(update_fields=["consent_form"])
    assert needs_consent(participant)
    assert client.get("/study/journey/")["Location"] == "/study/enrolment/consent/"
    client.post("/study/enrolment/consent/", consent_payload(study))
    first_trial = participant.trials.order_by("period").first()
    assert first_trial is not None
    assert client.get("/study/journey/")["Location"] == trial_url(first_trial)
