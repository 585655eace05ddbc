"""Writes of the benchmark pages: start a sweep (always queued to the workers) and add a
manual C1 intervention to a run."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from evaluation.llm.interventions import add_manual_intervention
from evaluation.llm.sweeps import enqueue_units, runnable_units
from evaluation.llm.units import plan_sweep
from evaluation.models import AgentRun, Dataset, Intervention, ModelEndpoint, Sweep
from study.models import User


@transaction.atomic
def start_sweep(
    *,
    user: User,
    endpoint: ModelEndpoint,
    condition: str,
    dataset: Dataset | None,
    instances: Sequence[tuple[str, int]],
    samples: int,
    attempts: int,
    budget_tokens: int | None,
) -> tuple[Sweep, int]:
    """Plan the sweep (the same parameters resume the same sweep) and queue its units that are
    still to do, once this transaction commits; returns the sweep and how many were queued."""
    sweep = plan_sweep(
        endpoint=endpoint,
        condition=condition,
        instances=instances,
        samples=samples,
        attempts=attempts,
        budget_tokens=budget_tokens,
        dataset=dataset,
        created_by=user,
    )
    todo = runnable_units(sweep)
    enqueue_units(todo)
    return sweep, len(todo)


def add_intervention(*, user: User, run: AgentRun, category: str, message: str) -> Intervention:
    """A researcher's procedural fix for a C1 run (``InterventionRefused`` with a sentence)."""
    return add_manual_intervention(run, category, message, user)
