"""``manage.py simulate_assignment``: JSON summary, equal split, and nothing left behind."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from study.models import Assignment, Participant, Study, TaskPoolEntry, User

pytestmark = pytest.mark.django_db

REFERENCE = ["--tasks", "9", "--participants", "45", "--dropout", "0.15", "--seed", "1"]


def run(*args: str) -> str:
    out = StringIO()
    call_command("simulate_assignment", *args, stdout=out)
    return out.getvalue()


def test_reference_simulation_prints_an_equal_split_as_json():
    users_before = User.objects.count()
    result = json.loads(run(*REFERENCE, "--json"))

    for key in ("task_condition_counts", "sequence_counts", "position_counts"):
        assert key in result
    assert result["completed"] == 45
    assert result["dropouts"] > 0
    assert result["assignments"] == 45 + result["dropouts"]
    assert result["equal_split"] is True
    assert len(result["task_condition_counts"]) == 9
    assert all(v == {"A": 10, "B": 10} for v in result["task_condition_counts"].values())
    assert sum(result["sequence_counts"].values()) == 45
    assert max(result["sequence_counts"].values()) - min(result["sequence_counts"].values()) <= 1
    for by_position in result["position_counts"].values():
        assert sum(by_position.values()) == 20
    # Everything ran inside a rolled-back transaction.
    assert not Study.objects.exists()
    assert not TaskPoolEntry.objects.exists()
    assert not Participant.objects.exists()
    assert not Assignment.objects.exists()
    assert User.objects.count() == users_before


def test_the_same_seed_gives_the_same_simulation():
    first = json.loads(run(*REFERENCE, "--json"))
    assert json.loads(run(*REFERENCE, "--json")) == first


def test_without_json_a_table_is_printed():
    text = run("--tasks", "6", "--participants", "12", "--dropout", "0.2", "--seed", "3")
    assert "12 completed" in text
    assert "sim-task-06" in text
    assert "AI/no-AI split per task: equal" in text


def test_tracks_share_the_pool_and_each_track_needs_enough_tasks():
    result = json.loads(run("--tasks", "12", "--tracks", "3", "--participants", "12", "--json"))
    assert sorted(result["pool_by_track"]) == ["DS", "MLE", "SDE"]
    assert result["completed"] == 12
    with pytest.raises(CommandError, match="needs 4 different tasks"):
        run("--tasks", "9", "--tracks", "3", "--participants", "6")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tracks", "4"], "--tracks must be between 1 and 3"),
        (["--dropout", "1"], "--dropout must be"),
        (["--participants", "0"], "must be positive"),
    ],
)
def test_bad_flags_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        run(*args)
