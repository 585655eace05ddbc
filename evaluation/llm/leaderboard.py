"""The leaderboard: one column per model x condition over a dataset's benchmark sweeps, with
pass@1 (and its Wilson interval), pass@10, partial pass, tokens and cost, overall, by
difficulty and by track; exported as JSON, CSV and Markdown.

All the benchmark sweeps of an endpoint and condition on the same dataset count together (the
runs of a resumed or repeated sweep are more samples of the same instances). The figures are
``evaluation.llm.results``' blocks, so they follow the same definitions as ``benchmark_llm``.
The study layer adds its human conditions as further columns of the same shape
(``add_column``): a cell needs ``n``, ``pass@1``, ``pass@1_ci``, ``pass@10``,
``partial_pass``, ``tokens`` and ``cost`` (None where it has no meaning).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Collection, Sequence
from typing import Any

from evaluation.llm.results import DIFFICULTY_ORDER, RunOutcome, block, ordered, run_outcomes
from evaluation.models import AgentRun, Dataset, Sweep

Cell = dict[str, Any]
Board = dict[str, Any]
CELL_FIELDS = ("n", "samples", "pass@1", "pass@1_ci", "pass@10", "partial_pass", "tokens", "cost")


def llm_cell(outcomes: Sequence[RunOutcome]) -> Cell:
    figures = block(outcomes)
    runs = figures["runs"] - figures["failed"] - figures["unfinished"]
    tokens = figures["prompt_tokens"] + figures["completion_tokens"]
    return {
        "n": figures["n"],
        "samples": figures["samples"],
        "pass@1": figures["pass@1"],
        "pass@1_ci": figures["pass@1_ci"],
        "pass@10": figures["pass@10"],
        "partial_pass": figures["partial_pass"],
        "tokens": tokens / runs if runs else None,  # per run, like a trial's tokens
        "cost": figures["cost"],
    }


def row_keys(outcomes: Sequence[RunOutcome]) -> list[tuple[str, str, str]]:
    """(section, label, value) of every row: overall, each difficulty, each track."""
    difficulties = ordered((o.difficulty for o in outcomes), DIFFICULTY_ORDER)
    tracks = ordered(o.track for o in outcomes)
    return [
        ("Overall", "All tasks", ""),
        *(("By difficulty", d.capitalize(), d) for d in difficulties),
        *(("By track", t, t) for t in tracks),
    ]


def keep(section: str, value: str) -> Callable[[str, str], bool]:
    """Whether a (track, difficulty) belongs to the row ``section``/``value``."""
    if section == "By difficulty":
        return lambda track, difficulty: difficulty == value
    if section == "By track":
        return lambda track, difficulty: track == value
    return lambda track, difficulty: True


def leaderboard(dataset: Dataset | None, *, templates: Collection[str] | None = None) -> Board:
    """The board of ``dataset``'s benchmark sweeps (``None``: sweeps over seeds 1..N without a
    dataset); ``templates`` keeps only those templates' runs (a study's)."""
    sweeps = Sweep.objects.filter(purpose=Sweep.Purpose.BENCHMARK, dataset=dataset)
    runs = AgentRun.objects.filter(sweep__in=sweeps)
    if templates is not None:
        runs = runs.filter(instance__template__slug__in=list(templates))
    # One column per model x condition x limits: sweeps that gave the agent other attempts or
    # another budget, or asked another model under the same endpoint name, are not pooled.
    groups: dict[tuple[str, str, str, int, int | None], list[int]] = {}
    for sweep in sweeps.select_related("endpoint").order_by("endpoint__name", "condition", "pk"):
        model = str(sweep.endpoint_settings.get("model") or sweep.endpoint.model)
        key = (sweep.endpoint.name, model, sweep.condition, sweep.attempts, sweep.budget_tokens)
        groups.setdefault(key, []).append(sweep.pk)
    columns: list[dict[str, Any]] = []
    outcomes: list[list[RunOutcome]] = []
    for (name, model, condition, attempts, budget), sweep_ids in groups.items():
        found = run_outcomes(runs.filter(sweep_id__in=sweep_ids))
        if not found:
            continue
        limits = f"{attempts} attempts" + (f", {budget:,} tokens" if budget else "")
        columns.append(
            {
                "label": f"{name} {condition}",
                "kind": "llm",
                "endpoint": name,
                "model": model,
                "condition": condition,
                "attempts": attempts,
                "budget_tokens": budget,
                "limits": limits,
            }
        )
        outcomes.append(found)
    everything = [o for group in outcomes for o in group]
    rows = []
    for section, label, value in row_keys(everything):
        belongs = keep(section, value)
        rows.append(
            {
                "section": section,
                "label": label,
                "value": value,
                "cells": [
                    llm_cell([o for o in group if belongs(o.track, o.difficulty)])
                    for group in outcomes
                ],
            }
        )
    return {
        "dataset": dataset.version if dataset else None,
        "templates": sorted(templates) if templates is not None else None,
        "columns": columns,
        "rows": rows,
    }


def add_column(board: Board, column: dict[str, Any], cell: Callable[[str, str], Cell]) -> None:
    """Append a column; ``cell(section, value)`` gives its cell for each row."""
    board["columns"].append(column)
    for row in board["rows"]:
        row["cells"].append(cell(row["section"], row["value"]))


def sections(board: Board) -> list[dict[str, Any]]:
    """The rows grouped under their section titles, in order."""
    out: list[dict[str, Any]] = []
    for row in board["rows"]:
        if not out or out[-1]["title"] != row["section"]:
            out.append({"title": row["section"], "rows": []})
        out[-1]["rows"].append(row)
    return out


# --- Exports --------------------------------------------------------------------------------
CSV_COLUMNS = (
    "section",
    "row",
    "column",
    "kind",
    "model",
    "condition",
    "n",
    "samples",
    "pass_at_1",
    "pass_at_1_low",
    "pass_at_1_high",
    "pass_at_10",
    "partial_pass",
    "tokens",
    "cost",
)


def _blank(value: Any) -> Any:
    return "" if value is None else value


def board_csv(board: Board) -> str:
    """Long format: one line per row x column."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in board["rows"]:
        for column, c in zip(board["columns"], row["cells"], strict=True):
            low, high = c["pass@1_ci"]
            writer.writerow(
                [
                    row["section"],
                    row["label"],
                    column["label"],
                    column["kind"],
                    _blank(column.get("model")),
                    column["condition"],
                    *(_blank(v) for v in (c["n"], c.get("samples"), c["pass@1"], low, high)),
                    *(_blank(c[k]) for k in ("pass@10", "partial_pass", "tokens", "cost")),
                ]
            )
    return out.getvalue()


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def pass_text(c: Cell) -> str:
    """``pass@1`` with its interval, e.g. ``50.0 % (9 to 91)``."""
    low, high = c["pass@1_ci"]
    text = _percent(c["pass@1"])
    return text if low is None else f"{text} ({100 * low:.0f} to {100 * high:.0f})"


def board_markdown(board: Board) -> str:
    """One table per section: a line per row x column."""
    title = f"dataset {board['dataset'][:12]}" if board["dataset"] else "seeds 1..N (no dataset)"
    lines = [f"# Leaderboard, {title}", ""]
    for section in sections(board):
        lines += [
            f"## {section['title']}",
            "",
            "| Tasks | Model and condition | n | pass@1 (95 % CI) | pass@10 | partial pass "
            "| tokens / run | cost |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for row in section["rows"]:
            for column, c in zip(board["columns"], row["cells"], strict=True):
                tokens = "—" if c["tokens"] is None else f"{c['tokens']:,.0f}"
                cost = "—" if c["cost"] is None else f"{c['cost']:.4f}"
                lines.append(
                    f"| {row['label']} | {column['label']} | {c['n']} | {pass_text(c)} "
                    f"| {_percent(c['pass@10'])} | {_percent(c['partial_pass'])} | {tokens} "
                    f"| {cost} |"
                )
        lines.append("")
    return "\n".join(lines)
