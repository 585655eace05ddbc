"""Export packages built from the demo study: codebook coverage, manifest hashes, the
Frictionless description, and what a public package must never contain.

The demo is seeded once for the module (two completed participants plus one at every stage);
completed participants' gradings stay queued, so most outcomes are missing (documented in the
codebook). One trial gets a graded report, one participant telemetry and AI requests carrying
marker strings that must never reach a public package.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import connection

from ide_bridge.models import AIRequest, TrialEvent
from ide_bridge.telemetry.exports import register_export_tables
from study.audit.withdrawal import withdraw_participant
from study.demo.answers import FREE_TEXT
from study.demo.seed import seed_demo
from study.exports.package import PackageResult, build_package, make_zip
from study.exports.pgcopy import copy_blocks
from study.exports.pseudonyms import Pseudonymiser, default_scope, export_key
from study.models import LoginLink, Participant, Study, Trial
from study.vault import crypto
from study.vault.models import VaultEntry
from tests.study.helpers import grading_queued

CODE_MARKER = "def leaked_solution_marker():"
OUTPUT_MARKER = "RUN-OUTPUT-MARKER-7781"
PROMPT_MARKER = "PROMPT-MARKER-please-help-4410"
REPLY_MARKER = "REPLY-MARKER-here-you-go-9921"
# Marks the module's tests as database tests, so pytest-django sets up the test database
# that the module-scoped fixture writes to (unmarked items get no database at all).
pytestmark = pytest.mark.django_db
ISO_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
PSEUDONYM = re.compile(r"^S[A-Z2-7]{10}$")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


@dataclass
class Built:
    public: PackageResult
    internal: PackageResult
    deleted: PackageResult  # public, after a withdrawal under the "delete" policy
    usernames: list[str]
    internal_ids: list[str]
    vault_values: list[str]
    secrets: list[str]  # login tokens and their stored hashes
    kept_pseudonym: str  # withdrew under "keep"
    deleted_pseudonym: str  # withdrew under "delete"


def _add_telemetry(participant: Participant) -> None:
    trials = list(participant.trials.exclude(started_at=None).order_by("period"))
    for trial in trials:
        assert trial.started_at is not None
        start_ms = int(trial.started_at.timestamp() * 1000)
        payloads: list[tuple[str, dict[str, Any]]] = [
            ("trial_start", {}),
            ("edit", {"changes": [{"rangeOffset": 0, "rangeLength": 2, "text": CODE_MARKER}],
                      "versionId": 2}),
            ("checkpoint", {"code": CODE_MARKER * 3, "versionId": 3, "reason": "interval"}),
            ("paste", {"length": 40, "lines": 2, "source": "outside", "offset": 5}),
            ("run_code", {"exit_status": 1, "output": OUTPUT_MARKER, "duration_ms": 120}),
            ("chat_user_message", {"request_id": "9f0e1d2c-aaaa", "length": 31, "stage": "coding"}),
            ("ai_state", {"enabled": True, "provider": "demo", "model": "demo-model-x"}),
            ("idle", {"state": "end", "idle_ms": 4000, "note": "alice@example.org"}),
        ]  # fmt: skip
        TrialEvent.objects.bulk_create(
            TrialEvent(trial=trial, seq=i, kind=kind, client_ts=start_ms + 1000 * i, payload=data)
            for i, (kind, data) in enumerate(payloads, start=1)
        )
        for i in range(1, len(payloads) + 1):  # received 40 ms after the client sent it
            received = trial.started_at + timedelta(seconds=i, milliseconds=40)
            TrialEvent.objects.filter(trial=trial, seq=i).update(server_ts=received)
        AIRequest.objects.create(
            trial=trial,
            kind=AIRequest.Kind.CHAT,
            provider="demo",
            model="demo",
            messages=[{"role": "user", "content": PROMPT_MARKER}],
            reply=REPLY_MARKER,
            prompt_tokens=120,
            completion_tokens=80,
            latency_ms=300,
            outcome=AIRequest.Outcome.ACCEPTED,
            stage=AIRequest.Stage.CODING,
        )


def _grade(trial: Trial) -> None:
    assert trial.evaluation is not None
    tests = [
        {"name": f"t{i}", "kind": "functional", "visible": i < 2, "verdict": "OK" if i else "WA"}
        for i in range(5)
    ]
    report = {
        "schema_version": "1.0",
        "template": {"slug": trial.template_slug, "version": "1.0.0", "content_hash": "ab" * 32},
        "instance": {"seed": trial.seed, "content_hash": "cd" * 32},
        "solution_sha256": "ef" * 32,
        "overall_pass": False,
        "partial_pass": 4 / 7,
        "checks": {"passed": 4, "total": 7},
        "tests": tests,
        "efficiency": {"time_ok": True, "memory_ok": False},
        "completion_time_s": 3600,
    }
    trial.evaluation.status = "done"
    trial.evaluation.report = report
    trial.evaluation.save(update_fields=["status", "report"])


@pytest.fixture(scope="module")
def built(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("exports")
    with django_db_blocker.unblock():
        name = str(connection.settings_dict["NAME"])
        assert "memory" in name or "test" in name, f"refusing to seed a non-test database {name}"
        register_export_tables()
        with grading_queued():
            summary = seed_demo(admin_password="x", completed=2)
        study = Study.objects.get(slug="demo")
        done = Participant.objects.get(user__username="demo-done-01")
        _add_telemetry(done)
        _grade(done.trials.order_by("period").first())  # type: ignore[arg-type]
        kept = Participant.objects.get(user__username="demo-waiting")
        withdraw_participant(kept)  # the study keeps data of people who withdraw
        public = build_package(study, "public", root / "public")
        internal = build_package(study, "internal", root / "internal")
        study.withdrawal_policy = Study.WithdrawalPolicy.DELETE
        study.save(update_fields=["withdrawal_policy"])
        gone = Participant.objects.get(user__username="demo-noai-trial")
        withdraw_participant(gone)
        deleted = build_package(study, "public", root / "deleted")

        people = list(Participant.objects.filter(study=study).select_related("user"))
        vault = [crypto.decrypt(e.ciphertext) for e in VaultEntry.objects.all()]
        tokens = [p["login_url"].rstrip("/").rsplit("/", 1)[-1] for p in summary["participants"]]
        pseudonymise = Pseudonymiser(export_key(), default_scope("demo", "public"))
        yield Built(
            public=public,
            internal=internal,
            deleted=deleted,
            usernames=[p.user.username for p in people],
            internal_ids=[p.internal_id for p in people],
            vault_values=[
                v[k] for v in vault for k in ("name", "email", "institution", "payment_notes")
            ],
            secrets=[t for t in tokens if t]
            + list(LoginLink.objects.values_list("token_sha256", flat=True)),
            kept_pseudonym=pseudonymise(kept.internal_id),
            deleted_pseudonym=pseudonymise(gone.internal_id),
        )
        call_command("flush", interactive=False, verbosity=0)


def files_of(result: PackageResult) -> list[Path]:
    return sorted(p for p in result.out_dir.rglob("*") if p.is_file())


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def table(result: PackageResult, name: str) -> list[dict[str, str]]:
    return read_csv(next(result.out_dir.glob(f"data/*_description-{name}_data.csv")))


def package_text(result: PackageResult) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in files_of(result))


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


def test_events_keep_whitelisted_sizes_and_relative_times_only(built: Built) -> None:
    rows = table(built.public, "events")
    assert rows
    assert all(0 <= int(r["t_ms"]) < 3_600_000 for r in rows)
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
