"""Score reports: who sees which report when (release policy, per person) and what they see.

The helpers at the top (``add_trial``, ``fake_report``) build graded trials cheaply, without
the task bank or a sandbox; the monitor and results tests use them too.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from evaluation.grading import completion_time_par
from evaluation.models import Evaluation, Submission, TaskInstance, TaskTemplate
from study.models import Participant, Study, Trial
from study.results.reports import efficiency_figure, trial_report
from tests.factories import ResearcherFactory, UserFactory
from tests.study.factories_study import make_participant, make_study

pytestmark = pytest.mark.django_db

VISIBLE_NAME = "test_visible_example_1"
HIDDEN_NAME = "zz_hidden_scale_secret_17"
HIDDEN_MESSAGE = "expected 4217 for input [9, 9, 1]"  # a leak would be a disaster


# --- Shared helpers -----------------------------------------------------------------------
def instance_for(slug: str, difficulty: str = "easy", track: str = "SDE") -> TaskInstance:
    template, _ = TaskTemplate.objects.get_or_create(
        slug=slug,
        version="1.0.0",
        content_hash="0" * 64,
        defaults={"title": slug, "track": track, "difficulty": difficulty},
    )
    instance, _ = TaskInstance.objects.get_or_create(
        template=template, seed=1, defaults={"params": {}, "content_hash": "1" * 64}
    )
    return instance


def fake_report(
    *,
    overall: bool = True,
    partial: float | None = None,
    duration_s: float | None = 1200.0,
    time_ratio: float | None = 1.4,
    threshold: float = 3.0,
    naive_ratio: float = 9.0,
    memory_net_kib: int = 2048,
    memory_threshold_kib: int = 40960,
) -> dict[str, Any]:
    verdict = "OK" if overall else "WA"
    tests = [
        {
            "name": VISIBLE_NAME,
            "kind": "functional",
            "category": "example",
            "visible": True,
            "verdict": "OK",
            "cpu_s": 0.01,
            "wall_s": 0.02,
            "peak_rss_kib": 9000,
            "message": "",
        },
        {
            "name": HIDDEN_NAME,
            "kind": "functional",
            "category": "edge",
            "visible": False,
            "verdict": verdict,
            "cpu_s": 0.02,
            "wall_s": 0.03,
            "peak_rss_kib": 12000,
            "message": "" if overall else HIDDEN_MESSAGE,
        },
        {
            "name": "perf_hidden_large",
            "kind": "performance",
            "category": "scale",
            "visible": False,
            "verdict": "OK",
            "cpu_s": 0.5,
            "wall_s": 0.6,
            "peak_rss_kib": 15000,
            "message": "",
        },
    ]
    passed = sum(t["verdict"] == "OK" for t in tests) + 2
    return {
        "schema_version": "1.0",
        "template": {"slug": "sde-task", "version": "1.0.0", "content_hash": "0" * 64},
        "instance": {"seed": 1, "content_hash": "1" * 64},
        "solution_sha256": "2" * 64,
        "overall_pass": overall,
        "partial_pass": partial if partial is not None else round(passed / 5, 4),
        "checks": {"passed": passed, "total": 5},
        "tests": tests,
        "efficiency": {
            "time_ratio": time_ratio,
            "time_threshold_ratio": threshold,
            "time_ok": time_ratio is not None and time_ratio <= threshold,
            "memory_net_kib": memory_net_kib,
            "memory_threshold_kib": memory_threshold_kib,
            "memory_ok": memory_net_kib <= memory_threshold_kib,
            "borderline": False,
            "rounds": 3,
            "round_ratios": [time_ratio] * 3,
        },
        "calibration": {
            "id": 1,
            "host": "h" * 64,
            "backend": "bwrap",
            "efficient_s": 0.1,
            "naive_s": 0.9,
            "naive_capped": False,
            "ratio": naive_ratio,
        },
        "sandbox": {"backend": "bwrap", "retries": 0},
        "completion_time_s": completion_time_par(duration_s, overall),  # the engine's rule
        "tokens": None,
        "error": None,
    }


def add_trial(
    participant: Participant,
    period: int,
    condition: str = "A",
    *,
    status: str = Trial.Status.SUBMITTED,
    report: dict[str, Any] | None = None,
    evaluation_status: str | None = "done",
    slug: str | None = None,
    difficulty: str = "easy",
    duration_s: float = 1200.0,
    session: int | None = None,
) -> Trial:
    """A trial of ``participant``; ended ones get an evaluation (``evaluation_status``) with
    ``report`` (default: a passing ``fake_report``) unless ``evaluation_status`` is None."""
    slug = slug or f"task-{difficulty}-{period}"
    instance = instance_for(
        slug, difficulty, participant.track.code if participant.track else "SDE"
    )
    started = timezone.now() - timedelta(hours=3)
    ended = status in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)
    evaluation = None
    if ended and evaluation_status is not None:
        submission = Submission.objects.create(
            instance=instance, source=b"x", sha256="3" * 64, source_label="participant"
        )
        evaluation = Evaluation.objects.create(
            submission=submission,
            status=evaluation_status,
            report=(report or fake_report()) if evaluation_status == "done" else None,
            tests_total=3,
            tests_done=3 if evaluation_status == "done" else 0,
        )
    return Trial.objects.create(
        participant=participant,
        session_index=session or (1 + (period - 1) // 2),
        period=period,
        arm=participant.study.arms.get(condition=condition),
        template_slug=slug,
        seed=1,
        instance=instance,
        status=status,
        started_at=started if status != Trial.Status.PENDING else None,
        deadline=started + timedelta(hours=1) if status != Trial.Status.PENDING else None,
        ended_at=started + timedelta(seconds=duration_s) if ended else None,
        evaluation=evaluation,
        submission=evaluation.submission if evaluation else None,
    )


def researcher_client(study: Study | None = None, **fields: Any) -> Client:
    user = ResearcherFactory.create(**fields)
    if study is not None:
        study.researchers.add(user)
    client = Client()
    client.force_login(user)
    return client


def participant_client(participant: Participant) -> Client:
    client = Client()
    client.force_login(participant.user)
    return client


# --- Fixtures -----------------------------------------------------------------------------
@pytest.fixture
def study() -> Study:
    return make_study(report_release=Study.ReleasePolicy.IMMEDIATELY, status="recruiting")


@pytest.fixture
def amber(study: Study) -> Participant:
    user = UserFactory(username="p-amber-fox")
    return make_participant(study, user=user, stage=Participant.Stage.IN_SESSION, session_index=1)


@pytest.fixture
def blue(study: Study) -> Participant:
    user = UserFactory(username="p-blue-owl")
    return make_participant(study, user=user, stage=Participant.Stage.IN_SESSION, session_index=1)


def page(client: Client, trial: Trial) -> Any:
    return client.get(f"/study/results/trials/{trial.pk}/report/")


def as_json(client: Client, trial: Trial) -> Any:
    return client.get(f"/study/results/trials/{trial.pk}/report.json")


def fragment(client: Client, trial: Trial) -> Any:
    """The report body as an htmx fragment (what the workspace and the upload page load)."""
    return client.get(f"/study/results/trials/{trial.pk}/report/fragment/", HTTP_HX_REQUEST="true")


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


# --- The htmx fragment --------------------------------------------------------------------
def test_fragment_is_the_report_body_without_hidden_tests_or_plot(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A", report=fake_report(overall=False))
    client = participant_client(amber)
    response = fragment(client, trial)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html  # a fragment, not a page
    assert "<body" not in html
    assert VISIBLE_NAME in html
    assert HIDDEN_NAME not in html
    assert "perf_hidden_large" not in html
    assert HIDDEN_MESSAGE not in html
    assert "Hidden tests" in html
    assert "Not passed" in html
    assert "4 of 5 checks passed" in html  # what the workspace's browser test waits for
    assert "Time check: <strong>passed</strong>" in html  # the efficiency sentence stays ...
    assert "data-figure" not in html  # ... but the plot (plotly) is only on the full page
    assert "plotly" not in html
    assert f'href="/study/results/trials/{trial.pk}/report/"' in html


def test_page_and_fragment_share_the_report_body(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A")
    client = participant_client(amber)
    page_html = page(client, trial).content.decode()
    fragment_html = fragment(client, trial).content.decode()
    for marker in ('<h2 class="h5">Tests you could see</h2>', "Hidden tests", "Partial pass"):
        assert marker in page_html
        assert marker in fragment_html
    tests = fragment_html[fragment_html.index("<table") : fragment_html.index("</table>")]
    assert tests in page_html
    assert 'data-figure="figure-efficiency"' in page_html


def test_fragment_of_another_participants_trial_is_a_404(
    amber: Participant, blue: Participant
) -> None:
    theirs = add_trial(blue, 1, "A")
    client = participant_client(amber)
    assert fragment(client, theirs).status_code == 404
    assert fragment(client, Trial(pk=999_999)).status_code == 404  # missing == not yours
    researcher = researcher_client(amber.study)  # a researcher is not the participant
    assert fragment(researcher, theirs).status_code == 404


def test_fragment_follows_the_release_policy_like_the_page(
    study: Study, amber: Participant
) -> None:
    queued = add_trial(amber, 1, "A", evaluation_status="queued")
    client = participant_client(amber)
    response = fragment(client, queued)
    assert response.status_code == 403
    html = response.content.decode().strip()
    assert html == '<p class="report-unavailable">Your solution is still being graded.</p>'

    Study.objects.filter(pk=study.pk).update(report_release=Study.ReleasePolicy.AFTER_SESSION)
    done = add_trial(amber, 2, "B")
    response = fragment(client, done)
    assert response.status_code == 403
    assert "finished this session" in response.content.decode()
    Participant.objects.filter(pk=amber.pk).update(stage=Participant.Stage.WAITING)
    assert fragment(client, done).status_code == 200

    Study.objects.filter(pk=study.pk).update(report_release=Study.ReleasePolicy.NEVER)
    response = fragment(client, done)
    assert response.status_code == 403
    assert "does not show score reports" in response.content.decode()
    assert page(client, done).status_code == 403  # the page agrees


def test_fragment_only_answers_get(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A")
    client = participant_client(amber)
    response = client.post(f"/study/results/trials/{trial.pk}/report/fragment/")
    assert response.status_code == 405


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
