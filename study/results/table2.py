"""The paper's Table 2 from trial rows: pass@1 with a Wilson interval, partial pass, completion
time (PAR) and tokens per condition, overall and by track, difficulty and session."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from evaluation.proportions import wilson

Row = dict[str, Any]
DIFFICULTY_ORDER = ("easy", "medium", "hard")


def _mean(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def cell(rows: Sequence[Row]) -> dict[str, Any]:
    judged = [r["overall_pass"] for r in rows if r["overall_pass"] is not None]
    low, high = wilson(sum(judged), len(judged))
    return {
        "n": len(judged),
        "n_trials": len(rows),
        "n_participants": len({r["participant"] for r in rows}),
        "pass_at_1": _mean(judged),
        "pass_ci": [low, high],
        "partial_pass": _mean(r["partial_pass"] for r in rows),
        "completion_time_s": _mean(r["completion_time_s"] for r in rows),
        "tokens": _mean(r["tokens"] for r in rows),
    }


def conditions(rows: Sequence[Row]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        seen.setdefault(
            r["condition"],
            {"condition": r["condition"], "arm": r["arm"], "ai_mode": r["ai_mode"], "ai": r["ai"]},
        )
    return [seen[c] for c in sorted(seen)]


def ordered(values: Iterable[str | None], order: Sequence[str] = ()) -> list[str]:
    present = {v for v in values if v}
    return [v for v in order if v in present] + sorted(present - set(order))


def table2(rows: Sequence[Row]) -> dict[str, Any]:
    """Per condition: overall, by difficulty and by track — pass@1 (with a Wilson 95 % CI),
    partial pass, completion time (PAR-N) and tokens, with n per cell."""
    conds = conditions(rows)
    by_condition: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_condition[r["condition"]].append(r)

    def line(label: str, keep: Any) -> dict[str, Any]:
        return {
            "label": label,
            "cells": [cell([r for r in by_condition[c["condition"]] if keep(r)]) for c in conds],
        }

    difficulties = ordered((r["difficulty"] for r in rows), DIFFICULTY_ORDER)
    tracks = ordered(r["track"] for r in rows)
    return {
        "conditions": conds,
        "sections": [
            {"title": "Overall", "rows": [line("All tasks", lambda r: True)]},
            {
                "title": "By difficulty",
                "rows": [
                    line(d.capitalize(), lambda r, d=d: r["difficulty"] == d) for d in difficulties
                ],
            },
            {
                "title": "By track",
                "rows": [line(t, lambda r, t=t: r["track"] == t) for t in tracks],
            },
        ],
    }
