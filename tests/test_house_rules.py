"""The house rules of docs/architecture.md that a machine can check.

- Views, consumers and admin modules write only through services (no ``.save()``/``.create()``/
  ``.update()``/``.delete()`` and no direct audit records of their own).
- Only ``journey.services.transition`` assigns ``Participant.stage``.
- A GET on any participant or researcher page leaves every row of the database as it was.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.test import Client
from django.utils import timezone

from study.demo.answers import answers_for
from study.enrolment.services import give_consent, submit_screening
from study.models import Participant, Study, Trial
from study.questionnaires.services import submit_post_trial
from study.trials.services import start_trial, submit_trial
from tests.factories import ResearcherFactory
from tests.study.helpers import grading_queued, journey_study, logged_in

ROOT = Path(__file__).resolve().parents[1]
APPS = ("study", "ide_bridge", "evaluation")
ENTRY_MODULES = {"views.py", "consumers.py", "admin.py"}
WRITES = {
    "save",
    "create",
    "update",
    "delete",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}


def _modules(names: set[str]) -> Iterator[Path]:
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if path.name in names and "migrations" not in path.parts and "bank" not in path.parts:
                yield path


def _calls(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, receiver, method) of every ``receiver.method(...)`` call in the module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = ast.unparse(node.func.value)
            yield node.lineno, receiver, node.func.attr


def test_entry_modules_exist_in_every_capability() -> None:
    """The scan below covers the real entry points (a moved file would silently escape it)."""
    found = {str(p.relative_to(ROOT)) for p in _modules(ENTRY_MODULES)}
    for expected in (
        "study/journey/views.py",
        "study/enrolment/admin.py",
        "study/configuration/admin.py",
        "ide_bridge/workspace/views.py",
        "ide_bridge/telemetry/consumers.py",
    ):
        assert expected in found


def test_views_consumers_and_admin_write_only_through_services() -> None:
    offences = []
    for path in _modules(ENTRY_MODULES):
        for line, receiver, method in _calls(path):
            direct_write = method in WRITES and not receiver.startswith("super(")
            own_audit = receiver == "audit" and method.startswith("record")
            if direct_write or own_audit:
                offences.append(f"{path.relative_to(ROOT)}:{line}: {receiver}.{method}()")
    assert offences == [], "write through a services.py verb instead:\n" + "\n".join(offences)


def test_the_scan_sees_a_direct_write(tmp_path: Path) -> None:
    sample = tmp_path / "views.py"
    sample.write_text("def v(request, trial):\n    trial.save(update_fields=['x'])\n")
    assert (2, "trial", "save") in list(_calls(sample))


def test_only_the_transition_service_assigns_a_participant_stage() -> None:
    allowed = ROOT / "study" / "journey" / "services.py"
    offences = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts or "bank" in path.parts or path == allowed:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                if any(isinstance(t, ast.Attribute) and t.attr == "stage" for t in targets):
                    offences.append(f"{path.relative_to(ROOT)}:{targets[0].lineno}")
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    receiver = ast.unparse(node.func.value).lower()
                    writes = node.func.attr in WRITES and "participant" in receiver
                    if writes and any(k.arg == "stage" for k in node.keywords):
                        offences.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offences == [], "move participants with journey.services.transition:\n" + "\n".join(
        offences
    )


# --- GET changes nothing ----------------------------------------------------------------------
def database_state() -> str:
    """A digest of every row of every model of the project's apps (and the user table)."""
    digest = hashlib.sha256()
    for model in apps.get_models():
        if model._meta.app_label not in {*APPS, "vault"} and model._meta.label != "study.User":
            continue
        rows = list(model._default_manager.order_by("pk").values())
        digest.update(model._meta.label.encode())
        digest.update(json.dumps(rows, default=str, sort_keys=True).encode())
    return digest.hexdigest()


def assert_gets_change_nothing(client: Client, paths: list[str]) -> None:
    for path in paths:
        before = database_state()
        response = client.get(path)
        assert response.status_code < 500, path
        assert database_state() == before, f"GET {path} changed the database"


