"""``manage.py build_dataset``: layout, hidden cases outside task/, manifest, byte-identical;
the manifest recorded as a Dataset row, and what sweeps get from it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.instantiate import canonical_json
from evaluation.llm.datasets import DatasetError, dataset_instances, find_dataset
from evaluation.models import Dataset

pytestmark = pytest.mark.django_db

TEMPLATES = "sde-binary-palindromes,mle-palindromic-path"


def build(out: Path, *extra: str) -> None:
    call_command(
        "build_dataset", "--per-template", "2", "--templates", TEMPLATES, "--out", str(out), *extra
    )


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def dataset(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dataset")
    with django_db_blocker.unblock():
        build(out)
    yield out
    with django_db_blocker.unblock():
        Dataset.objects.all().delete()


def test_building_twice_gives_byte_identical_trees(dataset: Path, tmp_path: Path) -> None:
    build(tmp_path / "again")
    assert tree_digest(tmp_path / "again") == tree_digest(dataset)


def test_layout_puts_participant_files_under_task_and_cases_beside_it(dataset: Path) -> None:
    for slug in TEMPLATES.split(","):
        for seed in (1, 2):
            base = dataset / slug / str(seed)
            assert {p.name for p in base.iterdir()} == {"task", "evaluation.json"}
            task_files = {p.name for p in (base / "task").iterdir()}
            assert {
                "README.md",
                "solution.py",
                "task_data.json",
                "test_visible.py",
                "submit",
            } <= task_files
            assert "references" not in task_files
            assert "evaluation.json" not in task_files


def test_evaluation_spec_identifies_the_instance_and_holds_every_case(dataset: Path) -> None:
    spec = json.loads((dataset / "mle-palindromic-path" / "1" / "evaluation.json").read_text())
    assert spec["template"] == "mle-palindromic-path"
    assert spec["seed"] == 1
    assert {"version", "template_hash", "instance_hash", "entry_point", "names", "cases"} <= set(
        spec
    )
    kinds = {c["kind"] for c in spec["cases"]}
    assert kinds == {"functional", "performance"}
    assert all("expected" in c for c in spec["cases"])
    solution = (dataset / "mle-palindromic-path" / "1" / "task" / "solution.py").read_text()
    assert f"def {spec['entry_point']}(" in solution


def test_hidden_cases_do_not_appear_in_the_task_folder(dataset: Path) -> None:
    base = dataset / "sde-binary-palindromes" / "1"
    spec = json.loads((base / "evaluation.json").read_text())
    blob = "\n".join(p.read_text() for p in (base / "task").rglob("*") if p.is_file())
    for case in spec["cases"]:
        if not case["visible"]:
            assert case["name"] not in blob
            assert json.dumps(case["args"]) not in blob or len(json.dumps(case["args"])) < 24


def test_manifest_lists_every_file_with_its_sha256(dataset: Path) -> None:
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert len(manifest["instances"]) == 4
    assert set(manifest["templates"]) == set(TEMPLATES.split(","))
    listed = set()
    for entry in manifest["instances"]:
        for relative, digest in entry["files"].items():
            path = dataset / entry["path"] / relative
            assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
            listed.add(path.relative_to(dataset).as_posix())
    on_disk = {p for p in tree_digest(dataset) if p != "manifest.json"}
    assert listed == on_disk
    body = {k: v for k, v in manifest.items() if k != "dataset_version"}
    assert manifest["dataset_version"] == hashlib.sha256(canonical_json(body)).hexdigest()


def test_json_files_have_sorted_keys_and_a_final_newline(dataset: Path) -> None:
    for path in (
        dataset / "manifest.json",
        dataset / "mle-palindromic-path" / "2" / "evaluation.json",
    ):
        text = path.read_text()
        assert text.endswith("}\n")
        assert list(json.loads(text)) == sorted(json.loads(text))


def test_non_empty_directory_is_refused_and_force_needs_a_previous_dataset(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(CommandError, match="is not empty; pass --force") as caught:
        build(tmp_path)
    assert caught.value.returncode == 2
    with pytest.raises(CommandError, match=r"holds no manifest\.json") as caught:
        build(tmp_path, "--force")
    assert caught.value.returncode == 2
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_force_replaces_a_previous_dataset(tmp_path: Path) -> None:
    call_command(
        "build_dataset",
        "--per-template",
        "3",
        "--templates",
        "sde-binary-palindromes",
        "--out",
        str(tmp_path),
    )
    call_command(
        "build_dataset",
        "--per-template",
        "1",
        "--templates",
        "sde-binary-palindromes",
        "--out",
        str(tmp_path),
        "--force",
    )
    assert sorted(p.name for p in (tmp_path / "sde-binary-palindromes").iterdir()) == ["1"]


def test_unknown_template_exits_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="Unknown template 'nope'") as caught:
        call_command("build_dataset", "--templates", "nope", "--out", str(tmp_path))
    assert caught.value.returncode == 2


@pytest.mark.parametrize("count", ["0", "x", "1001"])
def test_bad_per_template_exits_2(tmp_path: Path, count: str) -> None:
    with pytest.raises(CommandError, match="--per-template") as caught:
        call_command("build_dataset", "--per-template", count, "--out", str(tmp_path))
    assert caught.value.returncode == 2


def test_a_multi_file_instance_keeps_its_tree_and_gets_its_diagram_as_png(tmp_path: Path) -> None:
    call_command(
        "build_dataset", "--per-template", "1", "--templates", "ds-tariff-bills", "--out",
        str(tmp_path),
    )  # fmt: skip
    base = tmp_path / "ds-tariff-bills" / "1"
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (entry,) = manifest["instances"]
    package = entry["editable"][0].split("/")[0]
    assert (base / "task" / package / "models.py").is_file()  # read-only module
    assert (base / "task" / "data" / "tariffs.csv").read_text().startswith("tariff_code,")
    assert "<svg" in (base / "task" / "diagrams" / "billing.svg").read_text()
    assert (base / "images" / "diagrams" / "billing.png").read_bytes().startswith(b"\x89PNG")
    assert not list((base / "task").rglob("*.dot*"))  # the diagram's source stays server-side
    assert "images/diagrams/billing.png" in entry["files"]


def test_the_manifest_is_recorded_and_a_rebuild_elsewhere_moves_its_path(
    dataset: Path, tmp_path: Path
) -> None:
    manifest = json.loads((dataset / "manifest.json").read_text())
    row = Dataset.objects.get(version=manifest["dataset_version"])
    assert (row.per_template, row.first_seed, row.path) == (2, 1, str(dataset.resolve()))
    assert row.templates == manifest["templates"]
    assert {"template": "mle-palindromic-path", "version": manifest["templates"][
        "mle-palindromic-path"]["version"], "seed": 2, "instance_hash": manifest["instances"][1][
        "instance_hash"]} in row.instances  # fmt: skip
    assert dataset_instances(row) == [
        ("mle-palindromic-path", 1),
        ("mle-palindromic-path", 2),
        ("sde-binary-palindromes", 1),
        ("sde-binary-palindromes", 2),
    ]
    build(tmp_path / "moved")
    assert Dataset.objects.filter(version=row.version).count() == 1
    assert Dataset.objects.get(version=row.version).path == str((tmp_path / "moved").resolve())
    assert find_dataset(row.version[:8].upper()) == row


def test_a_dataset_whose_templates_changed_in_the_bank_is_refused(dataset: Path) -> None:
    row = Dataset.objects.get()
    row.templates = {**row.templates, "sde-binary-palindromes": {"version": "0.0.1"}}
    with pytest.raises(DatasetError, match=r"sde-binary-palindromes is version .* but 0\.0\.1"):
        dataset_instances(row)
    row.templates = {"gone-template": {"version": "1.0.0"}}
    with pytest.raises(DatasetError, match="gone-template is no longer in the bank"):
        dataset_instances(row)


@pytest.mark.parametrize(
    ("version", "message"),
    [("abc", "too short"), ("0123456789abcdef", "No dataset '0123456789abcdef' is recorded")],
)
def test_a_dataset_version_must_be_long_enough_and_known(version: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        find_dataset(version)


def test_record_identifies_the_dataset_without_its_files(tmp_path: Path) -> None:
    record = tmp_path / "DATASET.json"
    build(tmp_path / "data", "--record", str(record))
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    compact = json.loads(record.read_text())
    assert compact["dataset_version"] == manifest["dataset_version"]
    assert sorted(compact["templates"]) == TEMPLATES.split(",")[::-1]
    first = compact["templates"]["sde-binary-palindromes"]
    assert first["version"] == manifest["templates"]["sde-binary-palindromes"]["version"]
    hashes = {
        str(e["seed"]): e["instance_hash"]
        for e in manifest["instances"]
        if e["template"] == "sde-binary-palindromes"
    }
    assert first["instances"] == hashes
