"""Each arm says how code may reach a trial's submission (the in-browser editor, the upload
page, the submit script's archive); the other channels are refused with a 403 and a message.
The feedback-only arm takes only the editor, whose code the assistant wrote."""

from __future__ import annotations

import importlib
import io
import re
import tarfile
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evaluation.models import Submission
from ide_bridge.models import WorkspaceUpload
from study.configuration.admin import ArmForm
from study.configuration.snapshots import current_snapshot, study_config
from study.configuration.validation import configuration_problems
from study.models import Arm, Trial
from tests.ide_bridge.workspace.workspace_helpers import opened, post, url
from tests.study.helpers import grading_queued, journey_study

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]
OWN_CODE = b"def solve(*args):\n    return 42\n"
FEEDBACK_ONLY = " In this condition only code the assistant wrote is submitted."


def upload_page(client: Client, trial: Trial) -> Any:
    upload = SimpleUploadedFile("solution.py", OWN_CODE, "text/x-python")
    return client.post(f"/study/trials/{trial.pk}/", {"file-0": upload})


def archive(client: Client, trial: Trial) -> Any:
    """The submit script's request, with the token the workspace page shows."""
    html = client.get(url(trial)).content.decode()
    match = re.search(r'data-telemetry-token="([^"]+)"', html)
    assert match is not None
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("./solution.py")
        info.size = len(OWN_CODE)
        tar.addfile(info, io.BytesIO(OWN_CODE))
    return Client().post(
        f"/ide/submissions/{trial.pk}",
        buffer.getvalue(),
        content_type="application/gzip",
        HTTP_AUTHORIZATION=f"Bearer {match.group(1)}",
    )


def assert_not_submitted(trial: Trial) -> None:
    trial.refresh_from_db()
    assert (trial.status, trial.submission_id) == (Trial.Status.ACTIVE, None)
    assert not Submission.objects.exists()
    assert not WorkspaceUpload.objects.exists()


def test_the_feedback_only_arm_refuses_the_upload_page_and_the_archive_endpoint() -> None:
    # Even with every channel left on (an arm edited outside the admin), feedback-only means
    # editor only.
    client, _, trial = opened(ai_mode=Arm.AIMode.FEEDBACK)
    page = upload_page(client, trial)
    assert page.status_code == 403
    assert (
        "This task does not accept code as an uploaded file."
        + FEEDBACK_ONLY
        + " Use the in-browser workspace."
    ) in page.content.decode()
    refused = archive(client, trial)
    assert refused.status_code == 403
    assert refused.json() == {
        "error": "This task does not accept code from the submit script."
        + FEEDBACK_ONLY
        + " Use the in-browser workspace."
    }
    assert_not_submitted(trial)
    assert (
        "not submitted by uploading a file"
        in client.get(f"/study/trials/{trial.pk}/").content.decode()
    )
    # The editor submits what the assistant wrote (here still the starter).
    current = client.get(url(trial, "state")).json()["files"]["solution.py"]
    with grading_queued():
        assert post(client, url(trial, "submit"), {"code": current}).status_code == 200
    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED
    assert trial.submission is not None
    assert trial.submission.files == {"solution.py": current}


def test_an_arm_that_takes_only_the_submit_script_refuses_the_editor_and_the_upload_page() -> None:
    client, _, trial = opened(submission_channels=[Arm.Channel.SCRIPT])
    refusal = "This task does not accept code from the in-browser editor. Use the submit script."
    for endpoint in ("autosave", "run", "submit"):
        response = post(client, url(trial, endpoint), {"code": OWN_CODE.decode()})
        assert response.status_code == 403, endpoint
        assert response.json() == {"error": refusal}
    page = upload_page(client, trial)
    assert page.status_code == 403
    assert "This task does not accept code as an uploaded file. Use the submit script." in (
        page.content.decode()
    )
    assert_not_submitted(trial)
    trial.refresh_from_db()
    assert trial.draft_saved_at is None  # nothing autosaved, so nothing submitted at time-up
    with grading_queued():
        assert archive(client, trial).status_code == 201
    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED


def test_a_feedback_only_arm_may_allow_only_the_editor_and_the_snapshot_freezes_it() -> None:
    study = journey_study()
    arm = study.arms.get(condition="B")
    arm.ai_mode = Arm.AIMode.FEEDBACK
    arm.submission_channels = [Arm.Channel.EDITOR, Arm.Channel.UPLOAD]
    problem = (
        "A feedback-only arm may allow only the in-browser editor: on the upload page and with "
        "the submit script participants would hand in code the assistant did not write."
    )
    with pytest.raises(ValidationError) as refused:
        arm.full_clean()
    assert refused.value.message_dict == {"submission_channels": [problem]}
    arm.save()
    assert f"Arm B: {problem}" in configuration_problems(study)
    # The admin's form (checkboxes) says the same.
    data = {
        "condition": "B",
        "name": arm.name,
        "ai_mode": "feedback",
        "ide": "browser",
        "ai_provider": "demo",
        "time_limit_min": 60,
        "token_cap": 1000,
        "submission_channels": ["editor", "script"],
    }
    form = ArmForm(data, instance=arm)
    assert not form.is_valid()
    assert form.errors["submission_channels"] == [problem]
    empty = ArmForm({**data, "submission_channels": []}, instance=arm)
    assert "This field is required." in empty.errors["submission_channels"]
    form = ArmForm({**data, "submission_channels": ["editor"]}, instance=arm)
    assert form.is_valid(), form.errors
    form.save()
    assert configuration_problems(study) == []
    assert study_config(study)["arms"]["B"]["submission_channels"] == ["editor"]
    assert current_snapshot(study).content["arms"]["B"]["submission_channels"] == ["editor"]
    arm.submission_channels = []
    assert arm.channel_problems() == ["Allow at least one submission channel."]


def test_the_study_admin_offers_the_channels_with_their_help_text(admin_client: Client) -> None:
    study = journey_study()
    html = admin_client.get(f"/admin/study/study/{study.pk}/change/").content.decode()
    assert 'name="arms-0-submission_channels" value="script"' in html
    assert "A feedback-only arm may allow only the in-browser editor" in html


def test_the_migration_leaves_existing_feedback_only_arms_the_editor_alone() -> None:
    migration = importlib.import_module("study.migrations.0007_arm_submission_channels")
    study = journey_study()
    study.arms.filter(condition="B").update(ai_mode=Arm.AIMode.FEEDBACK)
    migration.feedback_arms_take_only_the_editor(django_apps, None)
    channels = dict(study.arms.values_list("condition", "submission_channels"))
    assert channels == {"A": ["editor", "upload", "script"], "B": ["editor"]}
