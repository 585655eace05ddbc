"""Export packages of the seeded demo study, for the package tests: the marker strings that must
never reach a public package, what was built, and readers of its files.

The demo is seeded once (two completed participants plus one at every stage); completed
participants' gradings stay queued, so most outcomes are missing (documented in the codebook).
One trial gets a graded report, one participant telemetry and AI requests carrying the markers.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.db import connection

from ide_bridge.models import AIRequest, TrialEvent
from ide_bridge.telemetry.exports import register_export_tables
from study.audit.withdrawal import withdraw_participant
from study.demo.seed import seed_demo
from study.exports.package import PackageResult, build_package
from study.exports.pseudonyms import Pseudonymiser, default_scope, export_key
from study.models import LoginLink, Participant, Study, Trial
from study.vault import crypto
from study.vault.models import VaultEntry
from tests.study.helpers import grading_queued

CODE_MARKER = "def leaked_solution_marker():"
OUTPUT_MARKER = "RUN-OUTPUT-MARKER-7781"
PROMPT_MARKER = "PROMPT-MARKER-please-help-4410"
REPLY_MARKER = "REPLY-MARKER-here-you-go-9921"
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
            # A tombstone of an event without a usable ts: stored with client time 0.
            ("rejected", {"reason": "ts must be an integer", "kind": "edit"}),
        ]  # fmt: skip
        TrialEvent.objects.bulk_create(
            TrialEvent(
                trial=trial,
                seq=i,
                kind=kind,
                client_ts=0 if kind == "rejected" else start_ms + 1000 * i,
                payload=data,
            )
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


def files_of(result: PackageResult) -> list[Path]:
    return sorted(p for p in result.out_dir.rglob("*") if p.is_file())


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def table(result: PackageResult, name: str) -> list[dict[str, str]]:
    return read_csv(next(result.out_dir.glob(f"data/*_description-{name}_data.csv")))


def package_text(result: PackageResult) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in files_of(result))


def build_demo_packages(root: Path) -> Built:
    """Seed the demo (in the test database) and build its public and internal packages, and a
    public one after a withdrawal under the "delete" policy."""
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
    return Built(
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
