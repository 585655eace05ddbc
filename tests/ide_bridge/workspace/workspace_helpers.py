"""Helpers of the workspace tests: an assigned participant, a started trial, its URLs."""

from __future__ import annotations

from typing import Any

from django.test import Client

from evaluation.instances import get_instance
from evaluation.services import record_instance
from evaluation.submissions import reference_files
from study.models import Arm, Participant, Study, Trial
from tests.study import helpers
from tests.study.helpers import journey_study


def assigned(study: Study, client: Client | None = None) -> tuple[Client, Participant]:
    """A participant who followed their link, consented and was screened (stage ASSIGNED)."""
    return helpers.assigned(study, client, track_preference="SDE")


def first_trial(participant: Participant) -> Trial:
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    return trial


def url(trial: Trial, endpoint: str = "") -> str:
    return f"/ide/workspace/{trial.pk}/{endpoint}"


def post(client: Client, path: str, body: Any, **extra: Any) -> Any:
    return client.post(path, body, content_type="application/json", **extra)


def opened(**arm_fields: Any) -> tuple[Client, Participant, Trial]:
    study = journey_study()
    if arm_fields:
        Arm.objects.filter(study=study).update(**arm_fields)  # before the snapshot freezes
    client, participant = assigned(study)
    trial = first_trial(participant)
    assert client.post(url(trial, "start"))["Location"] == url(trial)
    assert client.get(url(trial)).status_code == 200
    trial.refresh_from_db()
    return client, participant, trial


def starter(trial: Trial) -> str:
    return get_instance(trial.template_slug, trial.seed).participant_files["solution.py"]


def efficient(trial: Trial) -> str:
    return get_instance(trial.template_slug, trial.seed).references["efficient"]["solution.py"]


PROJECT = "ds-tariff-bills"  # three editable modules, a data file, an SVG diagram (the bank's)
PROJECT_SEED = 1


def on_project(trial: Trial, seed: int = PROJECT_SEED) -> Trial:
    """The trial, now on the bank's multi-file task (set up before anyone opens it)."""
    row = record_instance(get_instance(PROJECT, seed))
    Trial.objects.filter(pk=trial.pk).update(template_slug=PROJECT, seed=seed, instance=row)
    trial.refresh_from_db()
    return trial


def opened_project(**arm_fields: Any) -> tuple[Client, Participant, Trial]:
    """A started trial of the multi-file task, its page opened once."""
    study = journey_study()
    if arm_fields:
        Arm.objects.filter(study=study).update(**arm_fields)
    client, participant = assigned(study)
    trial = on_project(first_trial(participant))
    assert client.post(url(trial, "start"))["Location"] == url(trial)
    assert client.get(url(trial)).status_code == 200
    trial.refresh_from_db()
    return client, participant, trial


def project_starter(trial: Trial) -> dict[str, str]:
    return get_instance(trial.template_slug, trial.seed).starter_files()


def project_reference(trial: Trial, kind: str = "efficient") -> dict[str, str]:
    return reference_files(get_instance(trial.template_slug, trial.seed), kind)
