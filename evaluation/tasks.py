"""Celery tasks of the evaluation engine: thin, idempotent wrappers over services."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from evaluation import services
from evaluation.models import Evaluation

RETRY_DELAYS_S = (5, 30, 120)


@shared_task(
    bind=True,
    name="evaluation.grade_submission",
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=len(RETRY_DELAYS_S),
)
def grade_submission(self: Task, evaluation_id: int) -> dict[str, Any]:
    """Grade one stored submission. Safe to deliver twice: a finished or claimed evaluation is
    left alone. Sandbox and calibration trouble is retried, then recorded as FAILED (never as a
    failing solution)."""
    if not services.claim_evaluation(evaluation_id):
        status = (
            Evaluation.objects.filter(pk=evaluation_id).values_list("status", flat=True).first()
        )
        return {"evaluation_id": evaluation_id, "status": status or "missing", "skipped": True}

    def on_progress(done: int, total: int) -> None:
        if not self.request.called_directly and not self.request.is_eager:
            self.update_state(state="PROGRESS", meta={"done": done, "total": total})

    try:
        evaluation = services.run_evaluation(evaluation_id, on_progress=on_progress)
    except services.GradingUnavailable as exc:
        if self.request.retries < (self.max_retries or 0):
            services.requeue_evaluation(evaluation_id)
            raise self.retry(exc=exc, countdown=RETRY_DELAYS_S[self.request.retries]) from exc
        services.fail_evaluation(evaluation_id, str(exc))
        return {"evaluation_id": evaluation_id, "status": Evaluation.Status.FAILED}
    report = evaluation.report or {}
    return {
        "evaluation_id": evaluation_id,
        "status": evaluation.status,
        "overall_pass": report.get("overall_pass"),
        "partial_pass": report.get("partial_pass"),
    }


@shared_task(
    name="evaluation.run_agent_unit",
    acks_late=True,
    reject_on_worker_lost=True,
)
def run_agent_unit(run_id: int) -> dict[str, Any]:
    """Run one unit of a sweep (an AgentRun). Safe to deliver twice: ``run_unit`` claims the
    run with a conditional update, so a run finished or held by another worker is left alone
    (a run a lost worker left running is taken again once stale)."""
    from evaluation.llm.units import run_unit  # units grades through services, like this module

    run = run_unit(run_id)
    return {"run_id": run_id, "status": run.status, "stop_reason": run.stop_reason}
