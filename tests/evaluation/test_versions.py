"""Template versions cannot drift (issue 11, versioning): the recorded manifest matches the bank,
and recording refuses a change without a bump, a logic change without a MAJOR bump, and a
version that went backwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evaluation.bank import known_slugs, load_template
from evaluation.versions import entry, read_manifest, record
from tests.evaluation.bank_helpers import MINIMAL_TOML, write_minimal_template

REPO = Path(__file__).resolve().parents[2]


def test_the_recorded_manifest_matches_every_shipped_template() -> None:
    recorded = read_manifest()
    assert sorted(recorded) == known_slugs()
    for slug in known_slugs():
        assert recorded[slug] == entry(load_template(slug)), (
            f"{slug} changed since evaluation/bank/VERSIONS.json was recorded: bump its version "
            "and run `python -m evaluation.versions record`"
        )


def _bump(directory: Path, version: str) -> None:
    toml = directory / "template.toml"
    text = toml.read_text()
    current = next(line for line in text.splitlines() if line.startswith("version = "))
    toml.write_text(text.replace(current, f'version = "{version}"'))


def test_recording_refuses_unbumped_and_under_bumped_changes(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path, MINIMAL_TOML)
    assert record(tmp_path) == []
    first = read_manifest(tmp_path)["tiny-sum"]
    assert first["version"] == "1.0.0"

    readme = directory / "README.md.tmpl"
    readme.write_text(readme.read_text() + "\nOne more sentence of context.\n")
    (problem,) = record(tmp_path)
    assert "files changed but its version is still 1.0.0" in problem
    assert read_manifest(tmp_path)["tiny-sum"] == first  # nothing written
    _bump(directory, "1.0.1")
    assert record(tmp_path) == []  # wording: a PATCH is enough

    generator = directory / "generator.py"
    generator.write_text(generator.read_text() + "\n# a changed rule\n")
    _bump(directory, "1.1.0")
    (problem,) = record(tmp_path)
    assert "bump the MAJOR version (2.0.0)" in problem
    _bump(directory, "2.0.0")
    assert record(tmp_path) == []
    assert read_manifest(tmp_path)["tiny-sum"]["version"] == "2.0.0"

    _bump(directory, "1.9.9")
    assert any("lower than the recorded 2.0.0" in p for p in record(tmp_path))


def test_the_command_names_what_to_do() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "evaluation.versions", "nonsense"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "usage: python -m evaluation.versions record" in result.stderr
