"""The researchers' benchmark pages: sweeps, their progress and results, a run's page, C1
interventions, the leaderboard and its exports, a study's people beside the models, access."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from evaluation.instances import get_instance
from evaluation.llm.datasets import record_dataset
from evaluation.llm.units import plan_sweep, run_unit
from evaluation.models import AgentRun, Dataset, Intervention, ModelEndpoint, Sweep
from evaluation.services import record_instance
from study.models import Study, Trial
from tests.evaluation.grading_fixtures import CHEAP_TEMPLATE, real_sandbox, store_calibration
from tests.evaluation.llm_helpers import scripted_solver
from tests.factories import ResearcherFactory, UserFactory
from tests.llm_server import ScriptedLLM
from tests.study.factories_study import make_participant, make_study
from tests.study.results.report_helpers import add_trial, fake_report, researcher_client
from tests.test_house_rules import assert_gets_change_nothing

pytestmark = pytest.mark.django_db


def cheap_dataset() -> Dataset:
    """A Dataset row of the cheap template's seed 1, as build_dataset records it."""
    inst = get_instance(CHEAP_TEMPLATE, 1)
    t = inst.template
    return record_dataset(
        {
            "dataset_version": "d" * 64,
            "templates": {
                t.slug: {
                    "version": t.version,
                    "content_hash": t.content_hash,
                    "track": t.track,
                    "difficulty": t.difficulty,
                    "title": t.title,
                }
            },
            "instances": [
                {
                    "template": t.slug,
                    "version": t.version,
                    "seed": 1,
                    "instance_hash": inst.content_hash,
                }
            ],
        },
        "var/datasets/cheap",
    )


@pytest.fixture
def endpoint() -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        name="scripted", base_url="http://127.0.0.1:9/v1", model="scripted-1"
    )


def plan(endpoint: ModelEndpoint, condition: str = "C0", **kwargs: Any) -> Sweep:
    return plan_sweep(
        endpoint=endpoint,
        condition=condition,
        instances=[(CHEAP_TEMPLATE, 1)],
        samples=2,
        attempts=3,
        **kwargs,
    )


def human_study() -> Study:
    """A study whose people solved the cheap template's seed 1: one without AI who passed, one
    with AI who failed."""
    study = make_study(status=Study.Status.RECRUITING)
    row = record_instance(get_instance(CHEAP_TEMPLATE, 1))
    for condition, overall in (("A", True), ("B", False)):
        trial = add_trial(
            make_participant(study), 1, condition, report=fake_report(overall=overall)
        )
        Trial.objects.filter(pk=trial.pk).update(instance=row, template_slug=CHEAP_TEMPLATE)
    study.arms.filter(condition="B").update(ai_mode="chat")
    return study


@pytest.mark.timeout(150)
def test_a_researcher_follows_a_finished_sweep_its_runs_and_the_leaderboard(
    endpoint: ModelEndpoint,
) -> None:
    store_calibration()
    dataset = cheap_dataset()
    with ScriptedLLM(scripted_solver()) as llm:
        ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=llm.base_url)
        endpoint.refresh_from_db()
        sweep = plan(endpoint, dataset=dataset)
        for run in sweep.runs.order_by("sample"):
            run_unit(run.pk, sandbox=real_sandbox())
    passing, failing = sweep.runs.order_by("sample")
    assert (passing.status, failing.status) == ("done", "done")
    study = human_study()
    client = researcher_client(study)

    listing = client.get("/study/benchmarks/").content.decode()
    assert f"/study/benchmarks/sweeps/{sweep.pk}/" in listing
    assert "2/2" in listing

    page = client.get(f"/study/benchmarks/sweeps/{sweep.pk}/").content.decode()
    assert "50.0 %" in page  # pass@1 of one instance with one passing sample out of two
    assert f"/study/benchmarks/runs/{passing.pk}/" in page
    progress = client.get(f"/study/benchmarks/sweeps/{sweep.pk}/progress.json").json()
    assert progress == {
        "total": 2, "done": 2, "failed": 0, "running": 0, "passed": 1, "tokens": 3440
    }  # fmt: skip

    run_page = client.get(f"/study/benchmarks/runs/{failing.pk}/").content.decode()
    assert "write_file" in run_page
    assert "Overall pass: <strong>no</strong>" in run_page
    assert "1000 + 200 tokens" in run_page
    assert "Add a manual intervention" not in run_page  # C0, and finished

    board = client.get("/study/benchmarks/leaderboard/").content.decode()
    assert "scripted C0" in board
    assert "50.0 % (" in board
    exported = client.get(f"/study/benchmarks/leaderboard.json?dataset={dataset.version[:8]}")
    assert exported["Content-Disposition"].startswith("attachment;")
    data = json.loads(exported.content)
    assert data["dataset"] == dataset.version
    assert [c["label"] for c in data["columns"]] == ["scripted C0"]
    overall = data["rows"][0]["cells"][0]
    assert (overall["n"], overall["samples"], overall["pass@1"]) == (1, 2, 0.5)
    assert overall["pass@10"] is None
    assert overall["tokens"] == 1720
    lines = list(
        csv.DictReader(
            io.StringIO(client.get("/study/benchmarks/leaderboard.csv").content.decode())
        )
    )
    assert lines[0]["row"] == "All tasks"
    assert lines[0]["pass_at_1"] == "0.5"
    markdown = client.get("/study/benchmarks/leaderboard.md").content.decode()
    assert "| All tasks | scripted C0 | 1 | 50.0 % (" in markdown

    mixed = client.get(f"/study/benchmarks/studies/{study.slug}/leaderboard.json").json()
    assert [c["condition"] for c in mixed["columns"]] == ["C0", "C_H", "C_2"]
    people = mixed["rows"][0]["cells"][1:]
    assert [(c["n"], c["pass@1"]) for c in people] == [(1, 1.0), (1, 0.0)]
    shown = client.get(f"/study/benchmarks/studies/{study.slug}/leaderboard/").content.decode()
    assert "C_H: people without AI" in shown

    assert_gets_change_nothing(
        client,
        [
            "/study/benchmarks/",
            f"/study/benchmarks/sweeps/{sweep.pk}/",
            f"/study/benchmarks/sweeps/{sweep.pk}/progress.json",
            f"/study/benchmarks/runs/{passing.pk}/",
            "/study/benchmarks/leaderboard/",
            "/study/benchmarks/leaderboard.md",
            f"/study/benchmarks/studies/{study.slug}/leaderboard/",
            "/study/benchmarks/start/",
        ],
    )


