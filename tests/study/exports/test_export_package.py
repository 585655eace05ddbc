"""Export packages built from the demo study (``demo_packages``): codebook coverage, manifest
hashes, the Frictionless description, and what a public package must never contain."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.db import connection

from ide_bridge.telemetry.services import CLOSED_GRACE
from study.demo.answers import FREE_TEXT
from study.exports.package import PackageResult, build_package, make_zip
from study.exports.pgcopy import copy_blocks
from study.exports.pseudonyms import export_key
from study.exports.registry import (
    SPAN_SLACK,
    Column,
    ExportContext,
    TableSpec,
    register_table,
    unregister_table,
)
from study.exports.scan import LeakDetected
from study.models import Study
from study.results import glmm
from tests.study.exports.demo_packages import (
    CODE_MARKER,
    EMAIL,
    ISO_TIMESTAMP,
    OUTPUT_MARKER,
    PROMPT_MARKER,
    PSEUDONYM,
    REPLY_MARKER,
    Built,
    files_of,
    package_text,
    read_csv,
    table,
)

# Marks the module's tests as database tests, so pytest-django sets up the test database
# that the module-scoped fixture writes to (unmarked items get no database at all).
pytestmark = pytest.mark.django_db


# --- Structure ---------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["public", "internal"])
def test_every_csv_column_has_exactly_one_codebook_row(built: Built, which: str) -> None:
    result: PackageResult = getattr(built, which)
    codebook = read_csv(result.out_dir / "codebook.csv")
    documented = Counter((row["table"], row["name"]) for row in codebook)
    assert all(n == 1 for n in documented.values())
    seen = set()
    for path in (result.out_dir / "data").glob("*.csv"):
        name = re.match(r"study-demo_description-([a-z0-9]+)_data\.csv$", path.name)
        assert name, path.name  # Psych-DS file name
        with path.open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle))
        for column in header:
            assert (name[1], column) in documented, f"{name[1]}.{column} has no codebook row"
            seen.add((name[1], column))
    assert seen == set(documented)  # and the codebook documents nothing else
    for row in codebook:
        assert row["identifier_class"] in {"direct", "quasi", "sensitive", "free_text", "none"}
        assert row["export_tier"] in ({"public"} if which == "public" else {"public", "internal"})
        assert row["description"]


@pytest.mark.parametrize("which", ["public", "internal", "deleted"])
def test_manifest_hashes_sizes_and_row_counts_verify(built: Built, which: str) -> None:
    result: PackageResult = getattr(built, which)
    manifest = json.loads((result.out_dir / "manifest.json").read_text())
    listed = {f["path"]: f for f in manifest["files"]}
    on_disk = {p.relative_to(result.out_dir).as_posix() for p in files_of(result)}
    assert set(listed) == on_disk - {"manifest.json"}
    for path, entry in listed.items():
        data = (result.out_dir / path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], path
        assert len(data) == entry["bytes"]
        if path.startswith("data/"):
            assert len(read_csv(result.out_dir / path)) == entry["rows"]
            table_name = path.split("_description-")[1].removesuffix("_data.csv")
            assert manifest["row_counts"][table_name] == entry["rows"]
    assert manifest["key_id"] == hashlib.sha256(export_key().secret).hexdigest()[:8]
    assert export_key().secret.decode() not in package_text(result)  # never the key itself
    assert manifest["options"]["scope"] == manifest["scope"] == f"demo:{manifest['profile']}"


def _check_value(field: dict[str, Any], value: str) -> None:
    if value == "":
        return
    kind = field["type"]
    if kind == "integer":
        int(value)
    elif kind == "number":
        float(value)
    elif kind == "boolean":
        assert value in ("true", "false"), (field["name"], value)
    elif kind == "object":
        assert isinstance(json.loads(value), dict)
    elif kind == "array":
        assert isinstance(json.loads(value), list)
    enum = field.get("constraints", {}).get("enum")
    if enum:
        assert value in enum, (field["name"], value, enum)


@pytest.mark.parametrize("which", ["public", "internal"])
def test_datapackage_lists_every_file_and_describes_the_data(built: Built, which: str) -> None:
    result: PackageResult = getattr(built, which)
    package = json.loads((result.out_dir / "datapackage.json").read_text())
    paths = {r["path"] for r in package["resources"]}
    on_disk = {p.relative_to(result.out_dir).as_posix() for p in files_of(result)}
    assert on_disk - {"datapackage.json"} <= paths
    for resource in package["resources"]:
        if not resource["path"].startswith("data/"):
            continue
        rows = read_csv(result.out_dir / resource["path"])
        fields = resource["schema"]["fields"]
        with (result.out_dir / resource["path"]).open(encoding="utf-8", newline="") as handle:
            assert next(csv.reader(handle)) == [f["name"] for f in fields]
        data = (result.out_dir / resource["path"]).read_bytes()
        assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
        for row in rows:
            for field in fields:
                _check_value(field, row[field["name"]])
        key = resource["schema"].get("primaryKey")
        if key:
            keys = [tuple(row[c] for c in key) for row in rows]
            assert len(keys) == len(set(keys)), resource["name"]


# --- What a public package must never contain -----------------------------------------------
def test_public_package_contains_no_vault_value_identifier_secret_or_free_text(
    built: Built,
) -> None:
    text = package_text(built.public) + package_text(built.deleted)
    assert built.vault_values
    assert built.usernames
    assert built.secrets
    for value in [*built.vault_values, *built.usernames, *built.internal_ids, *built.secrets]:
        assert value not in text, f"{value!r} leaked"
    for answer in FREE_TEXT:
        assert answer not in text
    for marker in (CODE_MARKER, OUTPUT_MARKER, PROMPT_MARKER, REPLY_MARKER, "demo-model-x"):
        assert marker not in text
    assert not ISO_TIMESTAMP.search(text)
    assert not EMAIL.search(text)  # no e-mail address of anyone, researchers included
    deid = json.loads((built.public.out_dir / "deid_report.json").read_text())
    assert deid["leak_scan"]["result"] == "no hits"
    assert deid["n_free_text_dropped"] > 0


def test_participants_appear_only_under_scoped_pseudonyms(built: Built) -> None:
    public = {r["participant_id"] for r in table(built.public, "participants")}
    internal = table(built.internal, "participants")
    assert all(PSEUDONYM.match(p) for p in public)
    for name in ("sessions", "taskattempts", "questionnaireitems", "scales", "events", "aiusage"):
        assert {r["participant_id"] for r in table(built.public, name)} <= public, name
    # The internal package uses another scope: its pseudonyms cannot be joined to the public.
    assert not public & {r["participant_id"] for r in internal}
    assert {r["username"] for r in internal} <= set(built.usernames)
    assert all(re.fullmatch(r"[0-9a-f]{16}", r["internal_id"]) for r in internal)


def test_k_anonymity_is_reported_and_holds_in_the_data(built: Built) -> None:
    deid = json.loads((built.public.out_dir / "deid_report.json").read_text())
    k = deid["k_anonymity"]
    qis = k["quasi_identifiers"]
    assert k["k_target"] == 5
    rows = table(built.public, "participants")
    classes = Counter(tuple(r[q] for q in qis) for r in rows)
    assert k["k_achieved"] == min(classes.values()) >= 5
    assert k["k_satisfied"] is True
    assert set(k["generalisation"]) == set(qis)
    readme = (built.public.out_dir / "README.md").read_text()
    assert f"achieved k = {k['k_achieved']}" in readme


def test_withdrawn_participant_is_kept_or_excluded_per_policy(built: Built) -> None:
    keep = json.loads((built.public.out_dir / "deid_report.json").read_text())
    assert keep["withdrawal_policy"] == "keep"
    assert (keep["n_withdrawn_kept"], keep["n_withdrawn_excluded"]) == (1, 0)
    statuses = {r["participant_id"]: r["status"] for r in table(built.public, "participants")}
    assert statuses[built.kept_pseudonym] == "withdrawn_data_retained"

    delete = json.loads((built.deleted.out_dir / "deid_report.json").read_text())
    assert delete["withdrawal_policy"] == "delete"
    # The earlier withdrawal was under "keep" (its tombstone says so); the new one is deleted.
    assert (delete["n_withdrawn_kept"], delete["n_withdrawn_excluded"]) == (1, 1)
    assert built.deleted_pseudonym not in package_text(built.deleted)
    assert built.deleted_pseudonym in package_text(built.public)
    assert delete["participants"]["n_included"] == keep["participants"]["n_included"] - 1


# --- Content ------------------------------------------------------------------------------------
def test_taskattempts_is_the_model_frame_with_missing_outcomes_while_grading(
    built: Built,
) -> None:
    rows = table(built.public, "taskattempts")
    by_participant = Counter(r["participant_id"] for r in rows)
    assert set(by_participant.values()) == {4}
    graded = [r for r in rows if r["grading_status"] == "done"]
    assert len(graded) == 1
    row = graded[0]
    assert (row["pass_all"], row["censored"], row["time_on_task_s"]) == ("false", "true", "3600")
    assert (row["tests_passed"], row["tests_total"], row["hidden_tests_total"]) == ("4", "5", "3")
    assert row["grader_version"].startswith("report-1.0;")
    queued = [r for r in rows if r["grading_status"] == "queued"]
    assert queued
    assert all(r["pass_all"] == "" and r["time_on_task_s"] == "" for r in queued)
    assert all(r["duration_s"] for r in queued)
    assert {r["condition"] for r in rows} == {"A", "B"}
    assert "started_at_utc" not in rows[0]
    assert "instance_seed" not in rows[0]
    codebook = {(r["table"], r["name"]): r for r in read_csv(built.public.out_dir / "codebook.csv")}
    assert "not graded" in codebook[("taskattempts", "pass_all")]["missing_values"]


def test_the_leak_scan_refuses_a_relative_time_outside_its_trials_span(
    built: Built, tmp_path: Path
) -> None:
    """Whatever a table's generator does, a public package never carries a relative time
    that gives away a trial's absolute start (here: minus its start in epoch ms)."""

    def rows(ctx: ExportContext) -> Iterator[tuple[Any, ...]]:
        for ref in ctx.trials.values():
            if ref.origin_ms is not None:
                yield ref.participant.pseudonym, ref.period, -ref.origin_ms

    register_table(
        TableSpec(
            name="scratch",
            title="t",
            description="d",
            columns=(
                Column("participant_id", "string", "x", identifier_class="direct",
                       deid_rule="hmac"),
                Column("period", "integer", "x"),
                Column("t_ms", "integer", "x", units="ms", deid_rule="relative_time"),
            ),
            rows=rows,
        )
    )  # fmt: skip
    try:
        with pytest.raises(LeakDetected, match="relative time outside its trial's span"):
            build_package(Study.objects.get(slug="demo"), "public", tmp_path / "leak")
    finally:
        unregister_table("scratch")
    deid = json.loads((built.public.out_dir / "deid_report.json").read_text())
    assert "relative time outside its trial's span" in deid["leak_scan"]["patterns"]


