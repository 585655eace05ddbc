"""Every template in the bank passes ``validate_bank`` (a short run; the full one is
``manage.py validate_bank --seeds 20``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from evaluation.bank import list_templates, load_template
from evaluation.instantiate import instantiate
from evaluation.management.commands.validate_bank import literal_problems
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
