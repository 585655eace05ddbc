"""Write operations of the evaluation engine: record templates and instances, calibrate,
store submissions, run gradings. Each write runs in a transaction; notifications go out on
commit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluation import signals
from evaluation.calibration import CalibrationError, CalibrationResult, calibrate, perf_fingerprint
from evaluation.grading import CanaryDrift, grade
from evaluation.instances import get_instance
from evaluation.models import Calibration, Evaluation, Submission, TaskInstance, TaskTemplate
from evaluation.runtimes import RuntimeMissing, require_runtime
from evaluation.sandbox import get_sandbox
from evaluation.sandbox.base import Sandbox
from evaluation.spec import Instance, TemplateSpec
from evaluation.submissions import Submitted, check_files, files_sha256


class GradingUnavailable(Exception):
    """Grading cannot run (no valid calibration, sandbox broken); never the solution's fault."""


@dataclass(frozen=True)
class CalibrationRecord:
    row: Calibration
    result: CalibrationResult


def record_template(spec: TemplateSpec) -> TaskTemplate:
    row, _ = TaskTemplate.objects.get_or_create(
        slug=spec.slug,
        version=spec.version,
        content_hash=spec.content_hash,
        defaults={"title": spec.title, "track": spec.track, "difficulty": spec.difficulty},
    )
    return row


@transaction.atomic
def record_instance(instance: Instance) -> TaskInstance:
    template = record_template(instance.template)
    row, _ = TaskInstance.objects.get_or_create(
        template=template,
        seed=instance.seed,
        defaults={
            "content_hash": instance.content_hash,
            "params": {
                "params": instance.params,
                "constraint": instance.constraint,
                "context": instance.context,
                "names": instance.names,
            },
        },
    )
    return row


def check_runtime(instance: Instance) -> None:
    """Refuse to calibrate or grade when the template's runtime is missing or stale: a solution
    is never judged on the wrong interpreter."""
    try:
        require_runtime(instance.template.runtime)
    except RuntimeMissing as exc:
        raise GradingUnavailable(f"{instance.template.slug} cannot be graded here: {exc}") from exc


def get_or_create_calibration(
    instance: Instance, sandbox: Sandbox, *, force: bool = False
) -> CalibrationRecord:
    """The newest valid calibration for this performance input, host and backend; measures a
    new one when there is none (or ``force``). Raises GradingUnavailable if it is rejected."""
    check_runtime(instance)
    template = record_template(instance.template)
    key = {
        "template": template,
        "perf_fingerprint": perf_fingerprint(instance),
        "host_fingerprint": sandbox.fingerprint(),
        "backend": sandbox.name,
    }
    if not force:
        row = Calibration.objects.filter(**key, status=Calibration.Status.VALID).first()
        if row is not None:
            return CalibrationRecord(row, CalibrationResult.from_json(row.data))
    try:
        result = calibrate(instance, sandbox)
    except CalibrationError as exc:
        Calibration.objects.create(
            **key, status=Calibration.Status.REJECTED, message=str(exc), data={}
        )
        raise GradingUnavailable(f"Calibration of {instance.template.slug} failed: {exc}") from exc
    with transaction.atomic():
        if force:
            Calibration.objects.filter(**key, status=Calibration.Status.VALID).update(
                status=Calibration.Status.STALE
            )
        row = Calibration.objects.create(
            **key,
            status=Calibration.Status.VALID if result.valid else Calibration.Status.REJECTED,
            message=result.message,
            data=result.to_json(),
        )
    if not result.valid:
        raise GradingUnavailable(result.message)
    return CalibrationRecord(row, result)


@transaction.atomic
def submit_solution(
    *,
    template_slug: str,
    seed: int,
    files: Submitted,
    source_label: str,
    duration_s: float | None = None,
    tokens: int | None = None,
    time_limit_s: float | None = None,
    enqueue: bool = True,
) -> Evaluation:
    """Store an immutable submission of the instance's editable ``files`` (path -> text;
    missing ones are the starter's) and queue its grading (the task starts after commit).
    Raises ``BadSubmission`` (a ValueError, with a sentence) for files that cannot be graded.
    ``time_limit_s`` is the time the solver had (a trial's arm limit): completion time is
    capped at it (PAR-N); without one, at an hour."""
    instance = get_instance(template_slug, seed)
    checked = check_files(instance, files)
    instance_row = record_instance(instance)
    submission = Submission.objects.create(
        instance=instance_row,
        files=checked,
        sha256=files_sha256(checked),
        source_label=source_label,
    )
    evaluation = Evaluation.objects.create(
        submission=submission, duration_s=duration_s, tokens=tokens, time_limit_s=time_limit_s
    )
    if enqueue:
        from evaluation.tasks import grade_submission  # cycle: the task wraps this module

        transaction.on_commit(lambda: grade_submission.delay(evaluation.pk))
    return evaluation