def test_events_keep_whitelisted_sizes_and_relative_times_only(built: Built) -> None:
    rows = table(built.public, "events")
    assert rows
    assert all(0 <= int(r["t_ms"]) < 3_600_000 for r in rows)
    # A tombstone stored with client time 0 gets its server receipt time (9 s + 40 ms after
    # the start), never minus the trial's absolute start.
    for package in (built.public, built.internal):
        rejected = [r for r in table(package, "events") if r["kind"] == "rejected"]
        assert rejected
        assert {r["t_ms"] for r in rejected} == {"9040"}
    edit = json.loads(next(r for r in rows if r["kind"] == "edit")["payload"])
    assert edit == {"chars_deleted": 2, "chars_inserted": len(CODE_MARKER), "n_changes": 1,
                    "versionId": 2}  # fmt: skip
    checkpoint = json.loads(next(r for r in rows if r["kind"] == "checkpoint")["payload"])
    assert checkpoint["code_length"] == 3 * len(CODE_MARKER)
    assert "code" not in checkpoint
    chat = json.loads(next(r for r in rows if r["kind"] == "chat_user_message")["payload"])
    assert chat == {"length": 31, "stage": "coding"}  # no request id in public
    idle = json.loads(next(r for r in rows if r["kind"] == "idle")["payload"])
    assert idle == {"idle_ms": 4000, "state": "end"}  # unknown keys never pass
    internal = table(built.internal, "events")
    chat_internal = json.loads(
        next(r for r in internal if r["kind"] == "chat_user_message")["payload"]
    )
    assert chat_internal["request_id"] == "9f0e1d2c-aaaa"
    assert CODE_MARKER not in package_text(built.internal)  # code never leaves the server


