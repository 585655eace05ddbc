"""Every template in the bank passes ``validate_bank`` (a short run; the full one is
``manage.py validate_bank --seeds 20``)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from evaluation.bank import list_templates
from tests.evaluation.grading_fixtures import sandbox_or_skip


@pytest.mark.django_db
@pytest.mark.timeout(400)  # a real validate_bank run: 40-100 s a template on 2 cores
@pytest.mark.parametrize("slug", [t.slug for t in list_templates()])
def test_template_validates(slug: str, capsys: pytest.CaptureFixture[str]) -> None:
    sandbox_or_skip()
    call_command("validate_bank", "--template", slug, "--seeds", "3", "--efficiency-seeds", "1")
    out = capsys.readouterr().out
    assert f"{slug} " in out
    assert ": ok" in out
    assert "All 1 template(s) valid over 3 seeds." in out
