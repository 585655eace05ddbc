"""Researcher export pages: staff only, own studies only, the job runs in the worker with
progress, the zip streams back, and every export and download is audited."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse

from study.exports.services import run_export
from study.models import AuditEvent, ExportJob, Study
from tests.factories import ResearcherFactory, UserFactory
from tests.study.helpers import journey_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return Path(settings.MEDIA_ROOT)


@pytest.fixture
def study(researcher: Any) -> Study:
    study = journey_study(slug="exp-views")
    study.researchers.add(researcher)
    return study


@pytest.fixture
def client_for(researcher: Any) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def start(client: Client, study: Study, capture: Any, **data: str) -> Any:
    with capture(execute=True):  # the job is enqueued on commit; Celery runs eagerly in tests
        return client.post(
            reverse("study:export_start", args=[study.slug]), {"profile": "public", **data}
        )


def test_researcher_starts_an_export_and_downloads_the_zip(
    client_for: Client, study: Study, django_capture_on_commit_callbacks: Any, media: Path
) -> None:
    page = client_for.get(reverse("study:export_list", args=[study.slug]))
    assert page.status_code == 200
    assert b"Start export" in page.content

    response = start(client_for, study, django_capture_on_commit_callbacks, scope="demo-2027")
    assert response.status_code == 302
    job = ExportJob.objects.get(study=study)
    assert (job.status, job.progress, job.scope) == ("done", 100, "demo-2027")
    assert job.created_by == "rita@example.org"
    assert (media / job.zip_path).is_file()

    status = client_for.get(reverse("study:export_status", args=[job.pk])).json()
    assert status["status"] == "done"
    assert status["summary"]["k_target"] == 5
    assert status["download_url"] == reverse("study:export_download", args=[job.pk])

    download = client_for.get(status["download_url"])
    assert download.status_code == 200
    assert download["Content-Type"] == "application/zip"
    body = b"".join(download.streaming_content)  # type: ignore[attr-defined]
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read(next(n for n in names if n.endswith("manifest.json"))))
    assert manifest["scope"] == "demo-2027"
    assert any(n.endswith("codebook.csv") for n in names)

    actions = list(AuditEvent.objects.order_by("seq").values_list("action", "actor_ref"))
    assert ("export", "rita@example.org") in actions
    assert ("export_download", "rita@example.org") in actions
    export_event = AuditEvent.objects.get(action="export")
    assert export_event.details["profile"] == "public"
    assert "codebook.csv" in export_event.details["files"]
    assert export_event.details["zip_sha256"] == job.sha256


def test_progress_is_polled_as_json_or_as_an_htmx_row(client_for: Client, study: Study) -> None:
    job = ExportJob.objects.create(
        study=study, profile="public", scope="x", created_by="rita@example.org",
        status=ExportJob.Status.RUNNING, progress=42, progress_note="events",
    )  # fmt: skip
    url = reverse("study:export_status", args=[job.pk])
    body = client_for.get(url).json()
    assert (body["progress"], body["note"], body["finished"]) == (42, "events", False)
    assert body["download_url"] is None
    row = client_for.get(url, HTTP_HX_REQUEST="true")
    assert b'hx-trigger="every 2s"' in row.content
    assert b"42%" in row.content
    assert client_for.get(reverse("study:export_download", args=[job.pk])).status_code == 404


def test_other_researchers_and_participants_cannot_see_exports(study: Study) -> None:
    job = ExportJob.objects.create(study=study, profile="internal", scope="x", created_by="r")
    outsider = Client()
    outsider.force_login(ResearcherFactory.create(username="otto@example.org"))
    for url in (
        reverse("study:export_list", args=[study.slug]),
        reverse("study:export_status", args=[job.pk]),
        reverse("study:export_download", args=[job.pk]),
    ):
        assert outsider.get(url).status_code == 404
    assert outsider.post(reverse("study:export_start", args=[study.slug])).status_code == 404
    participant = Client()
    participant.force_login(UserFactory.create(username="p-amber-fox-417"))
    assert participant.get(reverse("study:export_list", args=[study.slug])).status_code == 403
    anonymous = Client().get(reverse("study:export_status", args=[job.pk]))
    assert anonymous.status_code == 302
    assert ExportJob.objects.count() == 1


def test_an_unknown_profile_starts_nothing(client_for: Client, study: Study) -> None:
    url = reverse("study:export_start", args=[study.slug])
    response = client_for.post(url, {"profile": "everything"}, follow=True)
    assert b"Choose the public or the internal profile" in response.content
    assert not ExportJob.objects.exists()
    assert client_for.get(url).status_code == 405


def test_a_failing_build_is_recorded_on_the_job(study: Study, media: Path) -> None:
    job = ExportJob.objects.create(study=study, profile="public", scope="x", created_by="r")
    with mock.patch("study.exports.services.build_package", side_effect=RuntimeError("disk full")):
        run_export(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error == "RuntimeError: disk full"
    assert not list((media / "exports").glob("*.zip"))
    assert not list((media / "exports").glob(".building-*"))  # the work directory is gone


def test_a_job_is_built_once(study: Study) -> None:
    job = ExportJob.objects.create(study=study, profile="public", scope="x", created_by="r")
    run_export(job.pk)
    job.refresh_from_db()
    finished = job.finished_at
    with mock.patch("study.exports.services.build_package") as build:
        again = run_export(job.pk)
    build.assert_not_called()
    assert again.finished_at == finished
