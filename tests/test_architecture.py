"""Imports point one way: ide_bridge -> study -> evaluation, and views are imported only by
their own package's urls.py (import-linter contracts)."""

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
    assert "Contracts: 3 kept, 0 broken" in result.stdout


def _lint(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """lint-imports with this project's contracts over a skeleton of the four packages."""
    for app in ("study", "ide_bridge", "evaluation", "config"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    for module in ("urls", "asgi", "wsgi"):
        (tmp_path / "config" / f"{module}.py").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(tmp_path).parents:
            if str(parent) != ".":
                (tmp_path / parent / "__init__.py").touch()
        path.write_text(text)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return subprocess.run(
        [LINT_IMPORTS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )


def test_contract_catches_an_upward_import(tmp_path: Path) -> None:
    result = _lint(tmp_path, {"evaluation/leak.py": "import study\n"})
    assert result.returncode != 0
    assert "evaluation.leak -> study" in result.stdout


def test_contract_catches_a_view_imported_as_a_library(tmp_path: Path) -> None:
    result = _lint(
        tmp_path,
        {
            "study/journey/views.py": "",
            "study/journey/urls.py": "from study.journey import views\n",
            "ide_bridge/workspace/views.py": "from study.journey.views import x\n",
        },
    )
    assert result.returncode != 0
    assert "ide_bridge.workspace.views -> study.journey.views" in result.stdout
    assert "study.journey.urls -> study.journey.views" not in result.stdout
