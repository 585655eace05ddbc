"""Multi-file workspaces over HTTP, on the bank's project task (three editable modules, a data
file, an SVG diagram): the tree, per-file autosave, 400/413 refusals, runs and submissions of
the whole editable set, the image endpoint, archives, the upload page, the deadline and the
feedback-only arm."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from evaluation.submissions import MAX_FILE_BYTES
from ide_bridge.models import AIRequest
from ide_bridge.telemetry.services import issue_trial_token
from study.enrolment.accounts import issue_login_link
from study.models import Arm, Trial
from tests.ide_bridge.submissions.test_submission_http import tgz
from tests.ide_bridge.workspace.workspace_helpers import (
    assigned,
    first_trial,
    on_project,
    opened_project,
    post,
    project_reference,
    project_starter,
    url,
)
from tests.study.helpers import grading_queued, journey_study

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]

BILLS = "metering/bills.py"
TARIFFS = "metering/tariffs.py"
INIT = "metering/__init__.py"
DIAGRAM = "diagrams/billing.svg"


def page_json(html: str, script_id: str) -> Any:
    match = re.search(rf'<script id="{script_id}" type="application/json">(.*?)</script>', html)
    assert match is not None, script_id
    return json.loads(match.group(1))


def draft(trial: Trial) -> dict[str, str]:
    trial.refresh_from_db()
    return dict(trial.draft_files)


# --- The page and its state -------------------------------------------------------------------
def test_the_page_lists_every_file_readme_first_with_folders_and_marks_the_read_only_ones() -> None:
    client, _, trial = opened_project()
    html = client.get(url(trial)).content.decode()
    files = page_json(html, "workspace-files")
    names = [f["name"] for f in files]
    assert names[0] == "README.md"
    assert {BILLS, TARIFFS, INIT, "metering/models.py", "data/tariffs.csv", DIAGRAM} <= set(names)
    assert names.index("task_data.json") < names.index(DIAGRAM)  # top-level files first
    editable = {f["name"] for f in files if f["editable"]}
    assert editable == {BILLS, TARIFFS, INIT}
    diagram = next(f for f in files if f["name"] == DIAGRAM)
    assert diagram["image"] is True
    assert diagram["text"] == ""
    assert diagram["url"] == f"/ide/workspace/{trial.pk}/images/{DIAGRAM}"
    assert "test_hidden" not in html  # hidden tests never reach the page
    state = page_json(html, "workspace-state")
    assert state["files"] == project_starter(trial)
    assert state["editable"] == [BILLS, INIT, TARIFFS]  # the entry point's file first
    assert 'data-folder="metering"' in html  # the server-rendered tree has its folders


def test_autosave_merges_one_file_at_a_time_and_reload_restores_every_file() -> None:
    client, participant, trial = opened_project()
    first = post(client, url(trial, "autosave"), {"files": {BILLS: "# bills v1\n"}})
    assert first.status_code == 200, first.content
    assert first.json()["saved"] == [BILLS]
    assert draft(trial) == {BILLS: "# bills v1\n"}  # only what the participant changed
    post(client, url(trial, "autosave"), {"files": {TARIFFS: "# tariffs v1\n"}})
    post(client, url(trial, "autosave"), {"files": {BILLS: "# bills v2\n"}})
    assert draft(trial) == {BILLS: "# bills v2\n", TARIFFS: "# tariffs v1\n"}
    expected = project_starter(trial) | {BILLS: "# bills v2\n", TARIFFS: "# tariffs v1\n"}
    assert client.get(url(trial, "state")).json()["files"] == expected
    other = Client()  # another device: the same files
    other.post(issue_login_link(participant))
    assert other.get(url(trial, "state")).json()["files"] == expected
    files = page_json(other.get(url(trial)).content.decode(), "workspace-files")
    assert {f["name"]: f["text"] for f in files if f["editable"]} == expected


@pytest.mark.parametrize(
    ("files", "sentence"),
    [
        ({"metering/models.py": "x = 1\n"}, "metering/models.py is read-only in this task"),
        ({"data/tariffs.csv": "a,b\n"}, "data/tariffs.csv is read-only in this task"),
        ({"test_visible.py": "pass\n"}, "test_visible.py is read-only in this task"),
        ({"test_hidden.py": "x"}, "test_hidden.py is not a file of this task"),
        ({"../../etc/passwd": "x"}, "is not a file of this task"),
        ({BILLS: "ok\n", "nope.py": "x"}, "nope.py is not a file of this task"),
        ({BILLS: "nul\x00"}, f"{BILLS} contains NUL characters"),
        ({BILLS: 5}, 'Expected a JSON object {"files"'),
    ],
)
def test_bad_paths_and_bodies_are_400_with_a_sentence_and_save_nothing(
    files: dict[str, Any], sentence: str
) -> None:
    client, _, trial = opened_project()
    post(client, url(trial, "autosave"), {"files": {BILLS: "# mine\n"}})
    for endpoint in ("autosave", "run", "submit"):
        response = post(client, url(trial, endpoint), {"files": files})
        assert response.status_code == 400, (endpoint, response.content)
        assert sentence in response.json()["error"]
    assert draft(trial) == {BILLS: "# mine\n"}
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE


def test_the_one_file_shorthand_is_refused_for_a_task_with_several_files() -> None:
    client, _, trial = opened_project()
    response = post(client, url(trial, "autosave"), {"code": "x = 1\n"})
    assert response.status_code == 400
    assert "several editable files" in response.json()["error"]


def test_a_file_over_the_limit_is_413_with_a_sentence_and_the_others_stay_saved() -> None:
    client, _, trial = opened_project()
    post(client, url(trial, "autosave"), {"files": {TARIFFS: "# kept\n"}})
    huge = "#" * (MAX_FILE_BYTES + 1)
    for endpoint in ("autosave", "run", "submit"):
        response = post(client, url(trial, endpoint), {"files": {BILLS: huge, TARIFFS: "x"}})
        assert response.status_code == 413, endpoint
        assert response.json()["error"] == f"{BILLS} is larger than the 256 KiB limit."
    assert draft(trial) == {TARIFFS: "# kept\n"}
    body = json.dumps({"files": {BILLS: "\x01" * (2 * 1024 * 1024)}})  # 12 MB of escapes
    response = client.post(url(trial, "autosave"), body, content_type="application/json")
    assert response.status_code == 413
    assert "KiB limit" in response.json()["error"]


# --- Runs and submissions of the whole editable set -------------------------------------------
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("bwrap")
def test_visible_tests_run_against_every_editable_file_the_saved_ones_included() -> None:
    client, _, trial = opened_project()
    reference = project_reference(trial)
    # The reference's tariffs.py saved earlier, its bills.py sent with the run: both count.
    post(client, url(trial, "autosave"), {"files": {TARIFFS: reference[TARIFFS]}})
    response = post(client, url(trial, "run"), {"files": {BILLS: reference[BILLS]}})
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "passed", response.json()["output"]
    assert draft(trial) == {TARIFFS: reference[TARIFFS], BILLS: reference[BILLS]}
    # A broken saved module fails the run, and the output names it.
    post(client, url(trial, "autosave"), {"files": {TARIFFS: "def load_tariffs(:\n"}})
    failed = post(client, url(trial, "run"), {"files": {}}).json()
    assert failed["ok"] is False
    assert "tariffs.py" in failed["output"]


def test_submit_takes_the_saved_and_the_sent_files_and_fills_in_the_rest() -> None:
    client, _, trial = opened_project()
    post(client, url(trial, "autosave"), {"files": {TARIFFS: "# saved tariffs\n"}})
    with grading_queued():
        response = post(client, url(trial, "submit"), {"files": {BILLS: "# final bills\n"}})
    assert response.status_code == 200, response.content
    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED
    assert trial.submission is not None
    assert trial.submission.files == {
        INIT: project_starter(trial)[INIT],
        BILLS: "# final bills\n",
        TARIFFS: "# saved tariffs\n",
    }


def test_at_the_deadline_the_saved_files_are_submitted_over_the_starter() -> None:
    client, _, trial = opened_project()
    post(client, url(trial, "autosave"), {"files": {BILLS: "# late bills\n"}})
    Trial.objects.filter(pk=trial.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    with grading_queued():
        state = post(client, url(trial, "close"), {}).json()
    assert state["status"] == "expired"
    trial.refresh_from_db()
    assert trial.submission is not None
    assert trial.submission.files == project_starter(trial) | {BILLS: "# late bills\n"}
    assert trial.submission.source_label == "participant:auto-submitted"


# --- Images -----------------------------------------------------------------------------------
def test_the_image_endpoint_serves_the_diagram_with_its_type_and_nothing_else() -> None:
    client, _, trial = opened_project()
    response = client.get(url(trial, f"images/{DIAGRAM}"))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert b"<svg" in response.content
    for path in (BILLS, "README.md", "data/tariffs.csv", "test_hidden.py", "diagrams/x.svg"):
        assert client.get(url(trial, f"images/{path}")).status_code == 404, path
    assert client.get(url(trial, "images/../../etc/passwd.png")).status_code == 404


def test_someone_elses_diagram_is_404_and_a_signed_out_request_401() -> None:
    study = journey_study()
    client, participant = assigned(study)
    other, _ = assigned(study)
    trial = on_project(first_trial(participant))
    client.post(url(trial, "start"))
    assert client.get(url(trial, f"images/{DIAGRAM}")).status_code == 200
    assert other.get(url(trial, f"images/{DIAGRAM}")).status_code == 404
    assert other.get(f"/ide/workspace/999999/images/{DIAGRAM}").status_code == 404
    assert Client().get(url(trial, f"images/{DIAGRAM}")).status_code == 401


# --- Archives and the upload page -------------------------------------------------------------
def send_archive(trial: Trial, data: bytes) -> Any:
    token = issue_trial_token(trial)
    return Client().post(
        f"/ide/submissions/{trial.pk}",
        data,
        content_type="application/gzip",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def test_an_archive_submits_every_editable_file_and_ignores_read_only_ones() -> None:
    _, _, trial = opened_project()
    starter = project_starter(trial)
    tree = {f"task/{path}": text.encode() for path, text in starter.items()}
    tree["task/metering/bills.py"] = b"# from my laptop\n"
    tree["task/metering/models.py"] = b"# changed read-only file\n"
    tree["task/data/tariffs.csv"] = b"x\n"
    missing = dict(tree)
    del missing["task/metering/tariffs.py"]
    refused = send_archive(trial, tgz(missing))
    assert refused.status_code == 400
    assert "metering/tariffs.py" in refused.json()["error"]
    with grading_queued():
        response = send_archive(trial, tgz(tree))
    assert response.status_code == 201, response.content
    trial.refresh_from_db()
    assert trial.submission is not None
    assert trial.submission.files == starter | {BILLS: "# from my laptop\n"}


def test_the_upload_page_asks_for_every_editable_file() -> None:
    client, _, trial = opened_project(submission_channels=[Arm.Channel.UPLOAD])
    page = client.get(f"/study/trials/{trial.pk}/").content.decode()
    for index, path in enumerate([BILLS, INIT, TARIFFS]):  # in the order of Instance.editable
        assert f'name="file-{index}"' in page
        assert f">{path}</label>" in page

    def uploads(*names: str) -> dict[str, SimpleUploadedFile]:
        bodies = {"file-0": b"# bills\n", "file-1": b"# init\n", "file-2": b"# tariffs\n"}
        return {name: SimpleUploadedFile(name, bodies[name]) for name in names}

    refused = client.post(f"/study/trials/{trial.pk}/", uploads("file-0", "file-1"))
    assert refused.status_code == 400
    assert f"Choose your {TARIFFS} before submitting." in refused.content.decode()
    trial.refresh_from_db()
    assert trial.submission is None
    with grading_queued():
        response = client.post(f"/study/trials/{trial.pk}/", uploads("file-0", "file-1", "file-2"))
        assert response.status_code == 302
    trial.refresh_from_db()
    assert trial.submission is not None
    assert trial.submission.files == {INIT: "# init\n", BILLS: "# bills\n", TARIFFS: "# tariffs\n"}


# --- The feedback-only arm ----------------------------------------------------------------------
def test_the_feedback_arm_revises_one_named_file_and_shows_the_model_every_file() -> None:
    client, _, trial = opened_project(ai_mode="feedback", ai_provider="demo")
    editing = post(client, url(trial, "autosave"), {"files": {BILLS: "# typed\n"}})
    assert editing.status_code == 403  # the participant does not type in this arm
    response = client.post(
        f"/ide/ai/{trial.pk}/feedback",
        json.dumps({"feedback": "Use the diagram's rounding rule.", "stage": "coding"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["applied"] is True
    # The demo names the current file (the first editable one: the entry point's module); the
    # marker line is dropped.
    assert data["file"] == BILLS
    assert not data["code"].startswith("# file:")
    assert data["diff"].startswith(f"--- {BILLS} (before)\n+++ {BILLS} (after)\n")
    assert draft(trial) == {BILLS: data["code"]}
    state = client.get(url(trial, "state")).json()
    assert state["files"][BILLS] == data["code"]
    assert state["files"][TARIFFS] == project_starter(trial)[TARIFFS]
    prompt = AIRequest.objects.get(trial=trial).messages[-2]["content"]
    assert f"Editable files: {BILLS}, {INIT}, {TARIFFS}" in prompt
    assert DIAGRAM in prompt
    assert f"File {TARIFFS}:\n```python\n" in prompt
