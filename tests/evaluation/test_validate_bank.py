"""Every template in the bank passes ``validate_bank`` (a short run; the full one is
``manage.py validate_bank --seeds 20``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation.bank import list_templates, load_template
from evaluation.grading import grade_functional
from evaluation.instantiate import instantiate
from evaluation.management.commands.validate_bank import literal_problems
from evaluation.runs import workspace_of
from evaluation.trusted_runs import grade_functional_together
from tests.evaluation.bank_helpers import MINIMAL_FILES, write_minimal_template
from tests.evaluation.grading_fixtures import sandbox_or_skip


@pytest.mark.django_db
@pytest.mark.timeout(400)  # a real validate_bank run: 40-100 s a template on 2 cores
@pytest.mark.parametrize("slug", [t.slug for t in list_templates()])
def test_template_validates(slug: str, capsys: pytest.CaptureFixture[str]) -> None:
    sandbox_or_skip()
    call_command("validate_bank", "--template", slug, "--seeds", "2", "--efficiency-seeds", "1")
    out = capsys.readouterr().out
    assert f"{slug} " in out
    assert ": ok" in out
    assert "All 1 template(s) valid over 2 seeds." in out


@pytest.mark.timeout(120)
def test_a_literal_reading_that_passes_every_hidden_test_is_reported(tmp_path: Path) -> None:
    sandbox = sandbox_or_skip()
    files = dict(MINIMAL_FILES)
    files["references/literal/ignores-offset.py.tmpl"] = (
        "def ${entry_point}(${values_arg}):\n    return sum(${values_arg})\n"
    )
    files["references/literal/same-as-efficient.py.tmpl"] = files["references/efficient.py.tmpl"]
    write_minimal_template(tmp_path, files=files)
    instance = instantiate(load_template("tiny-sum", tmp_path), 1)
    assert literal_problems(instance, sandbox) == [
        "seed 1: the literal reading 'same-as-efficient' passes every hidden functional test "
        "(the rule it ignores is not tested)"
    ]


@pytest.mark.timeout(120)
def test_the_banks_code_runs_every_functional_test_in_one_process_with_the_same_verdicts(
    tmp_path: Path,
) -> None:
    """validate_bank grades references, literal readings and starters in one process per
    entry point: each test still gets its own verdict, the same as a fresh process gives."""
    sandbox = sandbox_or_skip()
    files = dict(MINIMAL_FILES)
    # Right on small inputs, wrong on the others, and raising on an empty list.
    files["references/literal/partial.py.tmpl"] = (
        "def ${entry_point}(${values_arg}):\n"
        "    if not ${values_arg}:\n        raise ValueError('nothing to add')\n"
        "    return sum(${values_arg}) + (${offset} if len(${values_arg}) < 4 else 0)\n"
    )
    write_minimal_template(tmp_path, files=files)
    instance = instantiate(load_template("tiny-sum", tmp_path), 1)
    workspaces = {
        "starter": instance.starter_files(),
        **instance.references,
    }
    seen: set[str] = set()
    for label, code in workspaces.items():
        workspace = workspace_of(instance, code)
        together = grade_functional_together(instance, workspace, sandbox=sandbox)
        apart, _ = grade_functional(instance, workspace, sandbox=sandbox)
        assert [(r["name"], r["verdict"], r["message"]) for r in together] == [
            (r["name"], r["verdict"], r["message"]) for r in apart
        ], label
        seen.update(r["verdict"] for r in together)
    assert {"OK", "WA", "RE"} <= seen


@pytest.mark.timeout(60)
def test_a_run_of_the_banks_code_that_dies_gives_its_verdict_to_every_test(
    tmp_path: Path,
) -> None:
    sandbox = sandbox_or_skip()
    write_minimal_template(tmp_path)
    instance = instantiate(load_template("tiny-sum", tmp_path), 1)
    endless = {"solution.py": f"def {instance.entry_point}(values):\n    while True:\n        pass"}
    rows = grade_functional_together(instance, workspace_of(instance, endless), sandbox=sandbox)
    assert len(rows) > 1
    assert {r["verdict"] for r in rows} == {"TLE"}
