"""What a sweep's runs add up to: pass@k per template and overall, partial pass, attempts,
tokens, cost and interventions, also by track and by difficulty.

One definition of the outcomes, the same as for human trials: a run's overall pass, partial
pass and completion time are its grading report's ``overall_pass``, ``partial_pass`` and
``completion_time_s``. A run the agent finished without anything graded (it wrote no code)
failed (0, 0.0); runs still pending or running, and runs the platform could not finish
(``failed``: never the model's fault), are not samples.

pass@k is Chen et al.'s unbiased estimator (``evaluation.pass_at_k``) averaged over instances;
it is null when some instance of the block has fewer than k samples.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum

from evaluation.models import AgentRun, Intervention, Sweep
from evaluation.pass_at_k import pass_at_k
from evaluation.proportions import wilson

KS = (1, 3, 5, 10)
DIFFICULTY_ORDER = ("easy", "medium", "hard")


@dataclass(frozen=True)
class RunOutcome:
    """One run as the aggregation sees it."""

    run_id: int
    template: str
    seed: int
    track: str
    difficulty: str
    status: str
    overall_pass: bool | None  # None: not a sample (not finished, or a platform failure)
    partial_pass: float | None
    completion_time_s: float | None
    attempts_used: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal
    interventions: dict[str, int] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.overall_pass is not None


def _mean(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def run_outcomes(runs: QuerySet[AgentRun]) -> list[RunOutcome]:
    """The outcomes of ``runs`` in two queries (runs with their reports, interventions)."""
    rows = list(
        runs.order_by("pk").values(
            "pk",
            "instance__template__slug",
            "instance__template__track",
            "instance__template__difficulty",
            "instance__seed",
            "status",
            "evaluation_id",
            "evaluation__status",
            "evaluation__report__overall_pass",
            "evaluation__report__partial_pass",
            "evaluation__report__completion_time_s",
            "attempts_used",
            "prompt_tokens",
            "completion_tokens",
            "cost",
        )
    )
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for run_id, category, n in (
        Intervention.objects.filter(run__in=runs)
        .values("run_id", "category")
        .annotate(n=Count("pk"))
        .values_list("run_id", "category", "n")
    ):
        counts[run_id][category] = n
    return [_outcome(r, counts.get(r["pk"], {})) for r in rows]


def _outcome(r: Mapping[str, Any], interventions: dict[str, int]) -> RunOutcome:
    overall: bool | None = None
    partial: float | None = None
    completion: float | None = None
    if r["status"] == AgentRun.Status.DONE:
        graded = (
            r["evaluation__status"] == "done" and r["evaluation__report__overall_pass"] is not None
        )
        if graded:
            overall = bool(r["evaluation__report__overall_pass"])
            partial = float(r["evaluation__report__partial_pass"] or 0.0)
            completion = r["evaluation__report__completion_time_s"]
        elif r["evaluation_id"] is None:
            overall, partial = False, 0.0  # the agent stopped with nothing to grade
    return RunOutcome(
        run_id=r["pk"],
        template=r["instance__template__slug"],
        seed=r["instance__seed"],
        track=r["instance__template__track"],
        difficulty=r["instance__template__difficulty"],
        status=r["status"],
        overall_pass=overall,
        partial_pass=partial,
        completion_time_s=completion,
        attempts_used=r["attempts_used"],
        prompt_tokens=r["prompt_tokens"],
        completion_tokens=r["completion_tokens"],
        cost=Decimal(r["cost"]),
        interventions=interventions,
    )


def per_instance(outcomes: Sequence[RunOutcome]) -> dict[tuple[str, int], tuple[int, int]]:
    """(samples, passed) of every instance with at least one sample."""
    tally: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for o in outcomes:
        if o.judged:
            tally[(o.template, o.seed)][0] += 1
            tally[(o.template, o.seed)][1] += int(bool(o.overall_pass))
    return {key: (n, c) for key, (n, c) in tally.items()}


def pass_at(instances: Iterable[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k over instances given as (samples, passed); None when one has < k samples."""
    pairs = list(instances)
    if not pairs or min(n for n, _ in pairs) < k:
        return None
    return math.fsum(pass_at_k(n, c, k) for n, c in pairs) / len(pairs)


def block(outcomes: Sequence[RunOutcome]) -> dict[str, Any]:
    """The figures of one group of runs (a template, a track, everything)."""
    instances = per_instance(outcomes)
    judged = [o for o in outcomes if o.judged]
    passed = sum(1 for o in judged if o.overall_pass)
    low, high = wilson(passed, len(judged))
    categories: Counter[str] = Counter()
    for o in outcomes:
        categories.update(o.interventions)
    result: dict[str, Any] = {
        "n": len(instances),
        "samples": len(judged),
        "c": passed,
        **{f"pass@{k}": pass_at(instances.values(), k) for k in KS},
        "pass@1_ci": [low, high],
        "partial_pass": _mean(o.partial_pass for o in judged),
        "completion_time_s": _mean(o.completion_time_s for o in judged),
        "attempts_mean": _mean(o.attempts_used for o in outcomes if o.status == "done"),
        "prompt_tokens": sum(o.prompt_tokens for o in outcomes),
        "completion_tokens": sum(o.completion_tokens for o in outcomes),
        "cost": float(sum((o.cost for o in outcomes), Decimal(0))),
        "interventions": {
            "count": sum(categories.values()),
            "by_category": {
                c: categories[c] for c in Intervention.Category.values if categories[c]
            },
        },
        "runs": len(outcomes),
        "failed": sum(1 for o in outcomes if o.status == AgentRun.Status.FAILED),
        "unfinished": sum(
            1 for o in outcomes if o.status in (AgentRun.Status.PENDING, AgentRun.Status.RUNNING)
        ),
    }
    return result


