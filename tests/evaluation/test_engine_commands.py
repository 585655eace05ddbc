"""The engine's CLI: evaluate, calibrate, validate_bank — exit codes and output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.evaluation.grading_fixtures import instance, store_calibration

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_calibration() -> None:
    store_calibration()


@pytest.mark.timeout(180)  # the first test here calibrates the template in its setup (~20 s)
def test_evaluate_prints_a_json_report_and_exits_0_for_a_failing_solution(
    tmp_path: Path, stored_calibration: None, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = instance()
    solution = tmp_path / "solution.py"
    solution.write_text(inst.participant_files["solution.py"])
    call_command(
        "evaluate",
        "--template",
        inst.template.slug,
        "--seed",
        "1",
        "--solution",
        str(solution),
        "--json",
    )
    report = json.loads(capsys.readouterr().out)
    assert report["overall_pass"] is False
    assert report["template"]["slug"] == inst.template.slug


@pytest.mark.timeout(180)  # grades the efficient reference, efficiency timing included (~30 s)
def test_evaluate_prints_a_readable_table(
    tmp_path: Path, stored_calibration: None, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = instance()
    solution = tmp_path / "solution.py"
    solution.write_text(inst.references["efficient"]["solution.py"])
    call_command(
        "evaluate", "--template", inst.template.slug, "--seed", "1", "--solution", str(solution)
    )
    out = capsys.readouterr().out
    assert "overall pass: yes" in out
    assert "efficiency: time ratio" in out


def run_manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HAIEVAL_VAR_DIR": str(ROOT / "var" / "test-cli")},
    )


def test_unknown_template_exits_2_with_one_sentence() -> None:
    result = run_manage(
        "evaluate", "--template", "no-such-task", "--seed", "1", "--solution", "manage.py"
    )
    assert result.returncode == 2
    assert "no-such-task" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_solution_file_exits_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="does not exist") as excinfo:
        call_command(
            "evaluate",
            "--template",
            instance().template.slug,
            "--seed",
            "1",
            "--solution",
            str(tmp_path / "nope.py"),
        )
    assert excinfo.value.returncode == 2


@pytest.mark.timeout(400)  # two templates at seed 1 and ds-tariff-bills' four combinations
def test_calibrate_all_measures_each_distinct_input_once_and_stores_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evaluation.bank import BANK_DIR
    from evaluation.models import Calibration

    # A bank of its own (EVALUATION_BANK_DIR) with one seed-drawn template and one whose
    # [performance] params give 2 x 2 combinations; retired templates would be left out.
    for slug in ("sde-binary-palindromes", "ds-tariff-bills", "sde-clickomania"):
        shutil.copytree(BANK_DIR / slug, tmp_path / slug)
    (tmp_path / "RETIRED.toml").write_text('[sde-clickomania]\non = 2026-12-02\nreason = "Old."\n')
    monkeypatch.setenv("EVALUATION_BANK_DIR", str(tmp_path))
    call_command("calibrate", "--all")
    out = capsys.readouterr().out
    assert "sde-binary-palindromes seed 1: calibration" in out
    assert "ds-tariff-bills seed 1: calibration" in out
    assert "sde-clickomania" not in out
    assert "5 distinct performance inputs in" in out
    assert Calibration.objects.count() == 5
    call_command("calibrate", "--all")  # again: every calibration is reused, none measured
    assert Calibration.objects.count() == 5


def test_evaluate_refuses_a_single_file_or_an_empty_directory_for_a_multi_file_task(
    tmp_path: Path,
) -> None:
    (tmp_path / "x.py").write_text("x = 1\n")
    with pytest.raises(CommandError, match="several editable files") as excinfo:
        call_command(
            "evaluate", "--template", "ds-tariff-bills", "--seed", "1",
            "--solution", str(tmp_path / "x.py"),
        )  # fmt: skip
    assert excinfo.value.returncode == 2
    with pytest.raises(CommandError, match="holds none of this task's editable files"):
        call_command(
            "evaluate", "--template", "ds-tariff-bills", "--seed", "1",
            "--solution", str(tmp_path),
        )  # fmt: skip


def test_calibrate_needs_a_template_or_all() -> None:
    with pytest.raises(CommandError, match="--all") as excinfo:
        call_command("calibrate")
    assert excinfo.value.returncode == 2
