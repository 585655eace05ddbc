"""Imports point one way: ide_bridge -> study -> evaluation (import-linter contracts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_project_keeps_the_layer_contract() -> None:
    result = subprocess.run([LINT_IMPORTS], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken" in result.stdout


def test_contract_catches_an_upward_import(tmp_path: Path) -> None:
    for app in ("study", "ide_bridge", "evaluation", "config"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    for module in ("urls", "asgi", "wsgi"):
        (tmp_path / "config" / f"{module}.py").write_text("")
    (tmp_path / "evaluation" / "leak.py").write_text("import study\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = subprocess.run(
        [LINT_IMPORTS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "evaluation.leak -> study" in result.stdout