def ordered(values: Iterable[str], order: Sequence[str] = ()) -> list[str]:
    present = {v for v in values if v}
    return [v for v in order if v in present] + sorted(present - set(order))


def grouped(
    outcomes: Sequence[RunOutcome], key: Callable[[RunOutcome], str], order: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[RunOutcome]] = defaultdict(list)
    for o in outcomes:
        groups[key(o)].append(o)
    return {name: block(groups[name]) for name in ordered(groups, order)}


def summary(outcomes: Sequence[RunOutcome]) -> dict[str, Any]:
    """``block`` of everything, with ``by_track`` and ``by_difficulty`` inside."""
    return {
        **block(outcomes),
        "by_track": grouped(outcomes, lambda o: o.track),
        "by_difficulty": grouped(outcomes, lambda o: o.difficulty, DIFFICULTY_ORDER),
    }


def sweep_results(sweep: Sweep) -> dict[str, Any]:
    """``{"endpoint", "model", "condition", "dataset", "templates": {SLUG: {...}}, "overall"}``
    (what ``benchmark_llm --json`` prints and ``--out`` writes as results.json)."""
    outcomes = run_outcomes(sweep.runs.all())
    templates = grouped(outcomes, lambda o: o.template)
    for slug, figures in templates.items():
        sample = next(o for o in outcomes if o.template == slug)
        figures.update(
            version=sweep.templates.get(slug), track=sample.track, difficulty=sample.difficulty
        )
    return {
        "endpoint": sweep.endpoint.name,
        "model": sweep.endpoint.model,
        "condition": sweep.condition,
        "dataset": sweep.dataset.version if sweep.dataset else None,
        "templates": templates,
        "overall": summary(outcomes),
    }


def progress_counts(prefix: str = "") -> dict[str, Any]:
    """Aggregates of runs by status, passed ones and tokens, over the relation ``prefix``
    (``"runs__"`` to annotate sweeps). ``done`` counts every finished run, ``failed``
    (platform failures) included."""
    status = AgentRun.Status

    def where(**lookups: Any) -> Q:
        return Q(**{f"{prefix}{key}": value for key, value in lookups.items()})

    pk = f"{prefix}pk"
    return {
        "total": Count(pk),
        "done": Count(pk, filter=where(status__in=[status.DONE, status.FAILED])),
        "failed": Count(pk, filter=where(status=status.FAILED)),
        "running": Count(pk, filter=where(status=status.RUNNING)),
        "passed": Count(
            pk, filter=where(status=status.DONE, evaluation__report__overall_pass=True)
        ),
        "tokens": Sum(F(f"{prefix}prompt_tokens") + F(f"{prefix}completion_tokens")),
    }


def progress(sweep: Sweep) -> dict[str, int]:
    """The sweep's progress counts (one query)."""
    figures = sweep.runs.aggregate(**progress_counts())
    return {name: int(value or 0) for name, value in figures.items()}


RUN_COLUMNS = (
    "run_id",
    "template",
    "seed",
    "sample",
    "status",
    "stop_reason",
    "overall_pass",
    "partial_pass",
    "completion_time_s",
    "attempts_used",
    "model_requests",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost",
    "interventions",
    "duration_s",
    "error",
)


def runs_csv(sweep: Sweep) -> str:
    """One row per run of the sweep (``--out DIR`` writes it as runs.csv)."""
    outcomes = {o.run_id: o for o in run_outcomes(sweep.runs.all())}
    extra = sweep.runs.order_by("pk").values_list(
        "pk", "sample", "stop_reason", "model_requests", "cached_tokens", "duration_s", "error"
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(RUN_COLUMNS)
    for pk, sample, stop_reason, model_requests, cached, duration, error in extra:
        o = outcomes[pk]
        writer.writerow(
            [
                pk,
                o.template,
                o.seed,
                sample,
                o.status,
                stop_reason,
                "" if o.overall_pass is None else int(o.overall_pass),
                "" if o.partial_pass is None else o.partial_pass,
                "" if o.completion_time_s is None else o.completion_time_s,
                o.attempts_used,
                model_requests,
                o.prompt_tokens,
                o.completion_tokens,
                cached,
                o.cost,
                sum(o.interventions.values()),
                "" if duration is None else duration,
                error,
            ]
        )
    return out.getvalue()
