"""The design preview: the researcher page, the simulation in the worker task, the result
and the allocation table, and who may see them."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client

from study.models import DesignPreview, Participant, Study
from study.previews.services import run_preview
from tests.study.factories_study import make_participant, make_study, synthetic_templates
from tests.study.results.report_helpers import participant_client, researcher_client

pytestmark = pytest.mark.django_db
THREE = ("SDE", "MLE", "DS")


@pytest.fixture
def study() -> Study:
    pools = {code: synthetic_templates(5, prefix=code.lower()) for code in THREE}
    return make_study(tracks=THREE, templates=pools, target_participants=15, expected_dropout=0.2)


def start(client: Client, study: Study, capture: Any, **data: str) -> Any:
    with capture(execute=True):
        return client.post(f"/study/previews/{study.slug}/start/", data, follow=True)


def test_the_page_shows_each_tracks_pool_target_and_admissible_plans(study: Study) -> None:
    page = researcher_client(study).get(f"/study/previews/{study.slug}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "5 participants (the study&#x27;s target shared by the tracks)" in html
    assert html.count("<td>256</td>") == 3  # task orders x sequences within a difficulty gap of 1
    assert "No preview yet." in html
    assert not DesignPreview.objects.exists()  # a GET changes nothing


def test_a_preview_runs_in_the_worker_and_shows_the_balance_it_reaches(
    study: Study, django_capture_on_commit_callbacks: Any
) -> None:
    client = researcher_client(study)
    response = start(client, study, django_capture_on_commit_callbacks, seed="4")
    assert "is queued; it runs in the background" in response.content.decode()
    html = client.get(f"/study/previews/{study.slug}/").content.decode()
    preview = DesignPreview.objects.get()
    assert (preview.status, preview.progress, preview.seed, preview.dropout) == (
        "done",
        100,
        4,
        0.2,
    )
    assert "15 completed after" in html
    # 5 participants per track: 20 slots over 5 tasks, every task 2 x A and 2 x B.
    assert "The simulated allocation is balanced: no warnings." in html
    assert html.count("<td>A 2 · B 2</td>") == 15
    assert preview.result["plans_per_track"] == {"DS": 256, "MLE": 256, "SDE": 256}
    status = client.get(f"/study/previews/jobs/{preview.pk}/status/").json()
    assert status["finished"] is True
    assert status["warnings"] == preview.result["warnings"]
    table = client.get(status["csv_url"])
    assert table["Content-Disposition"].endswith(f'design-preview-{preview.pk}.csv"')
    rows = list(csv.DictReader(io.StringIO(table.content.decode())))
    assert len(rows) == preview.result["assignments"]
    assert sum(r["outcome"] == "completed" for r in rows) == 15
    assert {r["track"] for r in rows} == set(THREE)
    assert all(len(r["tasks"].split()) == 4 for r in rows)
    assert not Participant.objects.exists()  # the simulation left nothing behind
    assert Study.objects.count() == 1
    # 16 participants: DS gets 6, and 6 x 4 slots cannot split over 5 tasks x 2 conditions.
    study.target_participants = 16
    study.save(update_fields=["target_participants"])
    start(client, study, django_capture_on_commit_callbacks)
    html = client.get(f"/study/previews/{study.slug}/").content.decode()
    assert "Expected imbalance:" in html
    assert "Track DS: a target of 6 cannot give every task the same number of uses" in html


def test_the_same_seed_gives_the_same_allocation(
    study: Study, django_capture_on_commit_callbacks: Any
) -> None:
    client = researcher_client(study)
    start(client, study, django_capture_on_commit_callbacks)
    start(client, study, django_capture_on_commit_callbacks)
    first, second = DesignPreview.objects.order_by("pk")
    assert first.seed == second.seed == 1
    assert first.result["allocations"] == second.result["allocations"]


def test_a_design_that_cannot_assign_fails_with_the_reason(
    django_capture_on_commit_callbacks: Any,
) -> None:
    small = make_study(tracks=("SDE",), templates=synthetic_templates(3))
    start(researcher_client(small), small, django_capture_on_commit_callbacks)
    preview = DesignPreview.objects.get()
    assert preview.status == "failed"
    assert "needs 4 different tasks" in preview.error


def test_bad_seeds_and_wrong_methods_are_refused(
    study: Study, django_capture_on_commit_callbacks: Any
) -> None:
    client = researcher_client(study)
    response = start(client, study, django_capture_on_commit_callbacks, seed="-3")
    assert "The seed must be a whole number" in response.content.decode()
    assert not DesignPreview.objects.exists()
    assert client.get(f"/study/previews/{study.slug}/start/").status_code == 405
    queued = DesignPreview.objects.create(study=study, seed=1, dropout=0.1, created_by="x")
    unfinished = client.get(f"/study/previews/jobs/{queued.pk}/allocation.csv")
    assert unfinished.status_code == 409
    assert "not finished" in unfinished.content.decode()


def test_other_researchers_and_participants_cannot_see_a_preview(study: Study) -> None:
    preview = DesignPreview.objects.create(study=study, seed=1, dropout=0.1, created_by="x")
    stranger = researcher_client()
    assert stranger.get(f"/study/previews/{study.slug}/").status_code == 404
    assert stranger.get(f"/study/previews/jobs/{preview.pk}/status/").status_code == 404
    participant = participant_client(make_participant(study))
    assert participant.get(f"/study/previews/{study.slug}/").status_code in (302, 403)


def test_a_running_preview_shows_its_progress_on_the_status_page(study: Study) -> None:
    # The simulation's own writes are rolled back, so progress must reach the status page
    # another way (the cache): look at the page from inside the run, at every step.
    client = researcher_client(study)
    preview = DesignPreview.objects.create(study=study, seed=1, dropout=0.2, created_by="x")
    url = f"/study/previews/jobs/{preview.pk}/status/"
    seen: list[tuple[int, int, str]] = []

    def look(percent: int) -> None:
        status = client.get(url).json()
        seen.append((percent, status["progress"], status["status"]))

    run_preview(preview.pk, on_progress=look)
    assert len(seen) == 15  # one step per completed participant
    assert all(shown == percent and state == "running" for percent, shown, state in seen)
    assert [p for p, _, _ in seen] == sorted(p for p, _, _ in seen)
    assert 0 < seen[0][0] < seen[-1][0] == 99
    assert client.get(url).json()["progress"] == 100


def test_a_preview_of_a_study_without_tasks_fails_with_a_sentence() -> None:
    empty = make_study(tracks=("SDE",), templates=[])
    preview = DesignPreview.objects.create(study=empty, seed=1, dropout=0.1, created_by="x")
    assert run_preview(preview.pk).status == "failed"
    preview.refresh_from_db()
    assert preview.error == "No track has active tasks: add templates to a track's pool."
    assert run_preview(preview.pk).status == "failed"  # finished: left as it is