def _consented(study: Study) -> tuple[Client, Participant]:
    client, participant = logged_in(study)
    form = study.consent_form
    assert form is not None
    give_consent(participant, agree=True, checkboxes={box["id"]: True for box in form.checkboxes})
    participant.refresh_from_db()
    return client, participant


def _assigned(study: Study) -> tuple[Client, Participant]:
    client, participant = _consented(study)
    assert study.screening is not None
    submit_screening(participant, answers_for(study.screening, random.Random(2)))
    participant.refresh_from_db()
    return client, participant


def _trial_pages(trial: Trial) -> list[str]:
    return [
        "/study/",
        "/study/journey/",
        f"/ide/workspace/{trial.pk}/",
        f"/ide/workspace/{trial.pk}/state",
        f"/study/trials/{trial.pk}/",
        f"/study/trials/{trial.pk}/status/",
        f"/study/trials/{trial.pk}/files/README.md",
        f"/study/results/trials/{trial.pk}/report/",
        f"/study/results/trials/{trial.pk}/report/fragment/",
        f"/study/results/trials/{trial.pk}/report.json",
        f"/study/questionnaires/post-trial/{trial.pk}/",
    ]


@pytest.mark.django_db(transaction=True)
def test_get_on_every_participant_page_changes_nothing() -> None:
    study = journey_study(sessions=2, trials_per_session=1)
    common = [
        "/study/journey/welcome/",
        "/study/enrolment/consent/",
        "/study/questionnaires/screening/",
        "/study/journey/waiting/",
        "/study/questionnaires/post-study/",
        "/study/journey/done/",
        "/study/journey/withdraw/",
    ]
    invited, _ = logged_in(study)
    assert_gets_change_nothing(invited, ["/study/", "/study/journey/", *common])
    consented, _ = _consented(study)
    assert_gets_change_nothing(consented, ["/study/journey/", *common])

    client, participant = _assigned(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    assert_gets_change_nothing(client, _trial_pages(trial) + common)  # pending: no clock starts

    trial = start_trial(trial, timezone.now())
    assert_gets_change_nothing(client, _trial_pages(trial))  # active
    Trial.objects.filter(pk=trial.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    assert_gets_change_nothing(client, _trial_pages(trial))  # overdue: only POST/beat close it

    Trial.objects.filter(pk=trial.pk).update(deadline=timezone.now() + timedelta(minutes=5))
    with grading_queued():
        trial = submit_trial(
            Trial.objects.get(pk=trial.pk),
            {"solution.py": "x = 1\n"},
            timezone.now(),
            channel="editor",
        )
    assert_gets_change_nothing(client, _trial_pages(trial) + common)  # post-trial questionnaire
    assert study.post_trial is not None
    submit_post_trial(participant, trial, answers_for(study.post_trial, random.Random(3)))
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.WAITING
    Participant.objects.filter(pk=participant.pk).update(
        next_session_opens_at=timezone.now() - timedelta(hours=1)
    )
    assert_gets_change_nothing(client, ["/study/journey/", *common])  # session 2 is open


@pytest.mark.django_db(transaction=True)
def test_get_on_every_researcher_page_changes_nothing() -> None:
    study = journey_study()
    _, participant = _assigned(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    start_trial(trial, timezone.now())
    researcher = ResearcherFactory.create()
    study.researchers.add(researcher)
    client = Client()
    client.force_login(researcher)
    pages: list[Any] = [
        "/study/researchers/",
        f"/study/results/{study.slug}/monitor/",
        f"/study/results/{study.slug}/monitor/rows/",
        f"/study/results/{study.slug}/monitor.json",
        f"/study/results/{study.slug}/dashboard/",
        f"/study/results/{study.slug}/trials.csv",
        f"/study/results/researcher/trials/{trial.pk}/report/",
        f"/study/exports/{study.slug}/",
        f"/ide/telemetry/replay/{trial.pk}/",
        f"/ide/telemetry/replay/{trial.pk}/data.json",
        "/ide/telemetry/flags/",
        "/study/benchmarks/",
        "/study/benchmarks/start/",
        "/study/benchmarks/leaderboard/",
        "/study/benchmarks/leaderboard.csv",
        f"/study/benchmarks/studies/{study.slug}/leaderboard/",
        "/study/reviews/",
    ]
    assert_gets_change_nothing(client, pages)
