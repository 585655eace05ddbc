"""Grading an agent's files: by the engine, once per distinct submission.

Sampling a model k times on one instance often gives the same files (always, for a model at
temperature 0). Files identical to an earlier LLM-arm submission of the same instance, graded
under the calibration that is valid now on this host and backend, get that grading's verdicts
again instead of a new measurement: the same code judged against the same thresholds. Only what
depends on the run is its own — the duration, so the PAR completion time, and the tokens — and
the report says where the verdicts come from (``reused_from``). Participants' submissions are
always graded afresh; this is the LLM arm's only.
"""

from __future__ import annotations

import copy

from django.db import transaction
from django.utils import timezone

from evaluation.grading import completion_time_par
from evaluation.instances import get_instance
from evaluation.models import Evaluation
from evaluation.sandbox import get_sandbox
from evaluation.sandbox.base import Sandbox
from evaluation.services import (
    claim_evaluation,
    finish_evaluation,
    get_or_create_calibration,
    run_evaluation,
)

LLM_SOURCE_PREFIX = "llm:"


def grade_agent_submission(evaluation_id: int, *, sandbox: Sandbox | None = None) -> bool:
    """Grade a stored LLM-arm evaluation; True when an earlier grading was reused. Raises
    ``GradingUnavailable`` like ``run_evaluation``."""
    evaluation = Evaluation.objects.select_related("submission__instance__template").get(
        pk=evaluation_id
    )
    submission = evaluation.submission
    row = submission.instance
    sandbox = sandbox or get_sandbox()
    calibration = get_or_create_calibration(get_instance(row.template.slug, row.seed), sandbox)
    earlier = (
        Evaluation.objects.filter(
            status=Evaluation.Status.DONE,
            submission__instance=row,
            submission__sha256=submission.sha256,
            submission__source_label__startswith=LLM_SOURCE_PREFIX,
            report__calibration__id=calibration.row.pk,
        )
        .exclude(pk=evaluation_id)
        .order_by("-finished_at")
        .first()
    )
    if earlier is None or earlier.report is None or earlier.report.get("error"):
        claim_evaluation(evaluation_id)
        run_evaluation(evaluation_id, sandbox=sandbox)
        return False
    if earlier.submission.files != submission.files:  # a sha256 collision: never trust it
        claim_evaluation(evaluation_id)
        run_evaluation(evaluation_id, sandbox=sandbox)
        return False
    report = copy.deepcopy(earlier.report)
    report["completion_time_s"] = completion_time_par(
        evaluation.duration_s, bool(report["overall_pass"]), float(report["par_limit_s"])
    )
    report["tokens"] = evaluation.tokens
    report["reused_from"] = earlier.report.get("reused_from") or earlier.pk
    with transaction.atomic():
        Evaluation.objects.filter(pk=evaluation_id).update(
            started_at=timezone.now(), tests_total=earlier.tests_total
        )
        finish_evaluation(evaluation_id, report)
    return True
