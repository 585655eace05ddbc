"""``manage.py export_study``: one-sentence errors with exit status 2, a complete package (and
zip) otherwise, recorded in the audit log."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from study.demo.answers import answers_for
from study.enrolment.services import give_consent, submit_screening
from study.models import AuditEvent, Study, TaskPoolEntry
from tests.study.helpers import JOURNEY_TEMPLATES, journey_study, logged_in

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def study() -> Study:
    return journey_study(slug="cmd-study")


@pytest.fixture
def enrolled(study: Study) -> Study:
    """Two screened participants; one session of two trials on the quick templates."""
    slow = [slug for slug, difficulty in JOURNEY_TEMPLATES if difficulty == "hard"]
    TaskPoolEntry.objects.filter(study=study, template_slug__in=slow).update(active=False)
    Study.objects.filter(pk=study.pk).update(sessions=1)
    study.refresh_from_db()
    assert study.consent_form is not None
    assert study.screening is not None
    ticks = {b["id"]: True for b in study.consent_form.checkboxes}
    for seed in range(2):
        _, participant = logged_in(study)
        give_consent(participant, agree=True, checkboxes=ticks)
        answers = answers_for(study.screening, random.Random(seed))
        submit_screening(participant, answers)
    return study


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--study", "nope", "--profile", "public"], "No study has the slug 'nope'."),
        (["--study", "cmd-study", "--profile", "everything"], "Unknown profile 'everything'"),
    ],
)
def test_unknown_study_or_profile_exits_2(
    study: Study, tmp_path: Path, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message) as raised:
        call_command("export_study", *args, "--out", str(tmp_path / "out"))
    assert raised.value.returncode == 2


def test_a_non_empty_output_directory_exits_2(study: Study, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("earlier work")
    with pytest.raises(CommandError, match="is not empty") as raised:
        call_command("export_study", "--study", study.slug, "--profile", "public",
                     "--out", str(tmp_path))  # fmt: skip
    assert raised.value.returncode == 2
    assert (tmp_path / "keep.txt").read_text() == "earlier work"


def test_errors_are_one_sentence_on_stderr_with_status_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "HAIEVAL_"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.test",
               HAIEVAL_VAR_DIR=str(ROOT / "var" / "test-settings"))  # fmt: skip
    result = subprocess.run(
        [sys.executable, "manage.py", "export_study", "--study", "x", "--profile", "secret",
         "--out", str(tmp_path / "o")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "CommandError: Unknown profile 'secret'; use one of: internal, public."
    ]


def test_export_writes_the_package_and_zip_and_audits_it(
    enrolled: Study, tmp_path: Path, capsys: Any
) -> None:
    study = enrolled
    out = tmp_path / "pkg"
    call_command("export_study", "--study", study.slug, "--profile", "public", "--out", str(out),
                 "--zip", "--json")  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["row_counts"]["participants"] == 2
    assert summary["row_counts"]["taskattempts"] == 4
    assert summary["scope"] == "cmd-study:public"
    assert summary["k_target"] == 5
    for name in ("README.md", "codebook.csv", "datapackage.json", "manifest.json",
                 "deid_report.json"):  # fmt: skip
        assert (out / name).is_file(), name
    with zipfile.ZipFile(summary["zip"]) as archive:
        assert any(n.endswith("/manifest.json") for n in archive.namelist())
    event = AuditEvent.objects.get(action="export")
    assert (event.actor_type, event.object_id) == ("system", study.slug)
    assert event.details["row_counts"]["participants"] == 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert event.details["files"]["codebook.csv"] == next(
        f["sha256"] for f in manifest["files"] if f["path"] == "codebook.csv"
    )