def test_ai_usage_is_counts_in_public_and_transcripts_only_internal(built: Built) -> None:
    usage = table(built.public, "aiusage")
    with_requests = [r for r in usage if r["n_requests"] != "0"]
    assert with_requests
    assert all(r["total_tokens"] == "200" for r in with_requests)
    assert all(r["n_accepted"] == r["n_requests"] for r in with_requests)
    assert not list(built.public.out_dir.glob("data/*aitranscripts*"))
    transcripts = table(built.internal, "aitranscripts")
    assert any(PROMPT_MARKER in r["messages"] and r["reply"] == REPLY_MARKER for r in transcripts)
    deid = json.loads((built.public.out_dir / "deid_report.json").read_text())
    dropped = {(d["table"], d["field"]) for d in deid["dropped_fields"]}
    assert ("aitranscripts", "(whole table)") in dropped
    assert ("participants", "username") in dropped


def test_questionnaires_release_no_free_text_and_no_raw_quasi_identifiers(built: Built) -> None:
    public = table(built.public, "questionnaireitems")
    assert public
    assert not {r["item_type"] for r in public} & {"short_text", "long_text"}
    assert not {r["item_id"] for r in public} & {"age_band", "gender", "occupation", "languages"}
    items = {r["item_id"]: r["released"] for r in table(built.public, "items")}
    assert items["age_band"].startswith("no: quasi-identifier")
    assert items["comments_general"] == "no: free text"
    assert items["tlx_mental"] == "yes"
    internal = table(built.internal, "questionnaireitems")
    assert any(r["value"] in FREE_TEXT for r in internal)
    scales = table(built.public, "scales")
    assert "nasa_tlx" in {r["scale"] for r in scales}


