"""Every shipped template end to end, in-process: the efficient reference passes every case, the
naive one every functional case, the starter fails, the cases follow the authoring targets, and
the legacy module agrees with the expected outputs. The references and legacy modules are our
own trusted code, so they are imported from a temporary directory with importlib."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from evaluation.spec import Instance
from tests.evaluation.bank_helpers import FIRST_BANK, SEEDS, load_module, passes, shipped_instance


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("slug", FIRST_BANK)
def test_efficient_reference_passes_every_case(slug: str, seed: int, tmp_path: Path) -> None:
    instance = shipped_instance(slug, seed)
    module = load_module(
        instance.references["efficient"]["solution.py"], f"efficient_{seed}", tmp_path
    )
    function = getattr(module, instance.entry_point)
    failed = [
        case.name
        for case in instance.cases
        if not passes(instance, case.expected, function(*case.args, **case.kwargs))
    ]
    assert failed == []


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_naive_reference_passes_every_functional_case(slug: str, tmp_path: Path) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    module = load_module(instance.references["naive"]["solution.py"], "naive_ref", tmp_path)
    function = getattr(module, instance.entry_point)
    functional = [c for c in instance.cases if c.kind == "functional"]
    failed = [
        c.name
        for c in functional
        if not passes(instance, c.expected, function(*c.args, **c.kwargs))
    ]
    assert failed == []


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_starter_fails_the_first_visible_case(slug: str, tmp_path: Path) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    module = load_module(instance.participant_files["solution.py"], "starter", tmp_path)
    visible = next(c for c in instance.cases if c.visible)
    with pytest.raises(NotImplementedError):
        getattr(module, instance.entry_point)(*visible.args, **visible.kwargs)


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_cases_follow_the_authoring_targets(slug: str) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    kinds = [c.kind for c in instance.cases]
    hidden_functional = [c for c in instance.hidden_cases if c.kind == "functional"]
    assert 2 <= sum(c.visible for c in instance.cases) <= 3
    assert 10 <= len(hidden_functional) <= 25
    assert 1 <= kinds.count("performance") <= 3
    assert all(not c.visible for c in instance.cases if c.kind == "performance")


def _legacy(instance: Instance, directory: Path) -> ModuleType:
    name = instance.names["legacy_module"]
    return load_module(instance.participant_files[f"{name}.py"], name, directory)


def _check_sde_legacy(instance: Instance, legacy: ModuleType) -> None:
    for case in instance.cases:
        ceilings = case.args[0]
        if case.kind == "functional" and ceilings and max(ceilings) <= 5000:
            assert [legacy.count_issuable(n) for n in ceilings] == case.expected, case.name


def _check_ds_legacy(instance: Instance, legacy: ModuleType) -> None:
    old = {
        instance.names["segment_col"]: "seg",
        instance.names["amount_col"]: "amt_minor",
        instance.names["status_col"]: "flag",
    }
    job = getattr(legacy, instance.names["legacy_class"])
    for case in instance.cases:
        if case.kind == "functional":
            feed, window, k, every = case.args
            rows = [
                {old[c]: str(v) for c, v in zip(feed["columns"], r, strict=True)}
                for r in feed["rows"]
            ]
            assert job(rows, window, k, every).run() == case.expected, case.name


def _check_mle_legacy(instance: Instance, legacy: ModuleType) -> None:
    trace = getattr(legacy, instance.names["legacy_function"])
    for case in instance.cases:
        layers, links = case.args
        if case.kind == "functional" and len(layers) <= 20:
            mirrors = [c for c in trace(layers, links) if legacy.is_mirror(c, layers)]
            assert max(map(len, mirrors), default=0) == case.expected, case.name


def _first_pair(grid: list[list[str | None]]) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The house policy on the prototype's grid (row 0 at the top)."""
    for row in reversed(range(len(grid))):
        for col, cell in enumerate(grid[row]):
            if cell is None:
                continue
            if col + 1 < len(grid[row]) and grid[row][col + 1] == cell:
                return (row, col), (row, col + 1)
            if row > 0 and grid[row - 1][col] == cell:
                return (row, col), (row - 1, col)
    return None


def _check_click_legacy(instance: Instance, legacy: ModuleType) -> None:
    apply_move = getattr(legacy, instance.names["legacy_apply"])
    for case in instance.cases:
        board = case.args[0]
        if case.kind == "functional" and len(board) * len(board[0] if board else "") <= 200:
            grid = legacy.parse(board)
            while (pair := _first_pair(grid)) is not None:
                grid = apply_move(grid, *pair)
            assert legacy.show(grid) == case.expected, case.name


LEGACY_CHECKS: dict[str, Callable[[Instance, ModuleType], None]] = {
    "sde-clickomania": _check_click_legacy,
    "sde-binary-palindromes": _check_sde_legacy,
    "ds-window-top-segments": _check_ds_legacy,
    "mle-palindromic-path": _check_mle_legacy,
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("slug", FIRST_BANK)
def test_legacy_module_agrees_with_the_expected_outputs(
    slug: str, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The implicit rules live in the legacy code, so it must define the same answers."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    instance = shipped_instance(slug, seed)
    LEGACY_CHECKS[slug](instance, _legacy(instance, tmp_path))
