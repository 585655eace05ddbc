"""The browser workspace over HTTP: opening starts the trial, autosave and state restore the
code, visible tests run in the real sandbox, submit is final, and nothing hidden leaks."""

from __future__ import annotations

import itertools
import os
import random
import re
import types
from datetime import timedelta
from functools import cache
from typing import Any

import pytest
from django.core.cache import cache as django_cache
from django.test import Client
from django.utils import timezone

from evaluation.instances import get_instance
from ide_bridge.telemetry.services import token_opens
from ide_bridge.workspace.environments import (
    BrowserEnvironment,
    EnvironmentUnavailable,
    get_environment,
)
from ide_bridge.workspace.services import run_lock_key
from study.demo.answers import answers_for
from study.enrolment.accounts import issue_login_link
from study.enrolment.services import give_consent, submit_screening
from study.models import Arm, Participant, Study, Trial
from study.trials.services import MAX_DRAFT_BYTES, save_draft
from tests.study.helpers import grading_queued, journey_study, logged_in

pytestmark = pytest.mark.django_db(transaction=True)


# --- Helpers ----------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Personal-link logins are rate-limited per address in the cache; every test starts clean."""
    django_cache.clear()


@pytest.fixture(autouse=True)
def fixed_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same plan and instance seeds in every test: rendering an instance takes seconds and
    is cached per (template, seed), so repeated seeds keep this module fast and deterministic."""
    counter = itertools.count(1)
    monkeypatch.setattr(
        "study.assignment.services.secrets",
        types.SimpleNamespace(randbelow=lambda n: next(counter) % n),
    )


def assigned(study: Study, client: Client | None = None) -> tuple[Client, Participant]:
    """A participant who followed their link, consented and was screened (stage ASSIGNED)."""
    client_, participant = logged_in(study)
    form = study.consent_form
    assert form is not None
    assert study.screening is not None
    give_consent(
        participant,
        agree=True,
        checkboxes={box["id"]: True for box in form.checkboxes},
        typed_name="Test Participant",
    )
    participant.refresh_from_db()
    answers = answers_for(study.screening, random.Random(3), track_preference="SDE")
    submit_screening(participant, answers)
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.ASSIGNED
    return client or client_, participant


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
    return get_instance(trial.template_slug, trial.seed).references["efficient"]


@cache
def _bwrap_problem() -> str:
    from evaluation.sandbox import SandboxUnavailable, get_sandbox

    try:
        works, detail = get_sandbox("bwrap").self_test()
    except SandboxUnavailable as exc:
        return str(exc)
    return "" if works else detail


@pytest.fixture
def bwrap(settings: Any) -> None:
    """The real bubblewrap sandbox, or a skip (a failure under REQUIRE_SERVICES=1)."""
    problem = _bwrap_problem()
    if problem:
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(f"the bwrap sandbox is required (REQUIRE_SERVICES=1): {problem}")
        pytest.skip(f"the bwrap sandbox cannot run here: {problem}")
    settings.EVALUATION_SANDBOX_BACKEND = "bwrap"


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
    current = client.get(url(trial, "state")).json()["code"]
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
    assert environment.collect(trial) == {"solution.py": starter(trial).encode()}
    save_draft(trial, "print(1)\n", timezone.now())
    trial.refresh_from_db()
    assert environment.collect(trial) == {"solution.py": b"print(1)\n"}


# --- Autosave and state -----------------------------------------------------------------------
def test_autosave_then_state_restores_the_code_on_reload_and_another_device() -> None:
    client, participant, trial = opened()
    state = client.get(url(trial, "state")).json()
    assert state["code"] == starter(trial)
    assert state["saved_at"] is None
    assert state["status"] == "active"
    response = post(client, url(trial, "autosave"), {"code": "def f():\n    return 42\n"})
    assert response.status_code == 200
    assert response.json()["saved_at"]
    state = client.get(url(trial, "state")).json()
    assert state["code"] == "def f():\n    return 42\n"
    assert state["saved_at"] == response.json()["saved_at"]
    other = Client()
    other.post(issue_login_link(participant))
    again = other.get(url(trial, "state")).json()
    assert again["code"] == state["code"]
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
    assert bytes(trial.submission.source) == b"x = 1\n"


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
    assert trial.draft_code == code
    assert trial.submission is not None
    assert bytes(trial.submission.source) == code.encode()
    assert client.get(body["status_url"]).json()["grading"]["status"] == "queued"


# --- Visible tests in the real sandbox --------------------------------------------------------
@pytest.mark.usefixtures("bwrap")
def test_running_the_starter_shows_failing_unittest_output() -> None:
    client, _, trial = opened()
    response = post(client, url(trial, "run"), {"code": starter(trial)})
    assert response.status_code == 200
    result = response.json()
    assert result["ok"] is False
    assert result["status"] == "failed"
    assert result["tests_run"] > 0
    assert result["failures"] + result["errors"] > 0
    assert "NotImplementedError" in result["output"]
    assert "Ran " in result["output"]
    trial.refresh_from_db()
    assert trial.draft_code == starter(trial)  # a run autosaves first


@pytest.mark.usefixtures("bwrap")
def test_running_the_efficient_reference_passes_the_visible_tests() -> None:
    client, _, trial = opened()
    result = post(client, url(trial, "run"), {"code": efficient(trial)}).json()
    assert result["status"] == "passed", result["output"]
    assert result["ok"] is True
    assert result["failures"] == result["errors"] == 0
    assert "OK" in result["output"]


@pytest.mark.usefixtures("bwrap")
def test_a_syntax_error_is_reported_as_an_error() -> None:
    client, _, trial = opened()
    result = post(client, url(trial, "run"), {"code": "def broken(:\n"}).json()
    assert result["status"] == "error"
    assert "SyntaxError" in result["output"]


def test_a_second_run_while_one_is_going_gets_429() -> None:
    client, _, trial = opened()
    django_cache.add(run_lock_key(trial.pk), 1, timeout=30)
    try:
        response = post(client, url(trial, "run"), {"code": "x = 1\n"})
    finally:
        django_cache.delete(run_lock_key(trial.pk))
    assert response.status_code == 429
    assert "still going" in response.json()["error"]


@pytest.mark.usefixtures("bwrap")
def test_hidden_test_names_never_appear_in_any_workspace_response() -> None:
    client, _, trial = opened()
    instance = get_instance(trial.template_slug, trial.seed)
    shown = "\n".join(instance.participant_files.values())
    hidden = [c.name for c in instance.hidden_cases if c.name not in shown]
    assert hidden
    bodies = [
        client.get(url(trial)).content.decode(),
        client.get(url(trial, "state")).content.decode(),
        post(client, url(trial, "run"), {"code": starter(trial)}).content.decode(),
        post(client, url(trial, "run"), {"code": efficient(trial)}).content.decode(),
    ]
    with grading_queued():
        bodies.append(
            post(client, url(trial, "submit"), {"code": efficient(trial)}).content.decode()
        )
    bodies.append(client.get(url(trial)).content.decode())
    for body in bodies:
        for name in hidden:
            assert name not in body, name
        assert "references" not in body
        assert "def generate" not in body


# --- Errors: bad bodies, CSRF, sign-in, other people's trials ---------------------------------
@pytest.mark.parametrize("endpoint", ["autosave", "run", "submit"])
def test_bad_json_is_a_400_with_a_message(endpoint: str) -> None:
    client, _, trial = opened()
    for body in ("{not json", '{"code": 5}', '["x"]', ""):
        response = client.post(url(trial, endpoint), body, content_type="application/json")
        assert response.status_code == 400, body
        assert response.json()["error"]
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE


def test_code_over_the_size_limit_is_a_413() -> None:
    client, _, trial = opened()
    huge = "#" * (MAX_DRAFT_BYTES + 1)
    for endpoint in ("autosave", "run", "submit"):
        response = post(client, url(trial, endpoint), {"code": huge})
        assert response.status_code == 413, endpoint
        assert "KiB" in response.json()["error"]


def test_csrf_token_from_the_page_is_required() -> None:
    study = journey_study()
    client, participant = assigned(study, Client(enforce_csrf_checks=True))
    client.force_login(participant.user)
    trial = first_trial(participant)
    ready = client.get(url(trial)).content.decode()
    form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', ready)
    assert form_token
    assert client.post(url(trial, "start")).status_code == 403
    client.post(url(trial, "start"), {"csrfmiddlewaretoken": form_token.group(1)})
    html = client.get(url(trial)).content.decode()
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match
    body = {"code": "x = 1\n"}
    for endpoint in ("autosave", "run", "submit"):
        assert post(client, url(trial, endpoint), body).status_code == 403, endpoint
    response = post(client, url(trial, "autosave"), body, HTTP_X_CSRFTOKEN=match.group(1))
    assert response.status_code == 200


def test_signed_out_requests_get_401_json_and_the_page_redirects() -> None:
    _, _, trial = opened()
    anonymous = Client()
    assert anonymous.get(url(trial)).status_code == 302
    assert anonymous.get(url(trial, "state")).status_code == 401
    response = post(anonymous, url(trial, "autosave"), {"code": "x"})
    assert response.status_code == 401
    assert "signed out" in response.json()["error"]
    assert post(anonymous, url(trial, "run"), {"code": "x"}).status_code == 401


def test_another_participant_gets_404_from_every_endpoint() -> None:
    study = journey_study()
    client, participant = assigned(study)
    other, _ = assigned(study)
    trial = first_trial(participant)
    client.post(url(trial, "start"))
    post(client, url(trial, "autosave"), {"code": "mine = 1\n"})
    assert other.get(url(trial)).status_code == 404
    assert other.post(url(trial, "start")).status_code == 404
    assert other.get(url(trial, "state")).status_code == 404
    for endpoint in ("autosave", "run", "submit"):
        response = post(other, url(trial, endpoint), {"code": "theirs = 1\n"})
        assert response.status_code == 404, endpoint
        assert response.json() == {"error": "Not found."}
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE
    assert trial.draft_code == "mine = 1\n"
    # A trial id that does not exist looks exactly the same.
    assert post(other, "/ide/workspace/999999/autosave", {"code": ""}).json() == {
        "error": "Not found."
    }


def test_a_researcher_without_a_participant_record_gets_404(researcher: Any) -> None:
    _, _, trial = opened()
    client = Client()
    client.force_login(researcher)
    assert client.get(url(trial)).status_code == 404
    assert client.get(url(trial, "state")).status_code == 404
