"""Refusals of the workspace endpoints: bad bodies, sizes, CSRF, signed-out requests and other
people's trials (404, like a missing one)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from evaluation.submissions import MAX_FILE_BYTES
from study.models import Trial
from tests.ide_bridge.workspace.workspace_helpers import (
    assigned,
    first_trial,
    opened,
    post,
    url,
)
from tests.study.helpers import journey_study

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]


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


@pytest.mark.parametrize("depth", [33, 50_000])
def test_deeply_nested_json_is_a_400_not_a_crash(depth: int) -> None:
    client, _, trial = opened()
    body = '{"code": "x", "extra": ' + "[" * depth + "]" * depth + "}"
    for endpoint in ("autosave", "run", "submit"):
        response = client.post(url(trial, endpoint), body, content_type="application/json")
        assert response.status_code == 400, endpoint
        assert response.json() == {"error": "The request body is not valid JSON."}
    trial.refresh_from_db()
    assert trial.status == Trial.Status.ACTIVE


def test_code_over_the_size_limit_is_a_413() -> None:
    client, _, trial = opened()
    huge = "#" * (MAX_FILE_BYTES + 1)
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
    assert trial.draft_files == {"solution.py": "mine = 1\n"}
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
