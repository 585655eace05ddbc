"""A study's human conditions in the leaderboard: C_H (the arms without AI) and C_2 (the arms
with AI) as two more columns, from the results dashboard's trial rows (the same outcome
definitions as the models': the grading report's overall and partial pass).

They are shown only when every template version the study's ended trials used is the one in
the dataset (otherwise people and models solved different tasks, and the page says which
template differs); the models' columns are then narrowed to the study's templates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evaluation.llm.leaderboard import Board, Cell, add_column, keep, leaderboard
from evaluation.models import Dataset
from study.models import Study, Trial
from study.results.dashboard import ENDED, trial_table
from study.results.table2 import Row, cell

HUMAN_CONDITIONS = (
    ("C_H", "C_H: people without AI", False),
    ("C_2", "C_2: people with AI", True),
)


def used_template_versions(study: Study) -> set[tuple[str, str]]:
    """(slug, version) of every template the study's ended trials were given."""
    return set(
        Trial.objects.filter(participant__study=study, status__in=ENDED, instance__isnull=False)
        .values_list("instance__template__slug", "instance__template__version")
        .distinct()
    )


def mismatches(used: set[tuple[str, str]], dataset: Dataset) -> list[str]:
    problems = []
    for slug, version in sorted(used):
        recorded = dataset.templates.get(slug)
        if recorded is None:
            problems.append(f"{slug} is not in the dataset")
        elif recorded.get("version") != version:
            problems.append(
                f"the study used {slug} {version}, the dataset has {recorded.get('version')}"
            )
    return problems


def human_cell(rows: Sequence[Row]) -> Cell:
    """Table 2's cell of these trials (``study.results.table2.cell``) in the board's keys."""
    c = cell(rows)
    return {
        "n": c["n"],
        "samples": c["n"],
        "pass@1": c["pass_at_1"],
        "pass@1_ci": c["pass_ci"],
        "pass@10": None,
        "partial_pass": c["partial_pass"],
        "tokens": c["tokens"],
        "cost": None,
    }


def _cells(rows: Sequence[Row]) -> Callable[[str, str], Cell]:
    def cell(section: str, value: str) -> Cell:
        belongs = keep(section, value)
        return human_cell([r for r in rows if belongs(r["track"] or "", r["difficulty"] or "")])

    return cell


def study_board(study: Study, dataset: Dataset | None) -> tuple[Board, str]:
    """The board for ``study`` and a sentence on why people are not in it ("" when they are)."""
    used = used_template_versions(study)
    if dataset is None:
        return leaderboard(None), "People are compared only against a dataset's sweeps."
    if not used:
        return leaderboard(dataset), "The study has no ended trials yet."
    problems = mismatches(used, dataset)
    if problems:
        note = "The study's tasks are not this dataset's: " + "; ".join(problems) + "."
        return leaderboard(dataset), note
    board = leaderboard(dataset, templates={slug for slug, _ in used})
    rows = trial_table(study)
    for condition, label, ai in HUMAN_CONDITIONS:
        column: dict[str, Any] = {
            "label": label,
            "kind": "human",
            "model": None,
            "endpoint": None,
            "condition": condition,
        }
        add_column(board, column, _cells([r for r in rows if bool(r["ai"]) == ai]))
    board["study"] = study.slug
    return board, ""
