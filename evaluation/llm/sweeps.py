"""Starting and running sweeps, for ``benchmark_llm`` and the researchers' pages.

- ``sweep_instances`` turns "a dataset version" or "N seeds per template" (and a template
  selection) into the (slug, seed) pairs of a sweep, with a sentence for every bad input.
- ``adhoc_endpoint`` records the endpoint of ``--base-url/--model`` once, under a name derived
  from what defines it.
- ``runnable_units`` lists the runs a resumed sweep still has to do: pending ones, failed ones
  (the platform's trouble: tried again), and running ones silent for ``units.STALE_AFTER_S``
  (a crashed process left them; ``run_unit`` claims them again).
- ``run_locally`` runs units in this process or in J spawned worker processes (no Celery);
  ``enqueue_units`` hands them to the Celery workers (``evaluation.run_agent_unit``).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from evaluation.bank import active_slugs, known_slugs
from evaluation.llm import workers
from evaluation.llm.datasets import DatasetError, dataset_instances, find_dataset
from evaluation.llm.units import abandoned, run_unit
from evaluation.models import AgentRun, Dataset, ModelEndpoint, Sweep

MAX_INSTANCES = 1000


class SweepInputError(ValueError):
    """Bad input for a sweep, in one sentence."""


@dataclass(frozen=True)
class UnitDone:
    run_id: int
    status: str
    passed: bool
    tokens: int


def parse_templates(selection: str) -> list[str]:
    return sorted({s.strip() for s in selection.split(",") if s.strip()})


def sweep_instances(
    *, dataset: str = "", instances: int | None = None, templates: Sequence[str] = ()
) -> tuple[Dataset | None, list[tuple[str, int]]]:
    """The sweep's dataset (None for seeds 1..N) and its (slug, seed) pairs. Without either,
    the newest recorded dataset."""
    if dataset and instances is not None:
        raise SweepInputError("Give either a dataset version or a number of instances, not both.")
    unknown = [t for t in templates if t not in known_slugs()]
    if unknown:
        raise SweepInputError(f"Unknown template {unknown[0]!r}: it is not in the bank.")
    bank = active_slugs()  # by default; a retired template named explicitly is re-run
    if instances is not None:
        if not 1 <= instances <= MAX_INSTANCES:
            raise SweepInputError(
                f"The number of instances must be from 1 to {MAX_INSTANCES}, got {instances}."
            )
        slugs = list(templates) or sorted(bank)
        return None, [(slug, seed) for slug in slugs for seed in range(1, instances + 1)]
    try:
        row = find_dataset(dataset) if dataset else Dataset.objects.first()
        if row is None:
            raise SweepInputError(
                "No dataset is recorded yet: give a number of instances, or build a dataset "
                "with build_dataset."
            )
        pairs = dataset_instances(row)
    except DatasetError as exc:
        raise SweepInputError(str(exc)) from exc
    if templates:
        missing = [t for t in templates if t not in row.templates]
        if missing:
            raise SweepInputError(f"Template {missing[0]!r} is not in dataset {row.version[:12]}.")
        pairs = [(slug, seed) for slug, seed in pairs if slug in templates]
    return row, pairs


def adhoc_name(base_url: str, model: str, api_key_env: str) -> str:
    digest = hashlib.sha256(f"{base_url}\n{model}\n{api_key_env}".encode()).hexdigest()
    return f"adhoc-{digest[:8]}"


@transaction.atomic
def adhoc_endpoint(base_url: str, model: str, api_key_env: str = "") -> tuple[ModelEndpoint, bool]:
    """The endpoint row for a base URL, model and key variable given on the command line
    (created the first time: True)."""
    try:
        URLValidator(schemes=["http", "https"])(base_url)
    except ValidationError as exc:
        raise SweepInputError(f"--base-url {base_url!r} is not an http(s) URL.") from exc
    if not model.strip():
        raise SweepInputError("--model must name the model id to send.")
    return ModelEndpoint.objects.get_or_create(
        name=adhoc_name(base_url, model, api_key_env),
        defaults={"base_url": base_url, "model": model.strip(), "api_key_env": api_key_env},
    )


def check_key(endpoint: ModelEndpoint) -> None:
    """Refuse to start when the endpoint names a key variable that is not set here."""
    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
        raise SweepInputError(
            f"Endpoint {endpoint.name} takes its API key from ${endpoint.api_key_env}, which is "
            "not set in this environment."
        )


def runnable_units(sweep: Sweep) -> list[int]:
    """Ids of the runs still to do: pending, failed, or running but abandoned."""
    return list(
        sweep.runs.filter(
            Q(status__in=[AgentRun.Status.PENDING, AgentRun.Status.FAILED])
            | abandoned(timezone.now())
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def release_units(run_ids: Sequence[int], *, claimed_since: datetime) -> int:
    """Put back to pending the runs of ``run_ids`` claimed since ``claimed_since`` and still
    running (this process was interrupted): running the sweep again takes them at once
    instead of waiting for them to turn stale."""
    return AgentRun.objects.filter(
        pk__in=list(run_ids), status=AgentRun.Status.RUNNING, started_at__gte=claimed_since
    ).update(status=AgentRun.Status.PENDING, started_at=None)


def enqueue_units(run_ids: Sequence[int]) -> None:
    """Send every unit to the Celery workers once the current transaction commits."""
    from evaluation.tasks import run_agent_unit  # the task module imports this one's callers

    ids = list(run_ids)

    def send() -> None:
        for run_id in ids:
            run_agent_unit.delay(run_id)

    transaction.on_commit(send)


def _done(run: AgentRun) -> UnitDone:
    report = run.evaluation.report if run.evaluation_id and run.evaluation else None
    return UnitDone(
        run_id=run.pk,
        status=run.status,
        passed=bool(report and report.get("overall_pass")),
        tokens=run.prompt_tokens + run.completion_tokens,
    )


def run_one(run_id: int) -> UnitDone:
    """Run one unit here (``run_unit``) and say how it ended."""
    return _done(run_unit(run_id))


def run_locally(
    run_ids: Sequence[int], *, jobs: int = 1, on_done: Callable[[UnitDone], None] | None = None
) -> list[UnitDone]:
    """Run the units here: one after the other, or in ``jobs`` spawned processes."""
    results: list[UnitDone] = []
    for done in _iter_units(list(run_ids), jobs):
        results.append(done)
        if on_done:
            on_done(done)
    return results


def _iter_units(run_ids: list[int], jobs: int) -> Iterator[UnitDone]:
    if jobs <= 1 or len(run_ids) <= 1:
        for run_id in run_ids:
            yield run_one(run_id)
        return
    database = str(connections["default"].settings_dict["NAME"])
    connections.close_all()  # nothing open crosses into the workers
    context = multiprocessing.get_context("spawn")
    with context.Pool(min(jobs, len(run_ids)), workers.init, (database,)) as pool:
        yield from pool.imap_unordered(workers.run, run_ids)
