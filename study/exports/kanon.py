"""k-anonymity for the released quasi-identifiers (QIs): generalise, then suppress.

Each QI has a *ladder*: level 0 is the value as collected (already coarse at source, e.g. age in
bands), each further level merges categories, and the last level is ``*`` (any value). The
algorithm is global full-domain recoding, then record suppression:

1. A vector of levels (one per QI) is *acceptable* when the records in equivalence classes
   (``collections.Counter`` of the joint QI tuple) smaller than ``k`` are none, or at least
   ``k`` and at most the suppression budget (``max_suppressed_share`` of all records).
2. Every vector is tried (576 for the shipped QIs) and the acceptable one with the least
   generalisation wins (sum of level / top; ties: fewer suppressed, more classes). Above
   ``MAX_LATTICE`` vectors a greedy search raises one QI at a time and then undoes steps that
   were not needed.
3. Suppressed records get ``suppressed`` for every QI; their outcomes stay in the package.

The suppressed group must itself hold at least ``k`` records (or none): an attacker who finds no
class matching a target learns the target is among the suppressed. So ``k_achieved`` is the
smallest class size with the suppressed group counted as one class, and ``k_achieved >= k``
holds whenever the study has at least ``k`` participants.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ANY = "*"
MAX_LATTICE = 20_000  # level combinations tried exhaustively (5 shipped QIs: 576)
SUPPRESSED = "suppressed"
MISSING = ""


@dataclass(frozen=True)
class Ladder:
    """Generalisation levels of one QI. ``levels[i]`` maps a level-0 value to its level-(i+1)
    value; values missing from a mapping keep their previous value. The final level (``*``)
    is implicit."""

    name: str  # the released column, e.g. "age_band"
    source: str  # where level-0 values come from, e.g. the screening item "age_band"
    values: tuple[str, ...]  # level-0 values
    levels: tuple[Mapping[str, str], ...] = ()

    @property
    def top(self) -> int:
        return len(self.levels) + 1  # index of the "*" level

    def at(self, level: int, value: str) -> str:
        if level >= self.top:
            return ANY
        if value == MISSING:
            return MISSING
        for mapping in self.levels[:level]:
            value = mapping.get(value, value)
        return value

    def allowed(self) -> list[str]:
        seen: list[str] = []
        for level in range(self.top + 1):
            for v in self.values:
                out = self.at(level, v)
                if out not in seen:
                    seen.append(out)
        return [*seen, SUPPRESSED]


@dataclass
class KanonResult:
    k: int
    values: dict[int, dict[str, str]]  # record id -> QI -> released value
    levels: dict[str, int]
    method: str = ""
    steps: list[str] = field(default_factory=list)
    suppressed: int = 0
    k_achieved: int = 0
    class_sizes: dict[int, int] = field(default_factory=dict)  # size -> number of classes

    @property
    def satisfied(self) -> bool:
        return self.k_achieved >= self.k


def _classes(
    records: Mapping[int, Mapping[str, str]], ladders: Sequence[Ladder], levels: Mapping[str, int]
) -> Counter[tuple[str, ...]]:
    return Counter(
        tuple(q.at(levels[q.name], rec.get(q.name, MISSING)) for q in ladders)
        for rec in records.values()
    )


def _small(classes: Counter[tuple[str, ...]], k: int) -> int:
    return sum(n for n in classes.values() if n < k)


def _acceptable(small: int, k: int, budget: int) -> bool:
    return small == 0 or k <= small <= budget


def _refine(
    records: Mapping[int, Mapping[str, str]],
    ladders: Sequence[Ladder],
    levels: dict[str, int],
    k: int,
    budget: int,
    steps: list[str],
) -> None:
    """Undo greedy steps that turned out unnecessary (the greedy search can overshoot)."""
    if not _acceptable(_small(_classes(records, ladders, levels), k), k, budget):
        return
    for q in reversed(ladders):
        while levels[q.name] > 0:
            lower = {**levels, q.name: levels[q.name] - 1}
            if not _acceptable(_small(_classes(records, ladders, lower), k), k, budget):
                break
            levels[q.name] -= 1
            steps.append(f"{q.name}: back to level {levels[q.name]} (not needed)")


def _lattice(
    records: Mapping[int, Mapping[str, str]], ladders: Sequence[Ladder], k: int, budget: int
) -> dict[str, int] | None:
    """The acceptable level vector with the least generalisation (sum of level / top; ties:
    fewer suppressed records, then more classes), by trying every vector; None if there are
    too many. Everything at ``*`` when nothing is acceptable (fewer than k records)."""
    heights = [q.top + 1 for q in ladders]
    if math.prod(heights) > MAX_LATTICE:
        return None
    tables = [[{v: q.at(level, v) for v in (*q.values, MISSING)} for level in range(q.top + 1)]
              for q in ladders]  # fmt: skip
    raws = [tuple(rec.get(q.name, MISSING) for q in ladders) for rec in records.values()]
    best: tuple[tuple[float, int, int], tuple[int, ...]] | None = None
    for combo in itertools.product(*(range(h) for h in heights)):
        maps = [tables[i][level] for i, level in enumerate(combo)]
        classes = Counter(
            tuple(m.get(v, v) if level < len(t) - 1 else ANY
                  for m, v, level, t in zip(maps, raw, combo, tables, strict=True))
            for raw in raws
        )  # fmt: skip
        small = _small(classes, k)
        if not _acceptable(small, k, budget):
            continue
        loss = (sum(lv / q.top for lv, q in zip(combo, ladders, strict=True)), small, -len(classes))
        if best is None or (loss, combo) < best:
            best = (loss, combo)
    chosen = best[1] if best else tuple(q.top for q in ladders)
    return {q.name: level for q, level in zip(ladders, chosen, strict=True)}


def _greedy(
    records: Mapping[int, Mapping[str, str]], ladders: Sequence[Ladder], k: int, budget: int
) -> tuple[dict[str, int], list[str]]:
    """For QI sets too large to search: raise one QI at a time (the step that leaves the
    fewest records in small classes), then undo steps that were not needed."""
    levels = {q.name: 0 for q in ladders}
    steps: list[str] = []
    while not _acceptable(_small(_classes(records, ladders, levels), k), k, budget):
        options = []
        for position, q in enumerate(ladders):
            if levels[q.name] >= q.top:
                continue
            trial = {**levels, q.name: levels[q.name] + 1}
            left = q.top - levels[q.name]
            options.append((_small(_classes(records, ladders, trial), k), -left, position, q))
        if not options:
            break  # everything is "*": fewer than k records in the whole study
        *_, chosen = min(options, key=lambda o: o[:3])
        levels[chosen.name] += 1
        steps.append(f"{chosen.name}: level {levels[chosen.name]} of {chosen.top}")
    _refine(records, ladders, levels, k, budget, steps)
    return levels, steps


def anonymise(
    records: Mapping[int, Mapping[str, str]],
    ladders: Sequence[Ladder],
    *,
    k: int = 5,
    max_suppressed_share: float = 0.10,
) -> KanonResult:
    """Generalise (then suppress) ``records`` (id -> QI -> level-0 value) to k-anonymity."""
    budget = int(len(records) * max_suppressed_share)
    method = "optimal full-domain generalisation (every level combination tried)"
    searched = _lattice(records, ladders, k, budget)
    if searched is not None:
        levels = searched
        steps = [f"{q.name}: level {levels[q.name]} of {q.top}" for q in ladders if levels[q.name]]
    else:
        method = "greedy full-domain generalisation"
        levels, steps = _greedy(records, ladders, k, budget)
    classes = _classes(records, ladders, levels)
    small_keys = {key for key, n in classes.items() if n < k}
    values: dict[int, dict[str, str]] = {}
    suppressed = 0
    for rid, rec in records.items():
        key = tuple(q.at(levels[q.name], rec.get(q.name, MISSING)) for q in ladders)
        if key in small_keys and len(records) >= k:
            values[rid] = {q.name: SUPPRESSED for q in ladders}
            suppressed += 1
        else:
            values[rid] = dict(zip((q.name for q in ladders), key, strict=True))
    final = Counter(tuple(v.values()) for v in values.values())
    sizes = Counter(final.values())
    return KanonResult(
        k=k,
        values=values,
        levels=levels,
        method=method,
        steps=steps,
        suppressed=suppressed,
        k_achieved=min(final.values(), default=0),
        class_sizes=dict(sorted(sizes.items())),
    )


def k_of(records: Mapping[int, Mapping[str, str]], names: Sequence[str]) -> int:
    """The smallest equivalence class of ``records`` on ``names`` (0 for no records)."""
    classes = Counter(tuple(rec.get(n, MISSING) for n in names) for rec in records.values())
    return min(classes.values(), default=0)


def describe(result: KanonResult, ladders: Sequence[Ladder]) -> dict[str, Any]:
    """The k-anonymity part of ``deid_report.json``."""
    return {
        "k_target": result.k,
        "k_achieved": result.k_achieved,
        "k_satisfied": result.satisfied,
        "quasi_identifiers": [q.name for q in ladders],
        "generalisation": {
            q.name: {
                "source": q.source,
                "level": result.levels[q.name],
                "top_level": q.top,
                "fully_generalised": result.levels[q.name] >= q.top,
                "released_values": sorted(
                    {v[q.name] for v in result.values.values()}, key=lambda s: (s == ANY, s)
                ),
            }
            for q in ladders
        },
        "method": result.method,
        "steps": result.steps,
        "suppressed_records": result.suppressed,
        "equivalence_class_sizes": {str(size): n for size, n in result.class_sizes.items()},
    }


# --- The shipped screening instrument (study/questionnaires/instruments/) ----------------------
# Collected coarse at source; these ladders merge further only as far as k needs.
SCREENING_QIS: tuple[Ladder, ...] = (
    Ladder(
        "age_band",
        "screening.age_band",
        ("18_24", "25_34", "35_44", "45_plus", "no_answer"),
        ({"18_24": "18_34", "25_34": "18_34", "35_44": "35_plus", "45_plus": "35_plus"},),
    ),
    Ladder(
        "gender_cat",
        "screening.gender",
        ("woman", "man", "another", "no_answer"),
        ({"another": "another_or_no_answer", "no_answer": "another_or_no_answer"},),
    ),
    Ladder(
        "role_cat",
        "screening.occupation",
        ("student_undergrad", "student_grad", "academia", "industry", "other"),
        (
            {"student_undergrad": "student", "student_grad": "student"},
            {"academia": "non_student", "industry": "non_student", "other": "non_student"},
        ),
    ),
    Ladder(
        "experience_band",
        "screening.programming_years",
        ("lt_1", "1_2", "3_5", "6_10", "gt_10"),
        (
            {"lt_1": "lt_3", "1_2": "lt_3", "6_10": "gt_5", "gt_10": "gt_5"},
            {"lt_3": "le_5", "3_5": "le_5"},
        ),
    ),
    Ladder(
        "ai_use_cat",
        "screening.ai_frequency",
        ("never", "tried", "monthly", "weekly", "daily"),
        (
            {"never": "rarely", "tried": "rarely", "monthly": "regularly", "weekly": "regularly"},
            {"daily": "regularly"},
        ),
    ),
)
