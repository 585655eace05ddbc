"""Sweeps as units of work: planning them, and running one unit (an ``AgentRun``) end to end.

A unit is one (endpoint, condition, instance, sample). ``plan_sweep`` is idempotent: the same
parameters give the same ``Sweep`` (its ``key``) and only missing runs are created, so running a
sweep again resumes it. ``run_unit`` claims a run with a conditional update (two workers never
both run it; a finished run is left alone), lets the agent work, grades the files the agent
left through the engine's services — the same grading, report and metrics as a participant's
submission; identical files of the same instance are graded once (``evaluation.llm.grading``) —
and stores everything on the run.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.instances import get_instance
from evaluation.instantiate import canonical_json
from evaluation.llm.agent import AgentFailure, Limits, Outcome, Step, run_agent, stored_messages
from evaluation.llm.client import EndpointConfig, endpoint_config
from evaluation.llm.grading import grade_agent_submission
from evaluation.llm.interventions import (
    Pattern,
    record_catalogue_intervention,
    take_manual_interventions,
)
from evaluation.models import (
    AgentRequest,
    AgentRun,
    Dataset,
    Intervention,
    ModelEndpoint,
    Sweep,
)
from evaluation.sandbox.base import Sandbox
from evaluation.services import (
    GradingUnavailable,
    fail_evaluation,
    record_instance,
    submit_solution,
)
from evaluation.spec import Instance

STALE_AFTER_S = 3600  # a RUNNING run silent this long was abandoned by a crashed worker
logger = logging.getLogger(__name__)


def sweep_key(
    endpoint: EndpointConfig,
    *,
    condition: str,
    purpose: str,
    instances: Sequence[Instance],
    samples: int,
    attempts: int,
    budget_tokens: int | None,
    dataset: Dataset | None,
) -> str:
    """What makes two sweeps the same: the model asked and what it is given (tools, images;
    not its prices or rate), the condition, the instances as rendered now (a new template
    version is a new sweep) and the units' limits."""
    body = {
        "endpoint": [
            endpoint.name,
            endpoint.base_url,
            endpoint.model,
            endpoint.supports_tools,
            endpoint.supports_vision,
        ],
        "condition": condition,
        "purpose": purpose,
        "instances": sorted(
            [i.template.slug, i.seed, i.template.version, i.content_hash] for i in instances
        ),
        "samples": samples,
        "attempts": attempts,
        "budget_tokens": budget_tokens,
        "dataset": dataset.version if dataset else None,
    }
    return hashlib.sha256(canonical_json(body)).hexdigest()


@transaction.atomic
def plan_sweep(
    *,
    endpoint: ModelEndpoint,
    condition: str,
    instances: Sequence[tuple[str, int]],
    samples: int,
    attempts: int,
    budget_tokens: int | None = None,
    purpose: str = Sweep.Purpose.BENCHMARK,
    dataset: Dataset | None = None,
    created_by: Any = None,
) -> Sweep:
    """The sweep of these parameters with one run per instance and sample (created as needed).
    Raises ValueError with a sentence for parameters no sweep can have."""
    if condition not in Sweep.Condition.values:
        raise ValueError(f"The condition must be C0 or C1, not {condition!r}.")
    if samples < 1 or attempts < 1:
        raise ValueError("A sweep needs at least one sample and one attempt.")
    if budget_tokens is not None and budget_tokens < 1:
        raise ValueError("The token budget must be a positive number of tokens.")
    if not instances:
        raise ValueError("A sweep needs at least one instance.")
    config = endpoint_config(endpoint)
    rendered = [get_instance(slug, seed) for slug, seed in instances]
    key = sweep_key(
        config,
        condition=condition,
        purpose=purpose,
        instances=rendered,
        samples=samples,
        attempts=attempts,
        budget_tokens=budget_tokens,
        dataset=dataset,
    )
    sweep, _ = Sweep.objects.get_or_create(
        key=key,
        defaults={
            "endpoint": endpoint,
            "endpoint_settings": config.to_json(),
            "condition": condition,
            "purpose": purpose,
            "dataset": dataset,
            "templates": {i.template.slug: i.template.version for i in rendered},
            "samples": samples,
            "attempts": attempts,
            "budget_tokens": budget_tokens,
            "created_by": created_by if getattr(created_by, "pk", None) else None,
        },
    )
    have = set(sweep.runs.values_list("instance_id", "sample"))
    new = []
    for instance in rendered:
        row = record_instance(instance)
        new += [
            AgentRun(sweep=sweep, instance=row, sample=sample)
            for sample in range(samples)
            if (row.pk, sample) not in have
        ]
    AgentRun.objects.bulk_create(new, ignore_conflicts=True)
    return sweep


def claim_run(run_id: int) -> bool:
    """PENDING or FAILED -> RUNNING (or a RUNNING one abandoned for STALE_AFTER_S); False when
    another worker has it or it is done."""
    now = timezone.now()
    runs = AgentRun.objects.filter(pk=run_id)
    if runs.filter(status__in=[AgentRun.Status.PENDING, AgentRun.Status.FAILED]).update(
        status=AgentRun.Status.RUNNING, started_at=now, heartbeat_at=now
    ):
        return True
    return bool(runs.filter(abandoned(now)).update(started_at=now, heartbeat_at=now))


def abandoned(now: datetime) -> Q:
    """Running runs whose process has not shown a sign of life for ``STALE_AFTER_S``."""
    stale = now - timedelta(seconds=STALE_AFTER_S)
    return Q(status=AgentRun.Status.RUNNING) & (
        Q(heartbeat_at__lt=stale)
        | Q(heartbeat_at__isnull=True, started_at__lt=stale)
        | Q(heartbeat_at__isnull=True, started_at__isnull=True)
    )


