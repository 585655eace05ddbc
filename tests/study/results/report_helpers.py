"""Graded trials built cheaply, without the task bank or a sandbox (``add_trial``,
``fake_report``), and the report URLs: used by the report, monitor and results tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from evaluation.grading import completion_time_par
from evaluation.models import Evaluation, Submission, TaskInstance, TaskTemplate
from study.models import Participant, Study, Trial
from tests.factories import ResearcherFactory

VISIBLE_NAME = "test_visible_example_1"
HIDDEN_NAME = "zz_hidden_scale_secret_17"
HIDDEN_MESSAGE = "expected 4217 for input [9, 9, 1]"  # a leak would be a disaster


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
            instance=instance,
            files={"solution.py": "x"},
            sha256="3" * 64,
            source_label="participant",
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


def page(client: Client, trial: Trial) -> Any:
    return client.get(f"/study/results/trials/{trial.pk}/report/")


def as_json(client: Client, trial: Trial) -> Any:
    return client.get(f"/study/results/trials/{trial.pk}/report.json")


def fragment(client: Client, trial: Trial) -> Any:
    """The report body as an htmx fragment (what the workspace and the upload page load)."""
    return client.get(f"/study/results/trials/{trial.pk}/report/fragment/", HTTP_HX_REQUEST="true")
