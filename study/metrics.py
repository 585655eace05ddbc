"""Per-trial numbers that live in higher apps, gathered through a registry.

The study app may not import ``ide_bridge`` (it sits above ``study``), yet the score report,
the monitor and the results dashboard need the tokens, AI requests and integrity flags that
``ide_bridge`` records. ``ide_bridge.metrics.register()`` (called from its ``AppConfig.ready``)
registers one provider of each kind here; the study code asks the registry.

Providers take a list of trial ids and answer with one query each, so callers stay at a
bounded number of queries however many trials they pass:

- metrics: ``fn(trial_ids) -> {trial_id: {"tokens": 1234.0, "ai_requests": 5.0, ...}}``
- flags:   ``fn(trial_ids) -> {trial_id: {"large_paste": 2, "long_blur": 1}}``

Trials a provider knows nothing about are simply missing from its answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

TrialMetrics = Callable[[list[int]], dict[int, dict[str, float]]]
TrialFlags = Callable[[list[int]], dict[int, dict[str, int]]]

_metrics: dict[str, TrialMetrics] = {}
_flags: dict[str, TrialFlags] = {}


def register_trial_metrics(name: str, fn: TrialMetrics) -> None:
    """Register (or replace) the provider called ``name``; registering twice is harmless."""
    _metrics[name] = fn


def register_trial_flags(fn: TrialFlags) -> None:
    """Register (or replace) a provider of integrity-flag counts per trial and kind."""
    _flags[f"{fn.__module__}.{fn.__qualname__}"] = fn


def unregister_all() -> None:
    """Forget every provider (tests use this to start clean)."""
    _metrics.clear()
    _flags.clear()


def trial_metrics(trial_ids: Iterable[int]) -> dict[int, dict[str, float]]:
    """Every provider's metrics of these trials, merged per trial (one query per provider)."""
    ids = sorted(set(trial_ids))
    merged: dict[int, dict[str, float]] = defaultdict(dict)
    if not ids:
        return {}
    for fn in list(_metrics.values()):
        for trial_id, values in fn(ids).items():
            merged[trial_id].update(values)
    return dict(merged)


def trial_flags(trial_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """Integrity-flag counts per trial and kind, summed over providers."""
    ids = sorted(set(trial_ids))
    merged: dict[int, dict[str, int]] = defaultdict(dict)
    if not ids:
        return {}
    for fn in list(_flags.values()):
        for trial_id, kinds in fn(ids).items():
            for kind, count in kinds.items():
                merged[trial_id][kind] = merged[trial_id].get(kind, 0) + int(count)
    return dict(merged)


def has_metric_providers() -> bool:
    return bool(_metrics)
