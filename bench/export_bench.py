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
# The export command in a child process (the apps register their export tables in ready()).
CHILD = (
    "import django, sys; django.setup();"
    "from django.core.management import call_command;"
    "call_command('export_study', '--study', sys.argv[1], '--profile', 'public',"
    " '--out', sys.argv[2])"
)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    # Our own tools (psql, createdb, manage.py) with arguments from this file.
    return subprocess.run(  # noqa: S603
        args, cwd=ROOT, capture_output=True, text=True, check=check, timeout=600
    )


def prepare_database(rebuild: bool) -> None:
    url = urlparse(PG)
    if url.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("BENCH_PG must point at a loopback PostgreSQL server.")
    conn = ["-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432)]
    conn += ["-U", url.username or "postgres"]
    if rebuild:
        sh("dropdb", "--if-exists", *conn, DB_NAME)
    query = "SELECT 1 FROM pg_database WHERE datname = 'bench_export'"
    exists = sh("psql", *conn, "-tAc", query)
    if exists.stdout.strip() != "1":
        sh("createdb", *conn, DB_NAME)
    sh(sys.executable, "manage.py", "migrate", "--no-input", "-v", "0")


def ensure_data(n_participants: int, n_events: int) -> None:
    import django

    django.setup()
    from ide_bridge.models import TrialEvent
    from study.models import Study

    if Study.objects.filter(slug=SLUG).exists():
        if TrialEvent.objects.filter(trial__participant__study__slug=SLUG).count() == n_events:
            return
        raise SystemExit("bench_export holds another data set; run again with --rebuild.")
    from export_data import build_study, copy_events  # the bench folder is on sys.path

    rng = random.Random(2026)
    t0 = time.perf_counter()
    trials = build_study(n_participants, rng)
    copy_events(trials, n_events, rng)
    print(f"# built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


# --- Measurements ---------------------------------------------------------------------------------
def timed_export(out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    child = subprocess.Popen(  # noqa: S603  (this interpreter, code from this file)
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
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
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
    with (
        psycopg.connect(DATABASE_URL) as conn,
        conn.cursor() as cursor,
        out.open("wb") as sink,
        cursor.copy(query) as copy,
    ):
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
    load_before = os.getloadavg()[0]
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
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