def claim_evaluation(evaluation_id: int, *, stale_after_s: int = 1800) -> bool:
    """Mark a queued (or abandoned running) evaluation as running; False if another worker has
    it or it is finished. A conditional UPDATE, so two workers never both win."""
    now = timezone.now()
    stale = now - timedelta(seconds=stale_after_s)
    claimed = (
        Evaluation.objects.filter(pk=evaluation_id)
        .filter(status__in=[Evaluation.Status.QUEUED, Evaluation.Status.FAILED])
        .update(status=Evaluation.Status.RUNNING, started_at=now, tests_done=0)
    )
    if claimed:
        return True
    return bool(
        Evaluation.objects.filter(
            pk=evaluation_id, status=Evaluation.Status.RUNNING, started_at__lt=stale
        ).update(started_at=now, tests_done=0)
    )


def run_evaluation(
    evaluation_id: int,
    *,
    sandbox: Sandbox | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """Grade a claimed evaluation and store the report. Raises GradingUnavailable for failures
    that are not the solution's fault (the caller retries)."""
    evaluation = Evaluation.objects.select_related("submission__instance__template").get(
        pk=evaluation_id
    )
    row = evaluation.submission.instance
    instance = get_instance(row.template.slug, row.seed)
    if instance.content_hash != row.content_hash:
        raise GradingUnavailable(
            f"instance {row} renders differently now (template changed without a version bump)"
        )
    sandbox = sandbox or get_sandbox()

    def progress(done: int, total: int) -> None:
        Evaluation.objects.filter(pk=evaluation_id).update(tests_done=done, tests_total=total)
        if on_progress:
            on_progress(done, total)
        transaction.on_commit(
            lambda: signals.evaluation_progress.send(
                sender=Evaluation, evaluation_id=evaluation_id, done=done, total=total
            )
        )

    report = grade_instance(
        instance,
        dict(evaluation.submission.files),
        sandbox=sandbox,
        duration_s=evaluation.duration_s,
        tokens=evaluation.tokens,
        time_limit_s=evaluation.time_limit_s,
        progress=progress,
    )
    if report.get("error") and any(t["verdict"] == "SE" for t in report["tests"]):
        raise GradingUnavailable(report["error"])
    finish_evaluation(evaluation_id, report)
    evaluation.refresh_from_db()
    return evaluation


def grade_instance(
    instance: Instance,
    files: Submitted,
    *,
    sandbox: Sandbox,
    duration_s: float | None = None,
    tokens: int | None = None,
    time_limit_s: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Grade with the cached calibration. If the canary shows the host has drifted, measure a
    fresh calibration and grade again; if that drifts too (a busy host), the verdict rests on
    the canary ratio, which is measured side by side and so stays fair, and the report's
    ``efficiency.canary_drift`` shows how far off the host was."""
    check_runtime(instance)
    record = get_or_create_calibration(instance, sandbox)
    options: dict[str, Any] = {
        "duration_s": duration_s,
        "tokens": tokens,
        "time_limit_s": time_limit_s,
        "progress": progress,
    }
    try:
        report = grade(instance, files, sandbox=sandbox, calibration=record.result, **options)
    except CanaryDrift:
        record = get_or_create_calibration(instance, sandbox, force=True)
        report = grade(
            instance,
            files,
            sandbox=sandbox,
            calibration=record.result,
            tolerate_drift=True,
            **options,
        )
    report["calibration"]["id"] = record.row.pk
    return report


@transaction.atomic
def finish_evaluation(evaluation_id: int, report: dict[str, Any]) -> None:
    Evaluation.objects.filter(pk=evaluation_id).update(
        status=Evaluation.Status.DONE,
        report=report,
        error="",
        tests_done=F("tests_total"),
        finished_at=timezone.now(),
    )
    transaction.on_commit(
        lambda: signals.evaluation_finished.send(
            sender=Evaluation, evaluation_id=evaluation_id, status=Evaluation.Status.DONE
        )
    )


@transaction.atomic
def requeue_evaluation(evaluation_id: int) -> None:
    """Put a running evaluation back in the queue before its task retries (grading could not
    start: sandbox or calibration trouble)."""
    Evaluation.objects.filter(pk=evaluation_id, status=Evaluation.Status.RUNNING).update(
        status=Evaluation.Status.QUEUED
    )


def fail_evaluation(evaluation_id: int, message: str) -> None:
    Evaluation.objects.filter(pk=evaluation_id).update(
        status=Evaluation.Status.FAILED, error=message[:2000], finished_at=timezone.now()
    )
    transaction.on_commit(
        lambda: signals.evaluation_finished.send(
            sender=Evaluation, evaluation_id=evaluation_id, status=Evaluation.Status.FAILED
        )
    )
