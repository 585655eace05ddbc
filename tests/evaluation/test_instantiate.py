"""Rendering instances: determinism, the four tools, consistent names, and no hidden leaks."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.bank import BankError, load_template
from evaluation.instantiate import (
    SUBMIT_FILE,
    canonical_json,
    choose_names,
    choose_params,
    instantiate,
    write_instance,
)
from tests.evaluation.bank_helpers import (
    FIRST_BANK,
    MINIMAL_FILES,
    MINIMAL_TOML,
    SEEDS,
    shipped_instance,
    write_minimal_template,
)

ROOT = Path(__file__).resolve().parents[2]
PARTICIPANT_CORE = {"README.md", "solution.py", "task_data.json", "test_visible.py", "submit"}


# --- determinism -----------------------------------------------------------------------------


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_same_seed_renders_the_same_instance(slug: str) -> None:
    first, second = shipped_instance(slug, SEEDS[0]), instantiate(load_template(slug), SEEDS[0])
    assert first is not second
    assert first.content_hash == second.content_hash
    assert first.participant_files == second.participant_files
    assert first.cases == second.cases


def test_rendering_does_not_depend_on_string_hashing() -> None:
    """Another process with another PYTHONHASHSEED renders byte-identical instances."""
    script = (
        "import json\n"
        "from evaluation.bank import load_template\n"
        "from evaluation.instantiate import instantiate\n"
        f"print(json.dumps([instantiate(load_template(s), {SEEDS[0]}).content_hash"
        f" for s in {FIRST_BANK!r}]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    expected = [shipped_instance(s, SEEDS[0]).content_hash for s in FIRST_BANK]
    assert json.loads(result.stdout) == expected


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_two_seeds_render_visibly_different_instances(slug: str) -> None:
    one, two = shipped_instance(slug, SEEDS[0]), shipped_instance(slug, SEEDS[1])
    assert one.content_hash != two.content_hash
    assert one.participant_files["README.md"] != two.participant_files["README.md"]
    assert one.participant_files["task_data.json"] != two.participant_files["task_data.json"]
    template = load_template(slug)
    entry_points = {choose_names(template, seed)["entry_point"] for seed in range(1, 9)}
    assert len(entry_points) > 1


def test_adding_a_vocabulary_entry_does_not_shift_parameters(tmp_path: Path) -> None:
    write_minimal_template(tmp_path)
    before = load_template("tiny-sum", tmp_path)
    richer = MINIMAL_TOML.replace(
        'role = ["engineer", "analyst"]', 'role = ["engineer", "analyst", "lead"]'
    )
    write_minimal_template(tmp_path, richer)
    after = load_template("tiny-sum", tmp_path)
    for seed in range(10):
        assert choose_params(before, seed) == choose_params(after, seed)
        assert choose_names(before, seed) == choose_names(after, seed)


def test_parameters_stay_inside_their_declared_ranges() -> None:
    template = load_template("ds-window-top-segments")
    specs = template.raw["params"]
    for seed in range(30):
        for name, value in choose_params(template, seed).items():
            spec = specs[name]
            if spec["type"] == "choice":
                assert value in spec["choices"]
            else:
                assert spec["min"] <= value <= spec["max"]
                assert (value - spec["min"]) % spec.get("step", 1) == 0


# --- the four tools, applied consistently ---------------------------------------------------


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_instance_carries_all_four_tools(slug: str) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    template = instance.template
    assert set(instance.params) == set(template.raw["params"])
    assert instance.constraint["id"] in {c["id"] for c in template.raw["constraints"]}
    assert {"company", "role", "scenario"} <= set(instance.context)
    assert set(instance.names) == set(template.raw["names"])
    readme = instance.participant_files["README.md"]
    assert instance.constraint["text"] in readme
    assert instance.context["company"] in readme
    assert "${" not in "".join(instance.participant_files.values())


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_entry_point_name_is_used_everywhere(slug: str) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    name = instance.entry_point
    files = instance.participant_files
    assert f"def {name}(" in files["solution.py"]
    assert f"from solution import {name}" in files["test_visible.py"]
    assert f"def {name}(" in files["README.md"]
    for kind in ("efficient", "naive"):
        assert f"def {name}(" in instance.references[kind]["solution.py"]


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_field_and_file_names_match_between_workspace_and_cases(slug: str) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    task_data = json.loads(instance.participant_files["task_data.json"])
    visible = next(c for c in instance.cases if c.visible)
    assert task_data["expected_output"] == visible.expected
    assert list(task_data["input"].values()) == visible.args
    assert f"{instance.names['legacy_module']}.py" in instance.participant_files
    arg_names = [k for k in instance.names if k.endswith("_arg")]
    assert set(task_data["input"]) == {instance.names[k] for k in arg_names}
    for key in arg_names:
        assert instance.names[key] in instance.participant_files["solution.py"]


def test_ds_rows_use_the_seeded_column_names() -> None:
    instance = shipped_instance("ds-window-top-segments", SEEDS[0])
    names = instance.names
    expected = {names["segment_col"], names["amount_col"], names["status_col"]}
    for case in instance.cases:
        assert set(case.args[0]["columns"]) == expected
    assert names["segment_col"] in instance.participant_files["DATA_DICTIONARY.md"]


def test_mle_layers_use_the_seeded_field_names() -> None:
    instance = shipped_instance("mle-palindromic-path", SEEDS[0])
    fields = {instance.names[k] for k in ("id_field", "op_field", "stage_field")}
    for case in instance.cases:
        assert all(set(layer) == fields for layer in case.args[0])


# --- nothing hidden leaks into the workspace ------------------------------------------------


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_participant_files_hold_no_hidden_cases_or_references(slug: str) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    files = instance.participant_files
    assert set(files) >= PARTICIPANT_CORE
    assert not any(path.startswith("references") for path in files)
    blob = "\n".join(files.values())
    assert "naive" not in blob.lower()
    assert "generator" not in blob.lower()
    for kind in ("efficient", "naive"):
        docstring = instance.references[kind]["solution.py"].splitlines()[0]
        assert docstring not in blob
    for case in instance.hidden_cases:
        assert case.name not in blob
        for value in (case.args, case.expected):
            encoded = json.dumps(value)
            if len(encoded) >= 24:
                assert encoded not in blob, case.name
                assert canonical_json(value).decode() not in blob, case.name


@pytest.mark.parametrize("slug", FIRST_BANK)
def test_visible_tests_fail_on_the_starter_and_pass_on_the_efficient_reference(
    slug: str, tmp_path: Path
) -> None:
    instance = shipped_instance(slug, SEEDS[0])
    write_instance(instance, tmp_path, with_references=False)
    command = [sys.executable, "-B", "-m", "unittest", "test_visible"]
    starter = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert starter.returncode != 0
    assert "NotImplementedError" in starter.stderr
    (tmp_path / "solution.py").write_text(instance.references["efficient"]["solution.py"])
    solved = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert solved.returncode == 0, solved.stderr


# --- writing an instance --------------------------------------------------------------------


def test_write_instance_without_references_writes_only_participant_files(tmp_path: Path) -> None:
    instance = shipped_instance("sde-binary-palindromes", SEEDS[0])
    written = write_instance(instance, tmp_path, with_references=False)
    relative = {p.relative_to(tmp_path).as_posix() for p in written}
    assert relative == set(instance.participant_files)
    assert not (tmp_path / "references").exists()
    for path in written:
        assert path.read_text() == instance.participant_files[path.relative_to(tmp_path).as_posix()]


def test_write_instance_with_references_adds_both_references(tmp_path: Path) -> None:
    instance = shipped_instance("sde-binary-palindromes", SEEDS[0])
    write_instance(instance, tmp_path, with_references=True)
    for kind in ("efficient", "naive"):
        assert (tmp_path / "references" / f"{kind}.py").read_text() == instance.references[kind][
            "solution.py"
        ]


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_submit_script_is_executable_and_points_to_the_platform(tmp_path: Path) -> None:
    instance = shipped_instance("sde-binary-palindromes", SEEDS[0])
    write_instance(instance, tmp_path, with_references=False)
    script = tmp_path / SUBMIT_FILE
    assert script.stat().st_mode & stat.S_IXUSR
    assert script.read_text().startswith("#!/bin/sh\n")
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=10)
    assert result.returncode == 0
    assert "Submit button" in result.stdout


# --- contract errors ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [-1, True, 2**63, "3"])
def test_bad_seed_is_rejected(seed: object) -> None:
    with pytest.raises(BankError, match="is not an integer in"):
        instantiate(load_template("sde-binary-palindromes"), seed)  # type: ignore[arg-type]


BROKEN_GENERATORS = [
    ('return {"cases": []}', "must return a dict with task_data, cases and optionally files"),
    ('cases[0]["kind"] = "performance"', "may be visible only if it is a functional case"),
    ('cases[1]["name"] = cases[2]["name"]', "case names must be unique"),
    ('cases[1]["expected"] = {1, 2}', "is not JSON-serialisable"),
    ('cases[1]["expected"] = float("nan")', "is not JSON-serialisable"),
    ('cases[1]["kind"] = "smoke"', "has kind 'smoke'"),
    ("cases = [c for c in cases if not c['visible']]", "at least one visible and one hidden"),
]


@pytest.mark.parametrize(("patch", "message"), BROKEN_GENERATORS)
def test_generator_output_is_validated(tmp_path: Path, patch: str, message: str) -> None:
    source = MINIMAL_FILES["generator.py"]
    anchor = '    return {"task_data"'
    assert anchor in source
    source = source.replace(anchor, f"    {patch}\n{anchor}")
    write_minimal_template(tmp_path, files={**MINIMAL_FILES, "generator.py": source})
    with pytest.raises(BankError, match=message):
        instantiate(load_template("tiny-sum", tmp_path), 1)


def test_a_read_only_file_may_not_take_an_editable_files_path(tmp_path: Path) -> None:
    files = {**MINIMAL_FILES, "files/solution.py": "oops\n"}
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(BankError, match=r"the workspace path 'solution\.py' is used twice"):
        instantiate(load_template("tiny-sum", tmp_path), 1)


def test_minimal_template_renders_paths_contents_and_visible_cases(tmp_path: Path) -> None:
    write_minimal_template(tmp_path)
    instance = instantiate(load_template("tiny-sum", tmp_path), 4)
    name = instance.entry_point
    offset = instance.params["offset"]
    assert instance.participant_files[f"{name}_notes.md"] == f"Offset is {offset}.\n"
    visible = [c for c in instance.cases if c.visible]
    assert repr(visible[0].expected) in instance.participant_files["test_visible.py"]
    assert instance.constraint["text"] == f"Use the standard library in {name}."
    assert instance.compare is None


def test_shipped_file_may_not_render_onto_a_reserved_name(tmp_path: Path) -> None:
    files = {**MINIMAL_FILES, "files/task_data.json": "{}\n"}
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(BankError, match=r"reserved workspace path 'task_data\.json'"):
        instantiate(load_template("tiny-sum", tmp_path), 1)
