"""The minimiser: counts of the plans already given, the imbalance a candidate would add, the
biased-coin choice, and exact fill near a known final size. Pure functions, no Django; the
module docstring of ``design.py`` explains the method.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from study.assignment.design import FINAL_FILL, LOOKAHEAD, DesignError, Plan


@dataclass(frozen=True)
class Weights:
    sequence: float = 4.0
    task: float = 1.0
    task_condition: float = 2.0
    task_position: float = 1.0


DEFAULT_WEIGHTS = Weights()


FAMILIES = ("sequence", "task", "task_condition", "task_position")


def _plan_keys(plan: Plan) -> dict[str, list[Any]]:
    cells = plan.cells()
    return {
        "sequence": [plan.sequence],
        "task": [t for t, _, _ in cells],
        "task_condition": [(t, c) for t, c, _ in cells],
        "task_position": [(t, p) for t, _, p in cells],
    }


@dataclass
class Counts:
    """How often each level of each factor family occurs among the counted participants.
    Levels: a sequence, a task, (task, condition) and (task, 1-based position)."""

    participants: int = 0
    sequence: dict[str, int] = field(default_factory=dict)
    task: dict[str, int] = field(default_factory=dict)
    task_condition: dict[tuple[str, str], int] = field(default_factory=dict)
    task_position: dict[tuple[str, int], int] = field(default_factory=dict)

    @classmethod
    def empty(cls, plans: Sequence[Plan]) -> Counts:
        """Zero counts over every level the given plans can touch (the scoring universe)."""
        levels = _index(tuple(plans)).levels
        return cls(0, *(dict.fromkeys(levels[name], 0) for name in FAMILIES))

    def add(self, plan: Plan, n: int = 1, *, known_only: bool = False) -> None:
        """Count ``plan`` ``n`` times; ``known_only`` skips tasks outside the universe (e.g. a
        task deactivated after some participants got it)."""
        self.participants += n
        skip = {t for t in plan.tasks if t not in self.task} if known_only else set()
        for name, keys in _plan_keys(plan).items():
            values = self.families()[name]
            for key in keys:
                if name == "sequence" or (key if name == "task" else key[0]) not in skip:
                    values[key] = values.get(key, 0) + n

    def families(self) -> dict[str, dict[Any, int]]:
        return {name: getattr(self, name) for name in FAMILIES}

    def to_json(self) -> dict[str, Any]:
        nested: dict[str, dict[str, dict[str, int]]] = {"task_condition": {}, "task_position": {}}
        for name, by_task in nested.items():
            for (t, level), n in sorted(getattr(self, name).items()):
                by_task.setdefault(t, {})[str(level)] = n
        flat = {name: dict(sorted(getattr(self, name).items())) for name in ("sequence", "task")}
        return {"participants": self.participants, **flat, **nested}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Counts:
        def unnest(name: str, level: type) -> dict[Any, int]:
            items = data.get(name, {}).items()
            return {(t, level(k)): int(n) for t, by in items for k, n in by.items()}

        return cls(
            int(data.get("participants", 0)),
            {k: int(v) for k, v in data.get("sequence", {}).items()},
            {k: int(v) for k, v in data.get("task", {}).items()},
            unnest("task_condition", str),
            unnest("task_position", int),
        )


def imbalance(counts: Counts, plan: Plan, weights: Weights = DEFAULT_WEIGHTS) -> float:
    """Reference score: add ``plan`` to a copy of ``counts`` and sum ``weight x (max - min)``
    over the families (levels are the keys of ``counts`` plus those of the plan)."""
    after = Counts.from_json(counts.to_json())
    after.add(plan)
    total = 0.0
    for name, values in after.families().items():
        total += getattr(weights, name) * (max(values.values()) - min(values.values()))
    return total


class _Index:
    """Precomputed structure of a candidate set: the levels of each family, each plan's levels
    as a bitmask, and the plans grouped by their task x condition cells (signature)."""

    def __init__(self, candidates: tuple[Plan, ...]) -> None:
        self.levels: dict[str, list[Any]] = {}
        self.masks: dict[str, list[int]] = {}
        keys = [_plan_keys(p) for p in candidates]
        for name in FAMILIES:
            levels = sorted({k for pk in keys for k in pk[name]}, key=repr)
            bit = {k: 1 << i for i, k in enumerate(levels)}
            self.levels[name] = levels
            self.masks[name] = [sum(bit[k] for k in pk[name]) for pk in keys]
        self.cells: list[tuple[str, str]] = self.levels["task_condition"]
        cell_index = {c: i for i, c in enumerate(self.cells)}
        signatures: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for i, pk in enumerate(keys):
            signatures[tuple(sorted(cell_index[c] for c in pk["task_condition"]))].append(i)
        self.signatures = signatures
        task_cells: dict[str, list[int]] = defaultdict(list)
        for (t, _), i in cell_index.items():
            task_cells[t].append(i)
        self.task_cells = list(task_cells.values())
        # Periods per condition, if every plan has the same (else no exact shares exist).
        uses = {tuple(sorted(Counter(p.sequence).items())) for p in candidates}
        self.per_condition = dict(next(iter(uses))) if len(uses) == 1 else None


@lru_cache(maxsize=16)
def _index(candidates: tuple[Plan, ...]) -> _Index:
    return _Index(candidates)


def score_candidates(
    candidates: Sequence[Plan], counts: Counts, weights: Weights = DEFAULT_WEIGHTS
) -> list[float]:
    """``imbalance`` of every candidate, over the levels the candidates touch. Adding a plan
    raises each touched level by one, so per family the new maximum is ``M + 1`` iff a touched
    level sits at ``M`` and the new minimum is ``m + 1`` iff every level at ``m`` is touched:
    two bitmask tests per family and plan."""
    return _score(_index(tuple(candidates)), counts, weights)


def _score(index: _Index, counts: Counts, weights: Weights) -> list[float]:
    current = counts.families()
    scores = [0.0] * len(index.masks["sequence"])
    for name in FAMILIES:
        values = [current[name].get(k, 0) for k in index.levels[name]]
        hi, lo = max(values), min(values)
        at_hi = sum(1 << i for i, v in enumerate(values) if v == hi)
        at_lo = sum(1 << i for i, v in enumerate(values) if v == lo)
        weight = getattr(weights, name)
        base = hi - lo
        for i, mask in enumerate(index.masks[name]):
            spread = base + (1 if mask & at_hi else 0) - (1 if at_lo & ~mask == 0 else 0)
            scores[i] += weight * spread
    return scores


@dataclass(frozen=True)
class Choice:
    plan: Plan
    min_score: float
    n_tied: int
    n_admissible: int
    p_best: float
    exact: bool = False  # the exact-fill restriction was applied


def choose_plan(
    candidates: Sequence[Plan],
    counts: Counts,
    rng: random.Random,
    p_best: float,
    *,
    weights: Weights = DEFAULT_WEIGHTS,
    target: int | None = None,
    gaps: Sequence[int] | None = None,
) -> Choice:
    """Pick a plan by minimisation with a biased coin (see the module docstring). Scores use
    the levels of all candidates; ``target`` only narrows which may be drawn. ``gaps`` (one per
    candidate, e.g. the difficulty gap) breaks ties among the best-scoring: only those with the
    smallest gap stay tied. ``Choice.p_best`` is the probability actually used. RNG use is
    fixed for replay: ``rng.random()`` for the coin, then one ``rng.choice``."""
    if not candidates:
        raise DesignError("There is no admissible plan to choose from.")
    index = _index(tuple(candidates))
    admissible: list[int] = list(range(len(candidates)))
    exact = False
    if target is not None:
        kept = _exact_fill(index, counts, target)
        if kept:
            admissible, exact = kept, True
    scores = _score(index, counts, weights)
    best = min(scores[i] for i in admissible)
    at_best = [i for i in admissible if scores[i] == best]
    if gaps is not None:
        least = min(gaps[i] for i in at_best)
        at_best = [i for i in at_best if gaps[i] == least]
    tied = [candidates[i] for i in at_best]
    if exact and target is not None and target - counts.participants <= FINAL_FILL:
        p_best = 1.0
    plan = rng.choice(tied) if rng.random() < p_best else candidates[rng.choice(admissible)]
    return Choice(plan, best, len(tied), len(admissible), p_best, exact)


def cell_shares(candidates: Sequence[Plan], target: int) -> dict[tuple[str, str], int] | None:
    """Each task x condition cell's share of ``target`` participants, or None if the uses do
    not split evenly (then exact balance is impossible and only minimisation applies)."""
    return _shares(_index(tuple(candidates)), target) if candidates else None


def _shares(index: _Index, target: int) -> dict[tuple[str, str], int] | None:
    if index.per_condition is None:
        return None
    tasks = index.levels["task"]
    shares = {}
    for c, k in index.per_condition.items():
        if (target * k) % len(tasks):
            return None
        for t in tasks:
            shares[(t, c)] = target * k // len(tasks)
    return shares


def exact_fill_candidates(candidates: Sequence[Plan], counts: Counts, target: int) -> list[Plan]:
    """The candidates that keep an exactly balanced task x condition table at ``target``
    participants reachable; empty when exact balance is unreachable or not applicable."""
    if not candidates:
        return []
    return [candidates[i] for i in _exact_fill(_index(tuple(candidates)), counts, target)]


def _exact_fill(index: _Index, counts: Counts, target: int) -> list[int]:
    remaining = target - counts.participants
    shares = _shares(index, target)
    if remaining < 1 or shares is None:
        return []
    deficit = [shares[cell] - counts.task_condition.get(cell, 0) for cell in index.cells]
    if min(deficit) < 0:
        return []
    search = _Decomposer(list(index.signatures), index.task_cells, len(index.cells))
    chosen: list[int] = []
    for sig, plans in index.signatures.items():
        after = list(deficit)
        for i in sig:
            after[i] -= 1
        if min(after) < 0 or not search.plausible(after, remaining - 1):
            continue
        if remaining - 1 <= LOOKAHEAD and not search.decomposable(tuple(after), remaining - 1):
            continue
        chosen.extend(plans)
    return sorted(chosen)


class _Decomposer:
    """Can a deficit vector over task x condition cells be split into ``r`` plan signatures?"""

    def __init__(self, sigs: list[tuple[int, ...]], task_cells: list[list[int]], n: int) -> None:
        self.task_cells = task_cells
        self.by_cell: list[list[tuple[int, ...]]] = [[] for _ in range(n)]
        for sig in sigs:
            for i in sig:
                self.by_cell[i].append(sig)
        self.size = len(sigs[0]) if sigs else 0
        self.memo: dict[tuple[int, ...], bool] = {}

    def plausible(self, deficit: Sequence[int], r: int) -> bool:
        # Each participant uses a task at most once.
        return all(sum(deficit[i] for i in cells) <= r for cells in self.task_cells)

    def decomposable(self, deficit: tuple[int, ...], r: int) -> bool:
        if r == 0:
            return not any(deficit)
        if sum(deficit) != self.size * r or not self.plausible(deficit, r):
            return False
        if deficit in self.memo:
            return self.memo[deficit]
        # Some plan must cover the most-needed cell: branch on those (complete, no repeats).
        cell = max(range(len(deficit)), key=deficit.__getitem__)
        result = False
        for sig in self.by_cell[cell]:
            if all(deficit[i] > 0 for i in sig):
                after = list(deficit)
                for i in sig:
                    after[i] -= 1
                if self.decomposable(tuple(after), r - 1):
                    result = True
                    break
        self.memo[deficit] = result
        return result
