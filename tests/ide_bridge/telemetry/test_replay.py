"""Researcher replay: the page and its data for researchers on the trial's study only, and
data.json is enough to rebuild the code at every moment (checked against the saved draft)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ide_bridge.telemetry.protocol import CATEGORIES
from ide_bridge.telemetry.services import ingest
from study.models import Trial
from study.trials.services import save_draft
from tests.factories import ResearcherFactory
from tests.ide_bridge.telemetry_helpers import TS0, apply_edit, started_trial, starter_code
from tests.ide_bridge.workspace.workspace_helpers import on_project, project_starter

pytestmark = pytest.mark.django_db


def researcher_on(trial: Trial) -> Client:
    researcher = ResearcherFactory.create()
    trial.participant.study.researchers.add(researcher)
    client = Client()
    client.force_login(researcher)
    return client


def random_session(code: str, rng: random.Random, n: int) -> tuple[list[dict[str, Any]], str]:
    """``n`` events as the browser would record them: edits (some multi-cursor, some undo-like
    deletions), selections, a run, an AI suggestion, a paste, a checkpoint midway."""
    out: list[dict[str, Any]] = []

    def add(kind: str, **data: Any) -> None:
        out.append({"seq": len(out) + 1, "ts": TS0 + 700 * len(out), "kind": kind, "data": data})

    for i in range(n):
        roll = rng.random()
        if roll < 0.6:
            changes = []
            cuts = sorted(rng.sample(range(len(code) + 1), k=min(2, len(code) + 1)))
            for offset in reversed(cuts[: rng.choice((1, 2))]):  # non-overlapping, pre-edit offsets
                length = rng.randint(0, min(5, len(code) - offset))
                changes.append(
                    {
                        "rangeOffset": offset,
                        "rangeLength": length,
                        "text": rng.choice(["x", "\n", "", "def f():\n    return 1\n"]),
                    }
                )
            code = apply_edit(code, changes)
            add(
                "edit",
                changes=changes,
                versionId=i + 2,
                isUndoing=False,
                isRedoing=False,
                isFlush=False,
            )
        elif roll < 0.75:
            add("selection", offset=rng.randint(0, len(code)), length=0, line=1, column=1)
        elif roll < 0.8:
            add("run_tests", passed=1, failed=2, errors=0, total=3, duration_ms=900)
        elif roll < 0.85:
            add("suggestion_shown", request_id=f"r{i}", length=12)
        elif roll < 0.9:
            add("paste", length=12, lines=1, source="editor")
        if i == n // 2:
            add("checkpoint", code=code, versionId=i + 2, reason="events")
    add("submit", versionId=n + 2, length=len(code))
    return out, code


def rebuild_files(data: dict[str, Any], upto_seq: int | None = None) -> dict[str, str]:
    """Every editable file after the events up to ``upto_seq``, as replay.js rebuilds them:
    an event is about its ``file``, else the default (first editable) file."""
    files: dict[str, str] = dict(data["starter_files"])
    for e in data["events"]:
        if upto_seq is not None and e["seq"] > upto_seq:
            break
        path = e["data"].get("file") or data["default_file"]
        if e["kind"] == "edit":
            files[path] = apply_edit(files[path], e["data"]["changes"])
        elif e["kind"] in ("checkpoint", "code_reset"):
            files[path] = e["data"]["code"]
    return files


def rebuild(data: dict[str, Any], upto_seq: int | None = None) -> str:
    return rebuild_files(data, upto_seq)[data["default_file"]]


def test_researcher_on_the_study_sees_the_replay_page() -> None:
    _, _, trial = started_trial()
    page = researcher_on(trial).get(f"/ide/telemetry/replay/{trial.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/ide/telemetry/replay/{trial.pk}/data.json" in html
    assert 'type="range"' in html
    assert "js/replay.js" in html


def test_other_researchers_get_404_and_participants_403() -> None:
    client, _, trial = started_trial()
    outsider = Client()
    outsider.force_login(ResearcherFactory.create())
    for who, status in ((outsider, 404), (client, 403)):
        assert who.get(f"/ide/telemetry/replay/{trial.pk}/").status_code == status
        assert who.get(f"/ide/telemetry/replay/{trial.pk}/data.json").status_code == status
    anonymous = Client().get(f"/ide/telemetry/replay/{trial.pk}/")
    assert anonymous.status_code == 302  # to the login page


def test_data_json_rebuilds_the_final_code_equal_to_the_draft() -> None:
    _, _, trial = started_trial()
    items, final = random_session(starter_code(trial), random.Random(11), 300)
    for start in range(0, len(items), 40):
        ingest(trial, items[start : start + 40])
    save_draft(trial, {"solution.py": final}, timezone.now())

    response = researcher_on(trial).get(f"/ide/telemetry/replay/{trial.pk}/data.json")
    assert response.status_code == 200
    data = response.json()
    assert data["starter_files"] == {"solution.py": starter_code(trial)}
    assert data["default_file"] == "solution.py"
    assert [e["seq"] for e in data["events"]] == list(range(1, len(items) + 1))
    assert rebuild(data) == final == data["final_files"]["solution.py"]
    # Every moment can be rebuilt; the midway checkpoint agrees with the deltas before it.
    checkpoint = next(e for e in data["events"] if e["kind"] == "checkpoint")
    assert rebuild(data, checkpoint["seq"] - 1) == checkpoint["data"]["code"]
    # Times are relative to the trial start, in order; timeline categories come along.
    times = [e["t_ms"] for e in data["events"]]
    assert times == sorted(times)
    assert data["categories"] == CATEGORIES
    assert {"run_tests", "suggestion_shown", "paste", "submit"} <= {
        e["kind"] for e in data["events"]
    }


def test_replay_of_a_trial_without_events_is_the_starter_code() -> None:
    _, _, trial = started_trial()
    data = researcher_on(trial).get(f"/ide/telemetry/replay/{trial.pk}/data.json").json()
    assert data["events"] == []
    assert rebuild(data) == starter_code(trial)


def test_a_project_replays_every_file_from_the_events_that_name_it() -> None:
    _, _, trial = started_trial()
    trial = on_project(trial)
    starter = project_starter(trial)
    bills, tariffs = "metering/bills.py", "metering/tariffs.py"
    final = {
        bills: starter[bills] + "# priced\n",
        tariffs: "# rewritten\n" + starter[tariffs],
    }
    events = [
        {"kind": "task_load", "data": {"file": "metering/__init__.py", "files": 3}},
        {
            "kind": "edit",
            "data": {
                "file": bills,
                "changes": [
                    {"rangeOffset": len(starter[bills]), "rangeLength": 0, "text": "# priced\n"}
                ],
            },
        },
        {"kind": "selection", "data": {"file": tariffs, "offset": 0, "length": 0}},
        {
            "kind": "edit",
            "data": {
                "file": tariffs,
                "changes": [{"rangeOffset": 0, "rangeLength": 0, "text": "# rewritten\n"}],
            },
        },
        {"kind": "checkpoint", "data": {"file": tariffs, "code": final[tariffs]}},
    ]
    items = [{"seq": i + 1, "ts": TS0 + 500 * i, **e} for i, e in enumerate(events)]
    ack = ingest(trial, items)
    assert ack.rejected == 0
    assert ack.dropped_keys == 0  # "file" is a known key of these kinds
    save_draft(trial, final, timezone.now())

    data = researcher_on(trial).get(f"/ide/telemetry/replay/{trial.pk}/data.json").json()
    assert data["starter_files"] == starter
    assert data["default_file"] == bills  # the entry point's file
    assert rebuild_files(data) == starter | final == data["final_files"]
    assert rebuild_files(data, 2) == starter | {bills: final[bills]}  # one file at a time
