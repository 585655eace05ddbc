"""The browser workspace over HTTP: the page offers the start, starting shows the files,
autosave and state restore the code, closing at the deadline, and submit is final."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from evaluation.instances import get_instance
from ide_bridge.telemetry.services import token_opens
from ide_bridge.workspace.environments import (
    BrowserEnvironment,
    EnvironmentUnavailable,
    get_environment,
)
from study.enrolment.accounts import issue_login_link
from study.models import Arm, Trial
from study.trials.services import save_draft
from tests.ide_bridge.workspace.workspace_helpers import (
    assigned,
    efficient,
    first_trial,
    opened,
    post,
    starter,
    url,
)
from tests.study.helpers import grading_queued, journey_study

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]


# --- Opening the workspace --------------------------------------------------------------------
def test_opening_the_workspace_offers_the_start_and_starting_shows_the_files() -> None:
    client, participant = assigned(journey_study())
    trial = first_trial(participant)
    assert client.get("/study/journey/")["Location"] == url(trial)
    ready = client.get(url(trial))
    assert ready.status_code == 200
    assert f'action="{url(trial, "start")}"' in ready.content.decode()
    trial.refresh_from_db()
    assert trial.status == Trial.Status.PENDING  # looking at the page starts no clock
    assert client.get(url(trial, "start")).status_code == 405
    assert client.post(url(trial, "start"))["Location"] == url(trial)
    page = client.get(url(trial))
    assert page.status_code == 200
    html = page.content.decode()
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE
    assert trial.deadline is not None
    files = get_instance(trial.template_slug, trial.seed).participant_files
    for name in files:
        assert f'data-file="{name}"' in html, name
    assert 'id="ai-panel"' in html
    assert "vendor/monaco/vs/loader.js" in html
    assert 'data-monaco-vs="/static/vendor/monaco/vs"' in html
    assert "js/telemetry.js" in html
    assert 'name="csrf-token"' in html
    assert 'id="workspace-files"' in html
    assert 'id="workspace-state"' in html
    assert "<h1" in html
    assert "task-readme" in html
    token = re.search(r'data-telemetry-token="([^"]+)"', html)
    assert token is not None
    assert token_opens(trial, token.group(1))  # telemetry's beacon token
    # Reopening (a second tab) or starting again neither restarts the clock nor changes the
    # token the first tab holds.
    deadline = trial.deadline
    assert client.post(url(trial, "start"))["Location"] == url(trial)
    again = re.search(r'data-telemetry-token="([^"]+)"', client.get(url(trial)).content.decode())
    assert again is not None
    assert again.group(1) == token.group(1)
    trial.refresh_from_db()
    assert trial.deadline == deadline


def test_ai_script_is_loaded_only_when_the_arm_has_an_assistant() -> None:
    client, _, trial = opened(ai_mode=Arm.AIMode.NONE)
    html = client.get(url(trial)).content.decode()
    assert "js/ai.js" not in html
    assert 'data-ai-mode="none"' in html
    client, _, trial = opened(ai_mode=Arm.AIMode.CHAT)
    html = client.get(url(trial)).content.decode()
    assert "js/ai.js" in html
    assert 'data-ai-mode="chat"' in html


def test_feedback_only_arm_makes_the_editor_read_only() -> None:
    client, _, trial = opened(ai_mode=Arm.AIMode.FEEDBACK)
    html = client.get(url(trial)).content.decode()
    assert 'data-read-only="true"' in html
    assert client.get(url(trial, "state")).json()["read_only"] is True
    # The server enforces it too: code typed around the assistant is refused ...
    refused = post(client, url(trial, "autosave"), {"code": "x = 1\n"})
    assert refused.status_code == 403
    assert "only through the assistant" in refused.json()["error"]
    # ... while saving what the assistant produced (the current code) is accepted.
    current = client.get(url(trial, "state")).json()["files"]["solution.py"]
    assert post(client, url(trial, "autosave"), {"code": current}).status_code == 200


def test_a_trial_that_is_not_the_current_step_redirects_to_the_study() -> None:
    client, participant = assigned(journey_study())
    second = participant.trials.order_by("period")[1]
    response = client.get(url(second))
    assert response.status_code == 302
    assert response["Location"] == "/study/journey/"
    second.refresh_from_db()
    assert second.status == Trial.Status.PENDING


def test_codespaces_arm_gets_a_refusal_and_the_trial_does_not_start() -> None:
    study = journey_study()
    Arm.objects.filter(study=study).update(ide=Arm.IDE.CODESPACES)
    client, participant = assigned(study)
    trial = first_trial(participant)
    response = client.get(url(trial))
    assert response.status_code == 503
    assert "Codespaces trials are not available on this installation" in response.content.decode()
    client.post(url(trial, "start"))
    trial.refresh_from_db()
    assert trial.status == Trial.Status.PENDING


def test_environment_registry() -> None:
    environment = get_environment("browser")
    assert isinstance(environment, BrowserEnvironment)
    with pytest.raises(EnvironmentUnavailable, match="Codespaces trials are not available"):
        get_environment("codespaces")
    with pytest.raises(EnvironmentUnavailable):
        get_environment("emacs")
    _, _, trial = opened()
    assert environment.launch_url(trial) == url(trial)
    assert environment.collect(trial) == {"solution.py": starter(trial)}
    save_draft(trial, {"solution.py": "print(1)\n"}, timezone.now())
    trial.refresh_from_db()
    assert environment.collect(trial) == {"solution.py": "print(1)\n"}


# --- Autosave and state -----------------------------------------------------------------------
def test_autosave_then_state_restores_the_code_on_reload_and_another_device() -> None:
    client, participant, trial = opened()
    state = client.get(url(trial, "state")).json()
    assert state["files"]["solution.py"] == starter(trial)
    assert state["saved_at"] is None
    assert state["status"] == "active"
    response = post(client, url(trial, "autosave"), {"code": "def f():\n    return 42\n"})
    assert response.status_code == 200
    assert response.json()["saved_at"]
    state = client.get(url(trial, "state")).json()
    assert state["files"]["solution.py"] == "def f():\n    return 42\n"
    assert state["saved_at"] == response.json()["saved_at"]
    other = Client()
    other.post(issue_login_link(participant))
    again = other.get(url(trial, "state")).json()
    assert again["files"]["solution.py"] == state["files"]["solution.py"]
    assert again["deadline"] == state["deadline"]
    assert "def f():" in other.get(url(trial)).content.decode()


def test_close_before_the_deadline_changes_nothing() -> None:
    client, _, trial = opened()
    state = post(client, url(trial, "close"), {}).json()
    assert state["status"] == "active"
    assert state["closed"] is False


def test_close_past_the_deadline_submits_the_last_saved_code() -> None:
    client, _, trial = opened()
    post(client, url(trial, "autosave"), {"code": "x = 1\n"})
    Trial.objects.filter(pk=trial.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    assert client.get(url(trial, "state")).json()["status"] == "active"  # GET only reads
    with grading_queued():
        state = post(client, url(trial, "close"), {}).json()
    assert state["status"] == "expired"
    assert state["closed"] is True
    trial.refresh_from_db()
    assert trial.submission is not None
    assert trial.submission.files == {"solution.py": "x = 1\n"}


def test_a_closed_trial_refuses_changes_with_409_and_shows_its_grading() -> None:
    client, _, trial = opened()
    with grading_queued():
        assert post(client, url(trial, "submit"), {"code": "x = 1\n"}).status_code == 200
        response = post(client, url(trial, "autosave"), {"code": "x = 2\n"})
        assert response.status_code == 409
        assert response.json()["error"]
        assert post(client, url(trial, "run"), {"code": "x = 2\n"}).status_code == 409
        again = post(client, url(trial, "submit"), {"code": "x = 2\n"})
    assert again.status_code == 409
    assert "already been submitted" in again.json()["error"]
    page = client.get(url(trial))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-closed="true"' in html
    assert 'id="grading-bar"' in html
    assert f"/study/trials/{trial.pk}/status/" in html
    # The report is the server's htmx fragment (study.results), loaded once it is released.
    urls = re.search(r'<script id="workspace-urls" type="application/json">(.*?)</script>', html)
    assert urls is not None
    assert f'"report": "/study/results/trials/{trial.pk}/report/fragment/"' in urls.group(1)
    assert html.index("js/common.js") < html.index("js/workspace.js")
    assert html.index("vendor/htmx/htmx.min.js") < html.index("js/common.js")


# --- Submit -----------------------------------------------------------------------------------
def test_submit_stores_the_editor_code_and_queues_grading() -> None:
    client, _, trial = opened()
    code = efficient(trial)
    with grading_queued():
        response = post(client, url(trial, "submit"), {"code": code})
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "submitted"
    assert body["status_url"] == f"/study/trials/{trial.pk}/status/"
    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED
    assert trial.draft_files == {"solution.py": code}
    assert trial.submission is not None
    assert trial.submission.files == {"solution.py": code}
    assert client.get(body["status_url"]).json()["grading"]["status"] == "queued"
    # Completion time will be capped at the arm's limit (PAR-N), not at a fixed hour.
    assert trial.evaluation is not None
    assert trial.evaluation.time_limit_s == trial.arm.time_limit_min * 60


@pytest.mark.timeout(600)
@pytest.mark.usefixtures("bwrap")
def test_a_solution_hiding_its_work_in_a_child_process_fails_end_to_end() -> None:
    # Issue 10 §1 through the web IDE: submitted from the editor, graded by the worker task
    # (eager here) in the real sandbox; the forked child is refused, the report says how runs
    # were measured, and the participant is never told the solution passed.
    from tests.evaluation.test_hostile_grading import forked_naive

    client, _, trial = opened()
    files = forked_naive(get_instance(trial.template_slug, trial.seed))
    response = post(client, url(trial, "submit"), {"files": files})
    assert response.status_code == 200, response.content
    trial.refresh_from_db()
    assert trial.submission is not None
    evaluation = trial.submission.evaluations.get()
    report = evaluation.report
    assert report is not None, evaluation.status
    assert report["overall_pass"] is False
    assert report["sandbox"]["accounting"] in ("cgroup-v1", "cgroup-v2")
    functional = [t for t in report["tests"] if t["kind"] == "functional"]
    assert {t["verdict"] for t in functional} == {"RE"}
    assert "BlockingIOError" in functional[0]["message"]