def test_internal_package_has_absolute_times_but_no_vault_data(built: Built) -> None:
    text = package_text(built.internal)
    assert ISO_TIMESTAMP.search(text)
    for value in [*built.vault_values, *built.secrets]:
        assert value not in text


def test_zip_holds_the_package_under_one_folder(built: Built, tmp_path: Path) -> None:
    digest = make_zip(built.public.out_dir, tmp_path / "p.zip", "export_demo_public")
    assert digest == hashlib.sha256((tmp_path / "p.zip").read_bytes()).hexdigest()
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        names = archive.namelist()
    assert "export_demo_public/manifest.json" in names
    assert len(names) == len(files_of(built.public))


def test_session_gap_is_relative_hours(built: Built) -> None:
    sessions = [r for r in table(built.public, "sessions") if r["session_index"] == "2"]
    gaps = [int(r["gap_from_s1_h"]) for r in sessions if r["gap_from_s1_h"]]
    assert gaps
    assert all(20 <= g <= 40 for g in gaps)
    assert timedelta(hours=max(gaps)) < timedelta(days=2)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the COPY path is PostgreSQL only")
def test_copy_fast_path_writes_the_same_events_file_as_the_python_path(
    built: Built, django_db_blocker: Any, tmp_path: Path
) -> None:
    with django_db_blocker.unblock():
        study = Study.objects.get(slug="demo")
        with mock.patch("ide_bridge.telemetry.exports.sql_payload", return_value=None):
            slow = build_package(study, "public", tmp_path / "python-path")
        with mock.patch("study.exports.package.copy_blocks", wraps=copy_blocks) as copied:
            fast = build_package(study, "public", tmp_path / "copy-path")
    assert copied.called
    events = "data/study-demo_description-events_data.csv"
    assert (fast.out_dir / events).read_bytes() == (slow.out_dir / events).read_bytes()
    assert fast.row_counts["events"] == slow.row_counts["events"] > 0


def test_the_span_slack_covers_the_telemetry_grace_after_a_trial_closes() -> None:
    """Events the IDE bridge still accepts after closing keep their own times in exports."""
    assert CLOSED_GRACE <= SPAN_SLACK


def test_the_primary_model_script_runs_from_the_package_alone(built: Built) -> None:
    script = built.public.out_dir / "analysis" / "primary_model.py"
    assert script.read_text() == Path(glmm.__file__).read_text()
    done = subprocess.run(
        [sys.executable, "-I", str(script)],  # isolated: no platform code on the path
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=built.public.out_dir.parent,
    )
    assert done.returncode == 0, done.stderr
    # One graded trial in the demo package: the model says why it cannot be fitted.
    assert "primary: not fitted: " in done.stdout


def test_the_package_carries_the_analysis_plan_and_its_deviations(built: Built) -> None:
    record = json.loads((built.public.out_dir / "analysis_plan.json").read_text())
    assert record["plan"]["primary"]["model"].startswith("logistic mixed model")
    assert record["plans_by_snapshot_version"]
    assert all(
        p is None or p["version"] == "1.0" for p in record["plans_by_snapshot_version"].values()
    )
    assert any(d.startswith("The primary model was not fitted") for d in record["deviations"])
    files = {f["path"] for f in built.public.manifest["files"]}
    assert "analysis_plan.json" in files
