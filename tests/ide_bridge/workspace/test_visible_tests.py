"""Visible tests run in the real sandbox from the workspace, one run at a time per trial, and
nothing hidden ever reaches a workspace response."""

from __future__ import annotations

import pytest
from django.core.cache import cache as django_cache

from evaluation.instances import get_instance
from ide_bridge.workspace.services import run_lock_key
from tests.ide_bridge.workspace.workspace_helpers import (
    efficient,
    opened,
    post,
    starter,
    url,
)
from tests.study.helpers import grading_queued

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]


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
    assert trial.draft_files == {"solution.py": starter(trial)}  # a run autosaves first


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
