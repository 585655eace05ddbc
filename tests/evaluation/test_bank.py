"""The template bank: loading, strict validation, content hashes, and every shipped template.

The shipped templates are checked end to end in-process: the references and legacy modules are
our own trusted code, so they are imported from a temporary directory with importlib.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import textwrap
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evaluation.bank import BANK_DIR, BankError, content_hash, list_templates, load_template
from evaluation.instantiate import instantiate
from evaluation.spec import Instance

SHIPPED = (
    "ds-window-top-segments",
    "mle-palindromic-path",
    "sde-binary-palindromes",
    "sde-clickomania",
)
SEEDS = (1, 2)

MINIMAL_TOML = """\
slug = "tiny-sum"
title = "Tiny sum"
version = "1.0.0"
track = "SDE"
difficulty = "easy"
time_limit_min = 30

[limits]
cpu_s = 2.0
mem_mib = 256

[params.offset]
type = "int"
min = 1
max = 9

[[constraints]]
id = "stdlib-only"
text = "Use the standard library in ${entry_point}."

[context]
company = [{ name = "Acme", industry = "anvils" }, { name = "Globex", industry = "energy" }]
role = ["engineer", "analyst"]
scenario = ["${company} needs sums."]

[names]
entry_point = ["add_offset", "shifted_sum"]
values_arg = ["values", "numbers"]
"""

MINIMAL_FILES = {
    "README.md.tmpl": "# ${title} at ${company} (${company_industry})\n\n${scenario}\n"
    "Implement `${entry_point}(${values_arg})`. ${constraint_text}\n\n${task_data_example}\n",
    "starter/solution.py.tmpl": "def ${entry_point}(${values_arg}):\n"
    '    raise NotImplementedError("todo")\n',
    "visible/test_visible.py.tmpl": "import unittest\n\nfrom solution import ${entry_point}\n\n"
    "CASES = ${visible_cases}\n\n\nclass T(unittest.TestCase):\n"
    "    def test_cases(self):\n        for c in CASES:\n"
    '            self.assertEqual(${entry_point}(*c["args"]), c["expected"])\n',
    "references/efficient.py.tmpl": "def ${entry_point}(${values_arg}):\n"
    "    return sum(${values_arg}) + ${offset}\n",
    "references/naive.py.tmpl": "def ${entry_point}(${values_arg}):\n"
    "    total = ${offset}\n    for v in ${values_arg}:\n        total += v\n    return total\n",
    "files/${entry_point}_notes.md.tmpl": "Offset is ${offset}.\n",
    "generator.py": textwrap.dedent(
        """\
        def generate(params, names, rng):
            def case(name, values, visible=False, kind="functional"):
                return {"name": name, "kind": kind, "category": "random", "args": [values],
                        "kwargs": {}, "expected": sum(values) + params["offset"],
                        "visible": visible}
            example = [rng.randint(0, 9) for _ in range(3)]
            cases = [case("example", example, visible=True)]
            cases += [case(f"random_{i}", [rng.randint(-99, 99) for _ in range(5)])
                      for i in range(4)]
            cases.append(case("scale", list(range(1000)), kind="performance"))
            return {"task_data": {"input": example, "expected_output": cases[0]["expected"]},
                    "cases": cases}
        """
    ),
}


def write_minimal_template(
    bank: Path, toml: str = MINIMAL_TOML, files: dict[str, str] | None = None
) -> Path:
    """A small valid template ``tiny-sum`` under ``bank``; tests mutate it to break it."""
    directory = bank / "tiny-sum"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "template.toml").write_text(toml)
    for relative, text in (MINIMAL_FILES if files is None else files).items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


def load_module(source: str, name: str, directory: Path) -> ModuleType:
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def passes(instance: Instance, expected: Any, actual: Any) -> bool:
    actual = json.loads(json.dumps(actual))  # what the harness would print
    if instance.compare is not None:
        return instance.compare(expected, actual)[0]
    return bool(expected == actual)


@cache
def shipped_instance(slug: str, seed: int) -> Instance:
    return instantiate(load_template(slug), seed)


# --- loading ---------------------------------------------------------------------------------


def test_bank_ships_the_three_templates_and_all_validate() -> None:
    slugs = [t.slug for t in list_templates()]
    assert set(SHIPPED) <= set(slugs)
    assert slugs == sorted(slugs)


def test_loaded_template_exposes_manifest_fields() -> None:
    template = load_template("mle-palindromic-path")
    assert (template.track, template.difficulty) == ("MLE", "medium")
    assert template.path == BANK_DIR / "mle-palindromic-path"
    assert template.cpu_s > 0
    assert template.mem_mib >= 256
    assert len(template.content_hash) == 64
    assert "entry_point" in template.raw["names"]


def test_unknown_slug_names_the_known_templates_in_one_sentence() -> None:
    with pytest.raises(BankError) as caught:
        load_template("no-such-task")
    message = str(caught.value)
    assert message.startswith("Unknown template 'no-such-task'; known templates: ")
    assert all(slug in message for slug in SHIPPED)
    assert message.endswith(".")
    assert message.count(". ") == 0


def test_path_like_slug_is_rejected_as_unknown() -> None:
    with pytest.raises(BankError, match="Unknown template"):
        load_template("../bank")


def test_minimal_template_loads_from_another_bank_dir(tmp_path: Path) -> None:
    write_minimal_template(tmp_path)
    assert [t.slug for t in list_templates(tmp_path)] == ["tiny-sum"]
    assert load_template("tiny-sum", tmp_path).version == "1.0.0"


# --- content hash ----------------------------------------------------------------------------


def test_content_hash_ignores_pycache_but_sees_every_byte(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path)
    before = content_hash(directory)
    (directory / "__pycache__").mkdir()
    (directory / "__pycache__" / "generator.cpython-311.pyc").write_bytes(b"junk")
    assert content_hash(directory) == before
    (directory / "README.md.tmpl").write_text(MINIMAL_FILES["README.md.tmpl"] + " ")
    assert content_hash(directory) != before


def test_content_hash_depends_on_file_names(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path)
    before = content_hash(directory)
    (directory / "files" / "${entry_point}_notes.md.tmpl").rename(
        directory / "files" / "${entry_point}_notez.md.tmpl"
    )
    assert content_hash(directory) != before


# --- strict validation -----------------------------------------------------------------------

BROKEN_MANIFESTS = [
    ('version = "1.0.0"', 'version = "1.0"', "version"),
    ('track = "SDE"', 'track = "QA"', "track"),
    ('difficulty = "easy"', 'difficulty = "trivial"', "difficulty"),
    ("time_limit_min = 30", "time_limit_min = 0", "time_limit_min"),
    ('title = "Tiny sum"\n', "", "title"),
    ("min = 1\nmax = 9", "min = 9\nmax = 1", "params.offset"),
    ('type = "int"', 'type = "date"', "params.offset.type"),
    ("cpu_s = 2.0", "cpu_s = -1", "limits.cpu_s"),
    ("mem_mib = 256", "mem_mib = 256\nswap_mib = 1", "limits"),
    ('slug = "tiny-sum"', 'slug = "tiny-sum"\nauthor = "me"', "author"),
    ('slug = "tiny-sum"', 'slug = "other-slug"', "slug"),
    ('role = ["engineer", "analyst"]\n', "", "context.role"),
    ('role = ["engineer", "analyst"]', 'role = ["engineer", "engineer"]', "context.role"),
    (
        'values_arg = ["values", "numbers"]',
        'values_arg = ["values", "add_offset"]',
        "names.values_arg",
    ),
    ('values_arg = ["values", "numbers"]', 'values_arg = ["2values"]', "names.values_arg"),
    ('values_arg = ["values", "numbers"]', 'offset = ["x"]', "names.offset"),
    ('id = "stdlib-only"', 'id = "Stdlib Only"', "constraints[0].id"),
    ("Use the standard library in ${entry_point}.", "Use ${nothing}.", "constraints[0].text"),
]


@pytest.mark.parametrize(("old", "new", "field"), BROKEN_MANIFESTS)
def test_invalid_manifest_field_is_named_with_the_file(
    tmp_path: Path, old: str, new: str, field: str
) -> None:
    assert old in MINIMAL_TOML
    directory = write_minimal_template(tmp_path, MINIMAL_TOML.replace(old, new, 1))
    with pytest.raises(BankError) as caught:
        load_template("tiny-sum", tmp_path)
    message = str(caught.value)
    assert str(directory / "template.toml") in message
    assert f"field '{field}'" in message
    assert message.endswith(".")


def test_malformed_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path, MINIMAL_TOML + "\nthis is not toml\n")
    with pytest.raises(BankError, match="is not valid TOML") as caught:
        load_template("tiny-sum", tmp_path)
    assert str(directory / "template.toml") in str(caught.value)


def test_missing_required_file_is_reported(tmp_path: Path) -> None:
    files = {k: v for k, v in MINIMAL_FILES.items() if k != "references/naive.py.tmpl"}
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(BankError, match=r"required file 'references/naive\.py\.tmpl' is missing"):
        load_template("tiny-sum", tmp_path)


def test_unknown_placeholder_in_a_template_file_is_reported(tmp_path: Path) -> None:
    files = dict(MINIMAL_FILES)
    files["README.md.tmpl"] += "Owner: ${owner}\n"
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(
        BankError, match=r"README\.md\.tmpl: the content uses unknown placeholder 'owner'"
    ):
        load_template("tiny-sum", tmp_path)


def test_unknown_placeholder_in_a_shipped_file_path_is_reported(tmp_path: Path) -> None:
    files = dict(MINIMAL_FILES)
    files["files/${module}.py"] = "x = 1\n"
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(BankError, match="the path uses unknown placeholder 'module'"):
        load_template("tiny-sum", tmp_path)


def test_placeholder_namespaces_may_not_clash(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace("[params.offset]", "[params.company]")
    toml = toml.replace("${offset}", "${company}")
    files = {k: v.replace("${offset}", "1") for k, v in MINIMAL_FILES.items()}
    write_minimal_template(tmp_path, toml, files)
    with pytest.raises(BankError, match="clashes with the params placeholder"):
        load_template("tiny-sum", tmp_path)


# --- every shipped template, end to end -----------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("slug", SHIPPED)
def test_efficient_reference_passes_every_case(slug: str, seed: int, tmp_path: Path) -> None:
    instance = shipped_instance(slug, seed)
    module = load_module(instance.references["efficient"], f"efficient_{seed}", tmp_path)
    function = getattr(module, instance.entry_point)
    failed = [
        case.name
        for case in instance.cases
        if not passes(instance, case.expected, function(*case.args, **case.kwargs))
    ]
    assert failed == []


@pytest.mark.parametrize("slug", SHIPPED)
def test_naive_reference_passes_every_functional_case(slug: str, tmp_path: Path) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    module = load_module(instance.references["naive"], "naive_ref", tmp_path)
    function = getattr(module, instance.entry_point)
    functional = [c for c in instance.cases if c.kind == "functional"]
    failed = [
        c.name
        for c in functional
        if not passes(instance, c.expected, function(*c.args, **c.kwargs))
    ]
    assert failed == []


@pytest.mark.parametrize("slug", SHIPPED)
def test_starter_fails_the_first_visible_case(slug: str, tmp_path: Path) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    module = load_module(instance.participant_files["solution.py"], "starter", tmp_path)
    visible = next(c for c in instance.cases if c.visible)
    with pytest.raises(NotImplementedError):
        getattr(module, instance.entry_point)(*visible.args, **visible.kwargs)


@pytest.mark.parametrize("slug", SHIPPED)
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
@pytest.mark.parametrize("slug", SHIPPED)
def test_legacy_module_agrees_with_the_expected_outputs(
    slug: str, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The implicit rules live in the legacy code, so it must define the same answers."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    instance = shipped_instance(slug, seed)
    LEGACY_CHECKS[slug](instance, _legacy(instance, tmp_path))


def test_copy_of_a_shipped_template_validates_outside_the_bank(tmp_path: Path) -> None:
    shutil.copytree(BANK_DIR / "sde-binary-palindromes", tmp_path / "sde-binary-palindromes")
    copied = load_template("sde-binary-palindromes", tmp_path)
    assert copied.content_hash == load_template("sde-binary-palindromes").content_hash
