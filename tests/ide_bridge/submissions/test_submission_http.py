"""``POST /ide/submissions/<id>``: a workspace archive with the trial's bearer token is
stored once and submitted; retries are idempotent; attacks and closed trials are refused; the
rendered ``submit`` script does all of it with ``sh``, ``tar`` and ``curl``."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.instances import get_instance
from evaluation.models import Submission
from ide_bridge.models import WorkspaceUpload
from ide_bridge.submissions.archives import MAX_ARCHIVE_BYTES
from ide_bridge.submissions.submit_script import render_submit_script
from ide_bridge.telemetry.services import issue_trial_token
from study.models import Trial
from study.trials.services import start_trial
from tests.study.helpers import assigned, grading_queued, journey_study

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]


# --- Helpers ----------------------------------------------------------------------------------
def assigned_trial() -> Trial:
    """The first trial of a participant who consented and was screened (not started yet)."""
    _, participant = assigned(journey_study(), seed=5)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    return trial


def started_trial(minutes_ago: int = 1) -> Trial:
    trial = assigned_trial()
    return start_trial(trial, timezone.now() - timedelta(minutes=minutes_ago))


def starter(trial: Trial) -> bytes:
    return get_instance(trial.template_slug, trial.seed).participant_files["solution.py"].encode()


def tgz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def workspace(trial: Trial, note: bytes = b"# notes\n") -> bytes:
    return tgz({"./solution.py": starter(trial), "./NOTES.md": note})


def url(trial_id: int) -> str:
    return reverse("ide_bridge:submission", kwargs={"trial_id": trial_id})


def send(
    trial_id: int,
    data: bytes,
    token: str | None,
    content_type: str = "application/gzip",
    **extra: Any,
) -> Any:
    client = Client(enforce_csrf_checks=True)  # token auth: no cookie, no CSRF token
    if token is not None:
        extra["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client.post(url(trial_id), data, content_type=content_type, **extra)


@pytest.fixture
def trial() -> Trial:
    return started_trial()


@pytest.fixture
def token(trial: Trial) -> str:
    return issue_trial_token(trial)


# --- Authorisation ----------------------------------------------------------------------------
def test_the_route_is_named_submission(trial: Trial) -> None:
    assert url(trial.pk) == f"/ide/submissions/{trial.pk}"


def test_a_missing_or_malformed_token_is_401(trial: Trial, token: str) -> None:
    response = send(trial.pk, workspace(trial), None)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in response.json()["error"]
    basic = send(trial.pk, workspace(trial), None, HTTP_AUTHORIZATION=f"Basic {token}")
    assert basic.status_code == 401
    assert not WorkspaceUpload.objects.exists()


NOT_OPENED = {"error": "There is no such trial, or the token does not open it."}


def test_a_wrong_token_is_404_like_an_unknown_trial(trial: Trial, token: str) -> None:
    response = send(trial.pk, workspace(trial), token[:-2] + "xx")
    assert response.status_code == 404
    assert response.json() == NOT_OPENED
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE


def test_a_token_of_another_trial_is_404(trial: Trial, token: str) -> None:
    other = trial.participant.trials.exclude(pk=trial.pk).first()
    assert other is not None
    issue_trial_token(other)
    assert send(other.pk, workspace(trial), token).status_code == 404


def test_an_unknown_trial_is_404(trial: Trial, token: str) -> None:
    response = send(trial.pk + 10_000, workspace(trial), token)
    assert response.status_code == 404
    assert response.json() == NOT_OPENED


def test_only_post_is_allowed(trial: Trial, token: str) -> None:
    response = Client().get(url(trial.pk), HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405
    assert response["Allow"] == "POST"


# --- Size and content -------------------------------------------------------------------------
def test_a_body_over_the_limit_is_413(trial: Trial, token: str) -> None:
    response = send(trial.pk, b"\x1f\x8b" + bytes(MAX_ARCHIVE_BYTES), token)
    assert response.status_code == 413
    assert response.json() == {"error": "The archive is larger than the 5 MiB limit."}
    big = SimpleUploadedFile("w.tar.gz", bytes(MAX_ARCHIVE_BYTES + 1), "application/gzip")
    multipart = Client().post(url(trial.pk), {"archive": big}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert multipart.status_code == 413
    assert not WorkspaceUpload.objects.exists()


def test_a_declared_length_over_the_limit_is_413_before_reading(trial: Trial, token: str) -> None:
    length = str(MAX_ARCHIVE_BYTES + 1)
    response = send(trial.pk, workspace(trial), token, CONTENT_LENGTH=length)
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"solution.py": b"x", "../../etc/cron.d/x": b"x"}, "leaves the workspace"),
        ({"solution.py": b"x", "/etc/passwd": b"x"}, "absolute path"),
        ({"main.py": b"x"}, "The archive has no solution.py at its top level."),
        ({"solution.py": bytes(300 * 1024)}, "solution.py is larger than the 256 KiB limit."),
    ],
)
def test_a_refused_archive_is_400_with_the_reason(
    trial: Trial, token: str, files: dict[str, bytes], message: str
) -> None:
    response = send(trial.pk, tgz(files), token)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert not WorkspaceUpload.objects.exists()
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE


def test_a_symlink_in_the_archive_is_400(trial: Trial, token: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        link = tarfile.TarInfo("solution.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    response = send(trial.pk, buffer.getvalue(), token)
    assert response.status_code == 400
    assert "links are not accepted" in response.json()["error"]


def test_an_empty_body_is_400(trial: Trial, token: str) -> None:
    response = send(trial.pk, b"", token)
    assert response.status_code == 400
    assert response.json() == {"error": "The request has no archive in it."}


# --- Submitting -------------------------------------------------------------------------------
def test_the_first_upload_is_stored_and_submits_the_trial(trial: Trial, token: str) -> None:
    data = workspace(trial)
    with grading_queued():
        response = send(trial.pk, data, token)
    assert response.status_code == 201, response.content
    body = response.json()
    digest = hashlib.sha256(data).hexdigest()
    assert body["status"] == "submitted"
    assert body["sha256"] == digest
    assert body["trial"] == trial.pk
    assert body["files"] == 2

    upload = WorkspaceUpload.objects.get(trial=trial)
    assert upload.sha256 == digest
    assert bytes(upload.archive) == data
    assert upload.size == len(data)
    assert upload.files == [
        {"name": "NOTES.md", "size": 8},
        {"name": "solution.py", "size": len(starter(trial))},
    ]
    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED
    assert trial.submission is not None
    assert trial.submission.files == {"solution.py": starter(trial).decode()}
    assert trial.submission.source_label == "participant:archive"
    assert trial.evaluation is not None
    assert trial.evaluation.status == "queued"


def test_an_identical_retry_is_200_with_the_same_body(trial: Trial, token: str) -> None:
    data = workspace(trial)
    with grading_queued():
        first = send(trial.pk, data, token)
        second = send(trial.pk, data, token, content_type="application/octet-stream")
    assert first.status_code == 201
    assert second.status_code == 200
    assert second.json() == first.json()
    assert WorkspaceUpload.objects.filter(trial=trial).count() == 1
    assert Submission.objects.count() == 1


def test_another_archive_after_submitting_is_409(trial: Trial, token: str) -> None:
    with grading_queued():
        assert send(trial.pk, workspace(trial), token).status_code == 201
        response = send(trial.pk, workspace(trial, note=b"changed\n"), token)
    assert response.status_code == 409
    assert "already been submitted" in response.json()["error"]
    assert WorkspaceUpload.objects.filter(trial=trial).count() == 1


def test_a_trial_past_its_deadline_is_409_and_closes(token: str, trial: Trial) -> None:
    Trial.objects.filter(pk=trial.pk).update(deadline=timezone.now() - timedelta(minutes=1))
    with grading_queued():
        response = send(trial.pk, workspace(trial), token)
    assert response.status_code == 409
    assert "ran out" in response.json()["error"]
    assert not WorkspaceUpload.objects.exists()
    trial.refresh_from_db()
    assert trial.status == Trial.Status.EXPIRED


def test_a_trial_not_started_yet_is_409() -> None:
    trial = assigned_trial()
    token = issue_trial_token(trial)
    response = send(trial.pk, workspace(trial), token)
    assert response.status_code == 409
    assert response.json() == {"error": "This trial has not started yet."}


def test_multipart_and_zip_uploads_are_accepted(trial: Trial, token: str) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("task/solution.py", starter(trial))
    upload = SimpleUploadedFile("task.zip", buffer.getvalue(), "application/zip")
    with grading_queued():
        response = Client(enforce_csrf_checks=True).post(
            url(trial.pk), {"archive": upload}, HTTP_AUTHORIZATION=f"Bearer {token}"
        )
    assert response.status_code == 201, response.content
    stored = WorkspaceUpload.objects.get(trial=trial)
    assert bytes(stored.archive) == buffer.getvalue()
    assert stored.files == [{"name": "solution.py", "size": len(starter(trial))}]


def test_a_multipart_form_without_the_archive_field_is_400(trial: Trial, token: str) -> None:
    upload = SimpleUploadedFile("w.tar.gz", workspace(trial), "application/gzip")
    response = Client().post(url(trial.pk), {"file": upload}, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400
    assert "'archive'" in response.json()["error"]


# --- The submit script ------------------------------------------------------------------------
def test_the_script_quotes_its_values_and_refuses_odd_tokens() -> None:
    script = render_submit_script("https://study.example.org/", 7, "abc_DEF-123456789012")
    assert script.startswith("#!/bin/sh\n")
    assert "SUBMISSION_URL=https://study.example.org/ide/submissions/7\n" in script
    assert "TRIAL_TOKEN=abc_DEF-123456789012\n" in script
    assert "curl --config - --fail-with-body" in script
    with pytest.raises(ValueError, match="token"):
        render_submit_script("https://x.org", 7, "abc'; rm -rf ~; echo '0123456789")
    with pytest.raises(ValueError, match="base_url"):
        render_submit_script("javascript:alert(1)", 7, "abc_DEF-123456789012")


def test_the_script_of_a_project_refuses_a_folder_without_every_editable_file(
    tmp_path: Path,
) -> None:
    editable = ("metering/__init__.py", "metering/bills.py", "metering/tariffs.py")
    script = render_submit_script("https://study.example.org", 7, "abc_DEF-123456789012", editable)
    (tmp_path / "metering").mkdir()
    (tmp_path / "metering" / "__init__.py").write_text("")
    (tmp_path / "metering" / "bills.py").write_text("")
    (tmp_path / "submit").write_text(script)
    done = subprocess.run(
        ["sh", "submit"], cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2  # before anything is packed or sent
    assert "metering/tariffs.py is missing" in done.stderr
    with pytest.raises(ValueError, match="editable paths"):
        render_submit_script("https://x.org", 7, "abc_DEF-123456789012", ("a b/$(x).py",))


@pytest.mark.skipif(
    not (shutil.which("curl") and shutil.which("tar") and shutil.which("gzip")),
    reason="needs curl, tar and gzip",
)
def test_the_rendered_script_submits_the_folder(live_server: Any, tmp_path: Path) -> None:
    trial = started_trial()
    token = issue_trial_token(trial)
    folder = tmp_path / "task"
    (folder / "pkg").mkdir(parents=True)
    (folder / ".git").mkdir()
    (folder / "__pycache__").mkdir()
    (folder / "solution.py").write_bytes(starter(trial))
    (folder / "pkg" / "helpers.py").write_text("X = 1\n")
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "__pycache__" / "solution.cpython-311.pyc").write_bytes(b"\0" * 16)
    (folder / "submit").write_text(render_submit_script(live_server.url, trial.pk, token))
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "submit"], cwd=folder, env=env, capture_output=True, text=True, timeout=90
        )

    with grading_queued():
        first = run()
        assert first.returncode == 0, first.stdout + first.stderr
        assert "(HTTP 201)" in first.stdout
        assert '"status": "submitted"' in first.stdout
        again = run()  # the same files make the same archive: a harmless retry
        assert again.returncode == 0, again.stdout + again.stderr
        assert "(HTTP 200)" in again.stdout

    upload = WorkspaceUpload.objects.get(trial=trial)
    # Without .git, __pycache__ and the script itself (it holds the token).
    assert {f["name"] for f in upload.files} == {"solution.py", "pkg/helpers.py"}
    assert token.encode() not in bytes(upload.archive)
    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED
    assert trial.evaluation is not None
    assert trial.evaluation.status == "queued"

    (folder / "solution.py").write_text("# changed after submitting\n")
    late = run()
    assert late.returncode == 1
    assert "already been submitted" in late.stdout
    assert "HTTP 409" in late.stderr
    assert list(tmp_path.glob("submission.*")) == []  # the temporary archive is removed
