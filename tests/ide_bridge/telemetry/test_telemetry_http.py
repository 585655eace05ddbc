"""POST /ide/telemetry/<id>/events: the bearer-token batch endpoint for non-browser clients and
the pagehide beacon. Same batches, same acks and the same idempotence as the WebSocket."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ide_bridge.models import TrialAccess, TrialEvent
from ide_bridge.telemetry.protocol import MAX_BATCH_BYTES, MAX_BATCH_EVENTS
from ide_bridge.telemetry.services import issue_trial_token, page_token, token_opens
from study.models import Participant, Trial
from tests.ide_bridge.telemetry_helpers import batch, event, events, started_trial

pytestmark = pytest.mark.django_db


def post(trial_id: int, body: Any, token: str | None = None) -> Any:
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return Client().post(
        reverse("ide_bridge:events", args=[trial_id]),
        data,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"} if token else None,
    )


@pytest.fixture
def trial_and_token() -> tuple[Trial, str]:
    _, _, trial = started_trial()
    return trial, issue_trial_token(trial)


def test_the_url_is_the_documented_one(trial_and_token: tuple[Trial, str]) -> None:
    trial, _ = trial_and_token
    assert reverse("ide_bridge:events", args=[trial.pk]) == f"/ide/telemetry/{trial.pk}/events"


def test_only_the_hash_of_the_token_is_stored(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    access = TrialAccess.objects.get(trial=trial)
    assert token not in access.token_sha256
    assert len(access.token_sha256) == 64
    assert token_opens(trial, token)
    assert not token_opens(trial, token + "x")


def test_missing_token_is_401_and_a_wrong_one_is_404(trial_and_token: tuple[Trial, str]) -> None:
    trial, _ = trial_and_token
    missing = post(trial.pk, batch(events(1, 2)))
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    wrong = post(trial.pk, batch(events(1, 2)), token="not-the-token")
    unknown = post(trial.pk + 1000, batch(events(1, 2)), token="not-the-token")
    assert wrong.status_code == unknown.status_code == 404
    assert wrong.json() == unknown.json()  # a token holder cannot tell which ids exist
    assert not TrialEvent.objects.exists()


def test_a_token_opens_only_its_own_trial(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    _, _, other = started_trial(study=trial.participant.study)
    issue_trial_token(other)
    assert post(other.pk, batch(events(1, 2)), token=token).status_code == 404
    assert post(other.pk, batch(events(1, 2)), token=page_token(trial)).status_code == 404


def test_unknown_trial_is_404(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    assert post(trial.pk + 1000, batch(events(1, 2)), token=token).status_code == 404


def test_batch_is_acknowledged_and_a_resend_is_not_stored_twice(
    trial_and_token: tuple[Trial, str],
) -> None:
    trial, token = trial_and_token
    first = post(trial.pk, batch(events(1, 30)), token=token)
    assert first.status_code == 200
    assert (first.json()["seq"], first.json()["stored"]) == (30, 30)
    again = post(trial.pk, batch(events(1, 30)), token=token)
    assert again.status_code == 200
    assert (again.json()["seq"], again.json()["stored"], again.json()["duplicates"]) == (30, 0, 30)
    assert TrialEvent.objects.filter(trial=trial).count() == 30


def test_beacon_sends_the_token_in_the_query_string(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    response = Client().post(
        reverse("ide_bridge:events", args=[trial.pk]) + f"?token={token}",
        json.dumps(batch(events(1, 3))),
        content_type="text/plain;charset=UTF-8",  # what navigator.sendBeacon sends here
    )
    assert response.status_code == 200
    assert response.json()["seq"] == 3


def test_gap_keeps_the_ack_at_the_prefix(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    assert post(trial.pk, batch(events(3, 5)), token=token).json()["seq"] == 0
    assert post(trial.pk, batch(events(1, 2)), token=token).json()["seq"] == 5


def test_bad_json_and_bad_batches_are_400(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    assert post(trial.pk, "{nope", token=token).status_code == 400
    assert post(trial.pk, [1, 2], token=token).status_code == 400
    assert post(trial.pk, {"events": "x"}, token=token).status_code == 400
    no_seq = post(trial.pk, batch([{"ts": 1, "kind": "idle"}]), token=token)
    assert (no_seq.status_code, no_seq.json()["code"]) == (400, "bad_seq")


def test_too_many_events_or_bytes_is_413(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    many = post(trial.pk, batch(events(1, MAX_BATCH_EVENTS + 1)), token=token)
    assert (many.status_code, many.json()["code"]) == (413, "too_many_events")
    huge = [event(1, "checkpoint", code="x" * (MAX_BATCH_BYTES // 2)) for _ in range(3)]
    assert post(trial.pk, batch(huge), token=token).status_code == 413
    assert not TrialEvent.objects.exists()


def test_closed_trial_is_409_after_the_grace(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    Trial.objects.filter(pk=trial.pk).update(
        status=Trial.Status.SUBMITTED, ended_at=timezone.now() - timedelta(minutes=3)
    )
    assert post(trial.pk, batch(events(1, 2)), token=token).status_code == 200  # in the grace
    Trial.objects.filter(pk=trial.pk).update(ended_at=timezone.now() - timedelta(hours=1))
    assert post(trial.pk, batch(events(3, 4)), token=token).status_code == 409


def test_reissuing_a_token_revokes_the_old_one(trial_and_token: tuple[Trial, str]) -> None:
    trial, old = trial_and_token
    new = issue_trial_token(trial)
    assert new != old
    assert post(trial.pk, batch(events(1, 1)), token=old).status_code == 404
    assert post(trial.pk, batch(events(1, 1)), token=new).status_code == 200
    assert TrialAccess.objects.filter(trial=trial).count() == 1


def test_only_post_is_allowed(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    url = reverse("ide_bridge:events", args=[trial.pk])
    assert Client().get(url, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 405


def test_no_events_are_stored_once_the_participant_withdrew(
    trial_and_token: tuple[Trial, str],
) -> None:
    trial, token = trial_and_token
    assert post(trial.pk, batch(events(1, 2)), token=token).status_code == 200
    Participant.objects.filter(pk=trial.participant_id).update(stage=Participant.Stage.WITHDRAWN)
    refused = post(trial.pk, batch(events(3, 4)), token=token)
    assert (refused.status_code, refused.json()["code"]) == (409, "trial_closed")
    assert TrialEvent.objects.filter(trial=trial).count() == 2


def test_deeply_nested_json_is_a_400(trial_and_token: tuple[Trial, str]) -> None:
    trial, token = trial_and_token
    body = '{"type": "batch", "events": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = Client().post(
        reverse("ide_bridge:events", args=[trial.pk]),
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "bad_json"
    assert not TrialEvent.objects.exists()
