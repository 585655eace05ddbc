"""Export benchmark for docs/benchmarks.md (not a test; run by hand):

    .venv/bin/python bench/export_bench.py [--participants 45] [--events 1000000] [--rebuild]

1. Builds (once; ``--rebuild`` starts over) a study with ``--participants`` completed
   participants (4 graded trials each, questionnaires, AI requests) and ``--events`` telemetry
   events in the PostgreSQL database ``bench_export`` (createdb/migrate; ``BENCH_PG`` overrides
   the server URL, default postgres://postgres@127.0.0.1:5432). Rows go in with bulk inserts,
   the events with ``COPY ... FROM STDIN``.
2. Runs ``export_study --profile public`` in a child process and measures its wall time and
   peak RSS (``os.wait4`` of that child). Targets: <= 30 s and <= 300 MB.
3. Times a raw ``COPY (SELECT ... FROM ide_bridge_trialevent ORDER BY trial_id, seq) TO STDOUT``
   of the same columns the export reads, written to a file, and reports export / COPY.

Loopback only; sizes are capped. Prints the command and JSON results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = "bench_export"
DATABASE_URL = f"{PG}/{DB_NAME}"
SLUG = "bench"
MAX_EVENTS, MAX_PARTICIPANTS = 5_000_000, 500
BENCH_KEY = "bench-only-export-hmac-key-not-a-secret-0123456789"
os.environ.update(
    DATABASE_URL=DATABASE_URL,
    DJANGO_SETTINGS_MODULE="config.settings.dev",
    DJANGO_DEBUG="0",
    EXPORT_HMAC_KEY=BENCH_KEY,
    HAIEVAL_VAR_DIR=str(Path(tempfile.gettempdir()) / "haieval-export-bench"),
)
CHILD = (
    "import django, sys; django.setup();"
    "from ide_bridge.exports import register_export_tables; register_export_tables();"
    "from django.core.management import call_command;"
    "call_command('export_study', '--study', sys.argv[1], '--profile', 'public', '--out', sys.argv[2])"
)
CODE = "def solve(data):\n    total = 0\n    for row in data:\n        total += row\n    return total\n"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=check, timeout=600)


def prepare_database(rebuild: bool) -> None:
    url = urlparse(PG)
    if url.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("BENCH_PG must point at a loopback PostgreSQL server.")
    conn = ["-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432), "-U", url.username or "postgres"]  # noqa: E501
    if rebuild:
        sh("dropdb", "--if-exists", *conn, DB_NAME)
    exists = sh("psql", *conn, "-tAc", f"SELECT 1 FROM pg_database WHERE datname='{DB_NAME}'")
    if exists.stdout.strip() != "1":
        sh("createdb", *conn, DB_NAME)
    sh(sys.executable, "manage.py", "migrate", "--no-input", "-v", "0")


# --- Data -------------------------------------------------------------------------------------------
def _report(slug: str, seed: int, passed: bool, rng: random.Random) -> dict[str, Any]:
    tests = [
        {"name": f"t{i}", "kind": "functional" if i < 12 else "performance", "visible": i < 3,
         "verdict": "OK" if passed or rng.random() < 0.6 else "WA"}
        for i in range(15)
    ]  # fmt: skip
    ok = sum(t["verdict"] == "OK" for t in tests)
    return {
        "schema_version": "1.0",
        "template": {"slug": slug, "version": "1.0.0", "content_hash": "ab" * 32},
        "instance": {"seed": seed, "content_hash": "cd" * 32},
        "solution_sha256": f"{seed:064x}"[-64:],
        "overall_pass": passed,
        "partial_pass": (ok + 2 * passed) / 17,
        "checks": {"passed": ok + 2 * passed, "total": 17},
        "tests": tests,
        "efficiency": {"time_ok": passed, "memory_ok": True},
        "completion_time_s": 1800 if passed else 3600,
    }


def build_study(n_participants: int, rng: random.Random) -> list[tuple[int, datetime, bool]]:
    """The study and its participants; returns (trial id, start, AI?) of every trial."""
    from django.db import transaction

    from evaluation.models import Evaluation, Submission, TaskInstance, TaskTemplate
    from ide_bridge.models import AIRequest
    from study.demo_answers import answers_for
    from study.instruments import attach_default_instruments
    from study.models import (
        Answer, Arm, Assignment, ConsentEvent, Participant, Response, Study, Track, Trial, User,
    )  # fmt: skip
    from study.snapshots import current_snapshot

    with transaction.atomic():
        study = Study.objects.create(slug=SLUG, title="Export benchmark", status="closed")
        tracks = {c: Track.objects.create(study=study, code=c) for c in ("SDE", "MLE", "DS")}
        arms = {
            "A": Arm.objects.create(study=study, condition="A", name="No AI", ai_mode="none"),
            "B": Arm.objects.create(
                study=study, condition="B", name="AI", ai_mode="inline_chat", model="demo"
            ),
        }
        attach_default_instruments(study)
        study.refresh_from_db()
        snapshot = current_snapshot(study)
        templates = [
            TaskTemplate.objects.create(slug=f"bench-task-{i}", version="1.0.0", title=f"Task {i}",
                                        track=code, difficulty=d, content_hash=f"{i:064x}")
            for i, (code, d) in enumerate([("SDE", "easy"), ("MLE", "medium"), ("DS", "hard"),
                                           ("SDE", "hard")])
        ]  # fmt: skip
        users = User.objects.bulk_create(
            User(username=f"p-bench-{i:03d}", password="!") for i in range(n_participants)
        )
        participants = Participant.objects.bulk_create(
            Participant(study=study, user=u, internal_id=f"{rng.getrandbits(64):016x}",
                        snapshot=snapshot, stage="complete", track=tracks[("SDE", "MLE", "DS")[i % 3]],
                        session_index=2)
            for i, u in enumerate(users)
        )  # fmt: skip
        assert study.consent_form is not None and study.screening is not None
        ConsentEvent.objects.bulk_create(
            ConsentEvent(participant=p, form=study.consent_form, form_sha256="0" * 64,
                         decision="agree", rendered_html="", rendered_sha256="0" * 64,
                         decided_at=datetime(2026, 3, 1, tzinfo=UTC))
            for p in participants
        )  # fmt: skip
        sequences = ("ABBA", "BAAB", "ABAB", "BABA")
        trials, submissions, evaluations, instances = [], [], [], []
        for i, p in enumerate(participants):
            sequence = sequences[i % 4]
            Assignment.objects.create(
                participant=p, study=study, track=p.track, sequence=sequence,
                tasks=[t.slug for t in templates], seed=i, counts_before={}, min_score=0, n_tied=1,
                n_candidates=1, p_best=1.0, algorithm_version="bench",
            )  # fmt: skip
            day = datetime(2026, 3, 2, 9, tzinfo=UTC) + timedelta(days=i % 20, minutes=7 * i)
            for period in range(1, 5):
                template = templates[(period + i) % 4]
                seed = rng.getrandbits(31)
                instance = TaskInstance(template=template, seed=seed, params={}, content_hash="e" * 64)
                passed = rng.random() < 0.3
                submission = Submission(instance=instance, source=b"pass", sha256="f" * 64,
                                        source_label="participant")
                evaluation = Evaluation(submission=submission, status="done", tests_total=15,
                                        tests_done=15, report=_report(template.slug, seed, passed, rng))
                start = day + timedelta(days=period // 3, minutes=65 * ((period - 1) % 2))
                trials.append(Trial(participant=p, session_index=1 + (period > 2), period=period,
                                    arm=arms[sequence[period - 1]], template_slug=template.slug,
                                    seed=seed, instance=instance, status="submitted",
                                    started_at=start, ended_at=start + timedelta(minutes=rng.randint(15, 60))))
                instances.append(instance)
                submissions.append(submission)
                evaluations.append(evaluation)
        TaskInstance.objects.bulk_create(instances)
        for submission, instance in zip(submissions, instances, strict=True):
            submission.instance = instance
        Submission.objects.bulk_create(submissions)
        for evaluation, submission in zip(evaluations, submissions, strict=True):
            evaluation.submission = submission
        Evaluation.objects.bulk_create(evaluations)
        for trial, instance, submission, evaluation in zip(trials, instances, submissions, evaluations, strict=True):  # noqa: E501
            trial.instance, trial.submission, trial.evaluation = instance, submission, evaluation
        Trial.objects.bulk_create(trials)

        versions = {"screening": study.screening, "post_trial": study.post_trial, "post_study": study.post_study}  # noqa: E501
        items = {k: list(v.items.all()) for k, v in versions.items() if v is not None}
        responses, answers = [], []
        for p in participants:
            sheets = [("screening", None), ("post_study", None)]
            sheets += [("post_trial", t) for t in trials if t.participant_id == p.pk]
            for kind, trial in sheets:
                version = versions[kind]
                assert version is not None
                response = Response(participant=p, version=version, trial=trial,
                                    submitted_at=datetime(2026, 3, 3, tzinfo=UTC))
                responses.append(response)
                values = answers_for(version, rng)
                answers += [Answer(response=response, item=item, value=values[item.key]) for item in items[kind]]  # noqa: E501
        Response.objects.bulk_create(responses)  # PostgreSQL returns the ids the answers need
        Answer.objects.bulk_create(answers, batch_size=2000)
        AIRequest.objects.bulk_create(
            (AIRequest(trial=t, kind=rng.choice(["chat", "complete"]), provider="demo", model="demo",
                       messages=[{"role": "user", "content": "help"}], reply="def f(): ...",
                       prompt_tokens=rng.randint(50, 900), completion_tokens=rng.randint(20, 400),
                       latency_ms=rng.randint(100, 2000), outcome=rng.choice(["accepted", "rejected", "shown"]))  # noqa: E501
             for t in trials if t.arm.condition == "B" for _ in range(20)),
            batch_size=2000,
        )  # fmt: skip
    return [(t.pk, t.started_at, t.arm.condition == "B") for t in trials]  # type: ignore[misc]


def _payloads(rng: random.Random, ai: bool) -> list[tuple[str, str]]:
    """A pool of (kind, payload JSON) drawn from a realistic mix, reused across events."""
    code = json.dumps(CODE * 20)
    mix = [("edit", 60), ("selection", 14), ("run_tests", 3), ("paste", 2), ("copy", 1),
           ("page_visibility", 2), ("idle", 2), ("checkpoint", 1), ("run_code", 2), ("editor_focus", 1)]  # noqa: E501
    if ai:
        mix += [("suggestion_shown", 6), ("suggestion_accept", 2), ("chat_user_message", 1),
                ("chat_assistant_response", 1)]  # fmt: skip
    pool = []
    for kind, weight in mix:
        for _ in range(weight * 5):
            n = rng.randint(1, 40)
            payload = {
                "edit": f'{{"changes":[{{"rangeOffset":{n * 7},"rangeLength":{n % 3},"text":"x = {n}"}}],"versionId":{n}}}',  # noqa: E501
                "selection": f'{{"offset":{n * 11},"length":{n},"line":{n},"column":{n % 9}}}',
                "run_tests": f'{{"passed":{n % 5},"failed":{5 - n % 5},"errors":0,"total":5,"duration_ms":{n * 31}}}',  # noqa: E501
                "paste": f'{{"length":{n * 9},"lines":{n % 6},"source":"editor","offset":{n}}}',
                "copy": f'{{"length":{n * 4},"source":"editor","cut":false}}',
                "page_visibility": f'{{"state":"visible","hidden_ms":{n * 300}}}',
                "idle": f'{{"state":"end","idle_ms":{n * 1000}}}',
                "checkpoint": f'{{"code":{code},"versionId":{n},"reason":"interval"}}',
                "run_code": f'{{"exit_status":0,"output":"ok {n}\\n","duration_ms":{n * 20}}}',
                "editor_focus": "{}",
                "suggestion_shown": f'{{"request_id":"r-{n}","length":{n * 5},"lines":{n % 4},"latency_ms":{n * 12}}}',  # noqa: E501
                "suggestion_accept": f'{{"request_id":"r-{n}","partial":false,"length":{n * 5}}}',
                "chat_user_message": f'{{"request_id":"c-{n}","length":{n * 8},"stage":"coding"}}',
                "chat_assistant_response": f'{{"request_id":"c-{n}","length":{n * 30},"has_code":true,"latency_ms":{n * 40}}}',  # noqa: E501
            }[kind]
            pool.append((kind, payload))
    return pool


def copy_events(trials: list[tuple[int, datetime, bool]], total: int, rng: random.Random) -> None:
    from django.db import connection

    per_trial = total // len(trials)
    extra = total - per_trial * len(trials)
    pools = {ai: _payloads(rng, ai) for ai in (False, True)}
    connection.ensure_connection()
    raw = connection.connection
    with raw.cursor() as cursor, cursor.copy(
        "COPY ide_bridge_trialevent (trial_id, seq, kind, client_ts, server_ts, payload) FROM STDIN"
    ) as copy:
        for index, (trial_id, start, ai) in enumerate(trials):
            n = per_trial + (1 if index < extra else 0)
            start_ms = int(start.timestamp() * 1000)
            pool = pools[ai]
            lines = []
            for seq in range(1, n + 1):
                kind, payload = pool[rng.randrange(len(pool))]
                ts = start_ms + seq * 550
                received = datetime.fromtimestamp((ts + 45) / 1000, tz=UTC).isoformat()
                escaped = payload.replace("\\", "\\\\")
                lines.append(f"{trial_id}\t{seq}\t{kind}\t{ts}\t{received}\t{escaped}\n")
            copy.write("".join(lines))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def ensure_data(n_participants: int, n_events: int) -> None:
    import django

    django.setup()
    from ide_bridge.models import TrialEvent
    from study.models import Study

    if Study.objects.filter(slug=SLUG).exists():
        if TrialEvent.objects.filter(trial__participant__study__slug=SLUG).count() == n_events:
            return
        raise SystemExit("bench_export holds another data set; run again with --rebuild.")
    rng = random.Random(2026)
    t0 = time.perf_counter()
    trials = build_study(n_participants, rng)
    copy_events(trials, n_events, rng)
    print(f"# built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


# --- Measurements -----------------------------------------------------------------------------------
def timed_export(out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, SLUG, str(out)], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    stdout, stderr = child.stdout.read(), child.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"export failed:\n{stdout}\n{stderr}")
    manifest = json.loads((out / "manifest.json").read_text())
    size = sum(f["bytes"] for f in manifest["files"])
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "rows": manifest["row_counts"],
        "package_mb": round(size / 1e6, 1),
    }


def timed_copy(out: Path) -> dict[str, Any]:
    import psycopg

    query = (
        "COPY (SELECT trial_id, seq, kind, client_ts, payload FROM ide_bridge_trialevent "
        "ORDER BY trial_id, seq) TO STDOUT"
    )
    t0 = time.perf_counter()
    size = 0
    with psycopg.connect(DATABASE_URL) as conn, conn.cursor() as cursor, out.open("wb") as sink:
        with cursor.copy(query) as copy:
            for block in copy:
                sink.write(block)
                size += len(block)
    return {"wall_s": round(time.perf_counter() - t0, 2), "mb": round(size / 1e6, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--participants", type=int, default=45)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    if not (1 <= args.participants <= MAX_PARTICIPANTS and 1 <= args.events <= MAX_EVENTS):
        raise SystemExit(f"at most {MAX_PARTICIPANTS} participants and {MAX_EVENTS} events")
    prepare_database(args.rebuild)
    ensure_data(args.participants, args.events)
    from django.db import connections

    connections.close_all()
    work = Path(tempfile.mkdtemp(prefix="export-bench-"))
    try:
        export = timed_export(work / "package")
        raw = timed_copy(work / "events.copy")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "command": shlex.join([".venv/bin/python", "bench/export_bench.py", *sys.argv[1:]]),
        "participants": args.participants,
        "events": args.events,
        "export_public": export,
        "pg_copy_events": raw,
        "ratio_export_to_copy": round(export["wall_s"] / raw["wall_s"], 1),
        "targets": {"wall_s": 30, "peak_rss_mb": 300},
        "ok": export["wall_s"] <= 30 and export["peak_rss_mb"] <= 300,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