def test_people_are_left_out_when_the_study_used_other_template_versions(
    endpoint: ModelEndpoint,
) -> None:
    dataset = cheap_dataset()
    plan(endpoint, dataset=dataset)
    study = human_study()
    dataset.templates = {CHEAP_TEMPLATE: {**dataset.templates[CHEAP_TEMPLATE], "version": "0.9.0"}}
    Dataset.objects.filter(pk=dataset.pk).update(templates=dataset.templates)
    client = researcher_client(study)
    data = client.get(f"/study/benchmarks/studies/{study.slug}/leaderboard.json").json()
    assert [c["kind"] for c in data["columns"]] == ["llm"]
    page = client.get(f"/study/benchmarks/studies/{study.slug}/leaderboard/").content.decode()
    assert "the dataset has 0.9.0" in page
    assert client.get("/study/benchmarks/leaderboard/?dataset=abc").status_code == 400


def test_starting_a_sweep_queues_its_units_and_refuses_bad_input(
    endpoint: ModelEndpoint, django_capture_on_commit_callbacks: Any
) -> None:
    client = researcher_client()
    form = {"endpoint": "scripted", "condition": "C1", "templates": [CHEAP_TEMPLATE],
            "instances": "1", "samples": "2", "attempts": "5"}  # fmt: skip
    both = client.post("/study/benchmarks/start/", {**form, "dataset": cheap_dataset().version})
    assert both.status_code == 400
    assert "either a dataset or a number of instances" in both.content.decode()
    zero = client.post("/study/benchmarks/start/", {**form, "samples": "0"})
    assert zero.status_code == 400
    assert not Sweep.objects.exists()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post("/study/benchmarks/start/", form)
    sweep = Sweep.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/study/benchmarks/sweeps/{sweep.pk}/"
    assert (sweep.condition, sweep.samples, sweep.attempts) == ("C1", 2, 5)
    assert sweep.created_by is not None
    assert list(sweep.runs.values_list("status", flat=True)) == ["pending", "pending"]
    assert len(callbacks) == 1  # the units go to the workers once the sweep is committed


def test_a_c1_run_takes_manual_interventions_in_the_five_categories_only(
    endpoint: ModelEndpoint,
) -> None:
    run = plan(endpoint, "C1").runs.order_by("sample").first()
    assert run is not None
    client = researcher_client()
    assert (
        "Add a manual intervention"
        in client.get(f"/study/benchmarks/runs/{run.pk}/").content.decode()
    )
    url = f"/study/benchmarks/runs/{run.pk}/intervene/"
    refused = client.post(url, {"category": "logic", "message": "use a set"})
    assert refused.status_code == 400
    assert "one of the procedural categories" in refused.content.decode()
    assert client.post(url, {"category": "ports", "message": "Use port 8080."}).status_code == 302
    (note,) = Intervention.objects.filter(run=run)
    assert (note.category, note.source, note.message) == ("ports", "manual", "Use port 8080.")

    c0_run = plan(endpoint, "C0").runs.first()
    assert c0_run is not None
    page = client.get(f"/study/benchmarks/runs/{c0_run.pk}/").content.decode()
    assert "Add a manual intervention" not in page


def test_only_researchers_with_the_permissions_see_and_start_sweeps(
    endpoint: ModelEndpoint,
) -> None:
    run = plan(endpoint).runs.first()
    assert run is not None
    anonymous = Client()
    assert anonymous.get("/study/benchmarks/").status_code == 302  # to the sign-in page
    participant = Client()
    participant.force_login(UserFactory.create())
    assert participant.get("/study/benchmarks/").status_code == 403
    viewer = ResearcherFactory.create(is_superuser=False)
    viewer.groups.clear()
    viewer.user_permissions.add(Permission.objects.get(codename="view_sweep"))
    client = Client()
    client.force_login(viewer)
    assert client.get("/study/benchmarks/").status_code == 200
    assert client.get(f"/study/benchmarks/runs/{run.pk}/").status_code == 200
    start = client.get("/study/benchmarks/start/")
    assert start.status_code == 403
    assert client.post(f"/study/benchmarks/runs/{run.pk}/intervene/").status_code == 403
    assert client.get("/study/benchmarks/runs/999999/").status_code == 404
    staff = UserFactory.create(is_staff=True)
    client.force_login(staff)
    assert client.get("/study/benchmarks/").status_code == 403
    assert AgentRun.objects.count() == 2
