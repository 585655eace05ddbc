"""``manage.py instantiate``: writes a workspace, references only on request, exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.bank import load_template
from evaluation.instantiate import instantiate

ROOT = Path(__file__).resolve().parents[2]
SLUG = "sde-binary-palindromes"


def run(*args: str) -> None:
    call_command("instantiate", *args)


def test_instantiate_writes_the_participant_workspace(tmp_path: Path) -> None:
    out = tmp_path / "ws"
    run("--template", SLUG, "--seed", "3", "--out", str(out))
    instance = instantiate(load_template(SLUG), 3)
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert written == set(instance.participant_files)
    assert (out / "solution.py").read_text() == instance.participant_files["solution.py"]
    assert (out / "submit").stat().st_mode & 0o111


def test_with_references_adds_efficient_and_naive(tmp_path: Path) -> None:
    run("--template", SLUG, "--seed", "3", "--out", str(tmp_path), "--with-references")
    assert (tmp_path / "references" / "efficient.py").is_file()
    assert (tmp_path / "references" / "naive.py").is_file()


def test_unknown_template_exits_2_with_one_sentence_listing_known_ones(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        run("--template", "no-such-task", "--seed", "1", "--out", str(tmp_path / "x"))
    assert caught.value.returncode == 2
    message = str(caught.value)
    assert message.startswith("Unknown template 'no-such-task'; known templates:")
    assert SLUG in message
    assert message.endswith(".")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("seed", ["-4", "abc", "1.5", str(2**63)])
def test_bad_seed_exits_2(tmp_path: Path, seed: str) -> None:
    with pytest.raises(CommandError, match="is not an integer in") as caught:
        run("--template", SLUG, "--seed", seed, "--out", str(tmp_path))
    assert caught.value.returncode == 2


def test_non_empty_out_dir_is_refused_without_force(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(CommandError, match="is not empty; pass --force") as caught:
        run("--template", SLUG, "--seed", "1", "--out", str(tmp_path))
    assert caught.value.returncode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_out_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(CommandError, match="is not a directory") as caught:
        run("--template", SLUG, "--seed", "1", "--out", str(target))
    assert caught.value.returncode == 2


def test_force_rewrites_and_drops_stale_references(tmp_path: Path) -> None:
    run("--template", SLUG, "--seed", "1", "--out", str(tmp_path), "--with-references")
    run("--template", SLUG, "--seed", "2", "--out", str(tmp_path), "--force")
    instance = instantiate(load_template(SLUG), 2)
    assert (tmp_path / "README.md").read_text() == instance.participant_files["README.md"]
    assert not (tmp_path / "references" / "efficient.py").exists()
    assert not (tmp_path / "references" / "naive.py").exists()


def test_real_process_exits_with_code_2_for_an_unknown_template(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "instantiate",
            "--template",
            "nope",
            "--seed",
            "1",
            "--out",
            str(tmp_path / "x"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "Unknown template 'nope'; known templates:" in result.stderr
