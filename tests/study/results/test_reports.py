"""Score reports: who sees which report when (release policy, per person) and what they see."""

from __future__ import annotations

import pytest
from django.test import Client

from study.models import Participant, Study, Trial
from study.results.reports import efficiency_figure, trial_report
from tests.study.factories_study import make_study
from tests.study.results.report_helpers import (
    HIDDEN_MESSAGE,
    HIDDEN_NAME,
    VISIBLE_NAME,
    add_trial,
    as_json,
    fake_report,
    fragment,
    page,
    participant_client,
    researcher_client,
)

pytestmark = pytest.mark.django_db


# --- Visibility per person ----------------------------------------------------------------
def test_participant_sees_own_report_without_hidden_tests(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A", report=fake_report(overall=False))
    client = participant_client(amber)

    response = page(client, trial)
    assert response.status_code == 200
    html = response.content.decode()
    assert VISIBLE_NAME in html
    assert HIDDEN_NAME not in html
    assert "perf_hidden_large" not in html
    assert HIDDEN_MESSAGE not in html
    assert "Hidden tests" in html
    assert "vendor/plotly/plotly.min.js" in html
    assert "cdn" not in html.lower()

    body = as_json(client, trial)
    assert body.status_code == 200
    text = body.content.decode()
    assert HIDDEN_NAME not in text
    assert HIDDEN_MESSAGE not in text
    assert "perf_hidden_large" not in text
    data = body.json()
    assert data["released"] is True
    assert [t["name"] for t in data["report"]["tests"]] == [VISIBLE_NAME]
    assert {(h["category"], h["verdict"]) for h in data["report"]["hidden_summary"]} == {
        ("edge", "WA"),
        ("scale", "OK"),
    }
    assert "calibration" not in data["report"]
    assert data["summary"]["overall_pass"] is False
    assert data["summary"]["peak_memory_kib"] == 15000
    assert data["ai"] is None  # condition A has no AI


def test_participant_cannot_open_another_participants_report(
    amber: Participant, blue: Participant
) -> None:
    theirs = add_trial(blue, 1, "A")
    client = participant_client(amber)
    assert page(client, theirs).status_code == 404
    assert as_json(client, theirs).status_code == 404
    assert as_json(client, Trial(pk=999_999)).status_code == 404  # missing == not yours


def test_anonymous_visitor_is_sent_to_sign_in(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A")
    response = Client().get(f"/study/results/trials/{trial.pk}/report/")
    assert response.status_code == 302
    assert fragment(Client(), trial).status_code == 302


def test_ai_trial_report_counts_tokens_and_requests(amber: Participant) -> None:
    from ide_bridge.metrics import register
    from ide_bridge.models import AIRequest

    register()
    trial = add_trial(amber, 2, "B")
    for prompt, completion, status in ((100, 20, "ok"), (50, 5, "ok"), (0, 0, "refused")):
        AIRequest.objects.create(
            trial=trial,
            kind="chat",
            status=status,
            provider="demo",
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
    data = as_json(participant_client(amber), trial).json()
    assert data["ai"] == {"tokens": 175, "ai_requests": 2}
    assert "175" in page(participant_client(amber), trial).content.decode()


# --- Release policies ---------------------------------------------------------------------
def test_immediately_releases_once_grading_is_done(amber: Participant) -> None:
    queued = add_trial(amber, 1, "A", evaluation_status="queued")
    done = add_trial(amber, 2, "B")
    client = participant_client(amber)
    response = page(client, queued)
    assert response.status_code == 403
    assert "still being graded" in response.content.decode()
    assert as_json(client, queued).json() == {
        "released": False,
        "reason": "Your solution is still being graded.",
    }
    assert page(client, done).status_code == 200


def test_after_session_releases_when_the_session_is_over(study: Study, amber: Participant) -> None:
    Study.objects.filter(pk=study.pk).update(report_release=Study.ReleasePolicy.AFTER_SESSION)
    trial = add_trial(amber, 1, "A")
    client = participant_client(amber)
    response = page(client, trial)
    assert response.status_code == 403
    assert "finished this session" in response.content.decode()

    Participant.objects.filter(pk=amber.pk).update(stage=Participant.Stage.WAITING)
    assert page(client, trial).status_code == 200
    assert as_json(client, trial).json()["released"] is True


def test_study_end_releases_when_the_study_is_closed(study: Study, amber: Participant) -> None:
    Study.objects.filter(pk=study.pk).update(report_release=Study.ReleasePolicy.STUDY_END)
    Participant.objects.filter(pk=amber.pk).update(stage=Participant.Stage.COMPLETE)
    trial = add_trial(amber, 1, "A")
    client = participant_client(amber)
    assert page(client, trial).status_code == 403
    assert as_json(client, trial).status_code == 403

    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    assert page(client, trial).status_code == 200


def test_never_keeps_reports_from_participants_but_not_researchers(
    study: Study, amber: Participant
) -> None:
    Study.objects.filter(pk=study.pk).update(
        report_release=Study.ReleasePolicy.NEVER, status=Study.Status.CLOSED
    )
    Participant.objects.filter(pk=amber.pk).update(stage=Participant.Stage.COMPLETE)
    trial = add_trial(amber, 1, "A", report=fake_report(overall=False))
    client = participant_client(amber)
    response = page(client, trial)
    assert response.status_code == 403
    assert "does not show score reports" in response.content.decode()
    assert as_json(client, trial).json()["released"] is False

    researcher = researcher_client(study)
    full = researcher.get(f"/study/results/researcher/trials/{trial.pk}/report/")
    assert full.status_code == 200
    html = full.content.decode()
    assert HIDDEN_NAME in html
    assert HIDDEN_MESSAGE in html
    data = researcher.get(f"/study/results/researcher/trials/{trial.pk}/report.json").json()
    assert data["audience"] == "researcher"
    assert data["report"]["calibration"]["ratio"] == 9.0
    assert HIDDEN_NAME in {t["name"] for t in data["report"]["tests"]}


def test_researchers_see_only_their_studies(study: Study, amber: Participant) -> None:
    trial = add_trial(amber, 1, "A")
    outsider = researcher_client(make_study())
    assert outsider.get(f"/study/results/researcher/trials/{trial.pk}/report/").status_code == 404
    superuser = researcher_client(is_superuser=True)
    assert superuser.get(f"/study/results/researcher/trials/{trial.pk}/report/").status_code == 200
    # A participant is not a researcher, even for their own trial.
    client = participant_client(amber)
    assert client.get(f"/study/results/researcher/trials/{trial.pk}/report/").status_code == 403


# --- The report's content -----------------------------------------------------------------
def test_expired_trial_without_code_fails_with_the_full_hour(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A", status=Trial.Status.EXPIRED, evaluation_status=None)
    data = trial_report(trial, for_participant=False)
    assert data["summary"]["overall_pass"] is False
    assert data["summary"]["partial_pass"] == 0.0
    assert data["summary"]["completion_time_s"] == 3600.0
    assert data["report"] is None


def test_completion_time_is_capped_at_the_arms_time_limit(amber: Participant) -> None:
    # PAR-N: an arm of 45 minutes caps completion at 45 min, and failing counts as 45 min.
    amber.study.arms.filter(condition="A").update(time_limit_min=45)
    expired = add_trial(amber, 1, "A", status=Trial.Status.EXPIRED, evaluation_status=None)
    summary = trial_report(expired, for_participant=True)["summary"]
    assert summary["completion_time_s"] == 2700.0
    assert summary["par_label"] == "PAR-45"
    failed = add_trial(amber, 2, "A", report=fake_report(overall=False, duration_s=None))
    assert trial_report(failed, for_participant=True)["summary"]["completion_time_s"] == 2700.0
    client = participant_client(amber)
    html = page(client, failed).content.decode()
    assert "Completion time (PAR-45)" in html
    assert "Capped at 45 min" in html
    assert "PAR-60" not in html


def test_completion_time_falls_back_to_the_trial_clock(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A", report=fake_report(duration_s=None), duration_s=900)
    assert trial_report(trial, for_participant=True)["summary"]["completion_time_s"] == 900.0
    failed = add_trial(amber, 2, "A", report=fake_report(overall=False, duration_s=None))
    assert trial_report(failed, for_participant=True)["summary"]["completion_time_s"] == 3600.0


def test_efficiency_figure_marks_references_and_thresholds() -> None:
    fig = efficiency_figure(fake_report(time_ratio=1.4, threshold=3.0, naive_ratio=9.0)).to_dict()
    traces = {t["name"]: t for t in fig["data"]}
    assert list(traces["Efficient reference"]["x"]) == [1.0]
    assert list(traces["Naive reference"]["x"]) == [9.0]
    assert list(traces["Threshold \u03c1*"]["x"]) == [3.0, 3.0]
    assert list(traces["Submission"]["x"]) == [1.4]
    assert traces["Submission"]["marker"]["color"] == "#198754"  # within the threshold
    assert list(traces["Extra memory"]["y"]) == [2.0]  # 2048 KiB in MiB
    assert list(traces["Memory threshold"]["y"]) == [40.0, 40.0]
    assert fig["layout"]["xaxis"]["type"] == "log"


def test_efficiency_figure_of_a_participant_view_derives_the_naive_reference() -> None:
    from evaluation.report import participant_view

    view = participant_view(fake_report(time_ratio=5.0, threshold=3.0))
    fig = efficiency_figure(view, label="Your solution").to_dict()
    traces = {t["name"]: t for t in fig["data"]}
    assert list(traces["Naive reference"]["x"]) == [9.0]  # rho*^2 = N/E
    assert traces["Your solution"]["marker"]["color"] == "#dc3545"  # slower than rho*


def test_efficiency_figure_says_when_the_time_limit_was_hit() -> None:
    fig = efficiency_figure(fake_report(time_ratio=None)).to_dict()
    assert "Submission" not in {t["name"] for t in fig["data"]}
    assert any("time limit" in a["text"] for a in fig["layout"]["annotations"])
