"""What counts in a sweep's results: graded runs by their report, a run that left nothing to
grade as a failure, platform failures and unfinished runs not at all; interventions by category."""

from __future__ import annotations

import pytest

from evaluation.llm.results import sweep_results
from evaluation.llm.units import plan_sweep
from evaluation.models import AgentRun, Evaluation, Intervention, ModelEndpoint, Submission
from tests.evaluation.grading_fixtures import CHEAP_TEMPLATE

pytestmark = pytest.mark.django_db


def test_only_finished_runs_are_samples_and_interventions_are_counted() -> None:
    endpoint = ModelEndpoint.objects.create(name="m", base_url="http://127.0.0.1:9/v1", model="m")
    sweep = plan_sweep(
        endpoint=endpoint,
        condition="C1",
        instances=[(CHEAP_TEMPLATE, 1), (CHEAP_TEMPLATE, 2)],
        samples=2,
        attempts=3,
    )
    graded, empty, broken, waiting = sweep.runs.order_by("instance__seed", "sample")
    submission = Submission.objects.create(
        instance=graded.instance, files={}, sha256="0" * 64, source_label="llm:m"
    )
    report = {"overall_pass": True, "partial_pass": 1.0, "completion_time_s": 300.0}
    evaluation = Evaluation.objects.create(submission=submission, status="done", report=report)
    AgentRun.objects.filter(pk=graded.pk).update(
        status="done", evaluation=evaluation, attempts_used=3, prompt_tokens=100, cost=0.5
    )
    AgentRun.objects.filter(pk=empty.pk).update(
        status="done", stop_reason="no_action", attempts_used=1, prompt_tokens=40
    )
    AgentRun.objects.filter(pk=broken.pk).update(status="failed", prompt_tokens=7)
    for category in ("ports", "ports", "dependency"):
        Intervention.objects.create(run=graded, category=category, source="manual", message="x")

    results = sweep_results(sweep)
    (block,) = results["templates"].values()
    assert results["overall"]["by_track"]["SDE"]["samples"] == 2
    for figures in (block, results["overall"]):
        assert (figures["n"], figures["samples"], figures["c"]) == (1, 2, 1)
        assert figures["pass@1"] == pytest.approx(0.5)
        assert figures["pass@3"] is None  # fewer than 3 samples of the instance
        assert figures["partial_pass"] == pytest.approx(0.5)  # the empty run: 0.0
        assert figures["completion_time_s"] == pytest.approx(300.0)
        assert figures["attempts_mean"] == pytest.approx(2.0)
        assert figures["prompt_tokens"] == 147  # spent tokens count, failed runs included
        assert figures["cost"] == pytest.approx(0.5)
        assert (figures["runs"], figures["failed"], figures["unfinished"]) == (4, 1, 1)
        assert figures["interventions"] == {
            "count": 3,
            "by_category": {"dependency": 1, "ports": 2},
        }
    assert waiting.status == "pending"