@transaction.atomic
def _reset(run_id: int) -> None:
    """A run that starts again starts from nothing but the researcher's notes."""
    AgentRequest.objects.filter(run_id=run_id).delete()
    # The researcher's notes are given again; the catalogue's come again if they still apply.
    manual = Intervention.objects.filter(run_id=run_id, source=Intervention.Source.MANUAL)
    manual.update(delivered_at=None)
    Intervention.objects.filter(run_id=run_id).exclude(pk__in=manual).delete()
    AgentRun.objects.filter(pk=run_id).update(
        stop_reason="",
        attempts_used=0,
        model_requests=0,
        prompt_tokens=0,
        completion_tokens=0,
        cached_tokens=0,
        cost=Decimal(0),
        files={},
        submission=None,
        evaluation=None,
        duration_s=None,
        error="",
        finished_at=None,
    )


class _DatabaseRecorder:
    """Stores each step as it happens, so a run's page shows a run in progress."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id

    @transaction.atomic
    def step(self, step: Step, outcome: Outcome) -> None:
        result, error = step.result, step.error
        source = result or error
        AgentRequest.objects.create(
            run_id=self.run_id,
            index=step.index,
            status=AgentRequest.Status.OK if result else AgentRequest.Status.ERROR,
            messages=stored_messages(step.messages),
            reply=result.text if result else "",
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments": c.arguments}
                for c in (result.tool_calls if result else ())
            ],
            actions=step.actions,
            prompt_tokens=result.prompt_tokens if result else 0,
            completion_tokens=result.completion_tokens if result else 0,
            cached_tokens=result.cached_tokens if result else 0,
            usage_source=result.usage_source if result else "",
            finish_reason=(result.finish_reason if result else "")[:30],
            latency_ms=source.latency_ms if source else 0,
            retries=min(source.retries if source else 0, 32767),
            error=(f"{error.kind}: {error} ({error.detail})" if error else "")[:4000],
        )
        _store_progress(self.run_id, outcome)

    def intervention(self, pattern: Pattern, message: str) -> None:
        record_catalogue_intervention(self.run_id, pattern, message)

    def manual_interventions(self) -> list[tuple[str, str]]:
        return take_manual_interventions(self.run_id)


def _store_progress(run_id: int, outcome: Outcome, **fields: Any) -> None:
    AgentRun.objects.filter(pk=run_id).update(
        attempts_used=outcome.attempts_used,
        model_requests=outcome.requests,
        prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens,
        cached_tokens=outcome.cached_tokens,
        cost=Decimal(str(round(outcome.cost, 6))),
        heartbeat_at=timezone.now(),
        **fields,
    )


def run_unit(run_id: int, *, sandbox: Sandbox | None = None) -> AgentRun:
    """Run one unit if nobody else is; returns the run as it then stands. Whatever goes wrong
    ends in the run (``failed``, with the reason), never in the caller's sweep."""
    if not claim_run(run_id):
        return AgentRun.objects.get(pk=run_id)
    try:
        return _run_claimed(run_id, sandbox)
    except Exception as exc:  # a bug or an outage must not strand the run as "running"
        logger.exception("agent run %s failed", run_id)
        return _fail(run_id, f"{type(exc).__name__}: {exc}")


def _run_claimed(run_id: int, sandbox: Sandbox | None) -> AgentRun:
    _reset(run_id)
    run = AgentRun.objects.select_related("sweep", "instance__template").get(pk=run_id)
    sweep, row = run.sweep, run.instance
    instance = get_instance(row.template.slug, row.seed)
    if instance.content_hash != row.content_hash:
        return _fail(run_id, f"instance {row} renders differently now (template changed)")
    endpoint = EndpointConfig.from_json(sweep.endpoint_settings)
    limits = Limits(
        attempts=sweep.attempts, budget_tokens=sweep.budget_tokens, condition=sweep.condition
    )
    started = time.monotonic()
    try:
        outcome = run_agent(instance, endpoint, limits, _DatabaseRecorder(run_id), sandbox=sandbox)
    except AgentFailure as exc:
        return _fail(run_id, str(exc))
    duration = time.monotonic() - started
    evaluation = submit_solution(
        template_slug=instance.template.slug,
        seed=instance.seed,
        files=outcome.files,
        source_label=f"llm:{endpoint.name}"[:100],
        duration_s=duration,
        tokens=outcome.tokens,
        enqueue=False,
    )
    fields = {
        "files": outcome.files,
        "stop_reason": outcome.stop_reason,
        "duration_s": duration,
        "submission_id": evaluation.submission_id,
        "evaluation_id": evaluation.pk,
    }
    _store_progress(run_id, outcome, **fields)
    try:
        grade_agent_submission(evaluation.pk, sandbox=sandbox)
    except GradingUnavailable as exc:
        fail_evaluation(evaluation.pk, str(exc))
        return _fail(run_id, f"grading failed: {exc}")
    AgentRun.objects.filter(pk=run_id).update(
        status=AgentRun.Status.DONE, finished_at=timezone.now()
    )
    return AgentRun.objects.get(pk=run_id)


def _fail(run_id: int, message: str) -> AgentRun:
    """The platform could not finish the run; running the sweep again retries it."""
    AgentRun.objects.filter(pk=run_id).update(
        status=AgentRun.Status.FAILED, error=message[:4000], finished_at=timezone.now()
    )
    return AgentRun.objects.get(pk=run_id)
