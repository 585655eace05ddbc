"""Grading benchmarks for docs/benchmarks.md (not a test; run by hand):

    .venv/bin/python bench/grading.py [--templates a,b] [--repeats 10] [--json]

1. Grading cost: wall time to grade each reference versus (its own CPU time summed over every
   test run + one bare ``python3 -I -S -c pass`` start per run). Target <= 2x.
2. Stability: grade each reference ``--repeats`` times in a row; count overall-verdict flips
   (target 0) and report the spread of the time ratio.
3. Throughput: gradings per minute with 1 and 2 grading processes in parallel.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

import django  # noqa: E402

django.setup()

from evaluation.bank import list_templates  # noqa: E402
from evaluation.calibration import CalibrationResult, calibrate  # noqa: E402
from evaluation.grading import CanaryDrift, grade  # noqa: E402
from evaluation.instances import get_instance  # noqa: E402
from evaluation.sandbox import get_sandbox  # noqa: E402


def bare_start_s(n: int = 20) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timed_grade(slug: str, label: str, calibration: dict[str, Any]) -> dict[str, Any]:
    instance = get_instance(slug, 1)
    sandbox = get_sandbox("bwrap")
    files = instance.references[label]
    result = CalibrationResult.from_json(calibration)
    t0 = time.perf_counter()
    drifted = False
    try:
        report = grade(instance, files, sandbox=sandbox, calibration=result)
    except CanaryDrift:  # a busy host: grade again on the canary ratio alone, and say so
        drifted = True
        report = grade(instance, files, sandbox=sandbox, calibration=result, tolerate_drift=True)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "report": report, "drifted": drifted}


def runs_in(report: dict[str, Any]) -> tuple[int, float]:
    """Processes started and the solution CPU they used (performance tests: rounds x 2)."""
    eff = report["efficiency"]
    rounds = eff.get("rounds", 3)
    n_runs, cpu = 0, 0.0
    for t in report["tests"]:
        k = 2 * rounds if t["kind"] == "performance" else 1
        n_runs += k
        cpu += (t["cpu_s"] or 0.0) * k
    return n_runs, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--templates", default="")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    slugs = args.templates.split(",") if args.templates else [t.slug for t in list_templates()]
    bare = bare_start_s()
    out: dict[str, Any] = {"bare_start_s": round(bare, 4), "templates": {}}
    for slug in slugs:
        calibration = calibrate(get_instance(slug, 1), get_sandbox("bwrap")).to_json()
        entry: dict[str, Any] = {"calibration_ratio": round(calibration["ratio"], 2)}
        for label in ("efficient", "naive"):
            results = [timed_grade(slug, label, calibration) for _ in range(args.repeats)]
            passes = [r["report"]["overall_pass"] for r in results]
            ratios = [r["report"]["efficiency"]["time_ratio"] for r in results]
            n_runs, cpu = runs_in(results[0]["report"])
            floor = cpu + n_runs * bare
            wall = statistics.median(r["wall_s"] for r in results)
            entry[label] = {
                "grade_wall_s": round(wall, 3),
                "own_cpu_plus_bare_starts_s": round(floor, 3),
                "cost_ratio": round(wall / floor, 2),
                "verdict_flips": sum(a != b for a, b in itertools.pairwise(passes)),
                "overall_pass": passes[0],
                "time_ratios": ratios,
                "borderline": sum(r["report"]["efficiency"]["borderline"] for r in results),
                "canary_drifts": sum(r["drifted"] for r in results),
            }
        for workers in (1, 2):
            jobs = 4
            t0 = time.perf_counter()
            with ProcessPoolExecutor(workers) as pool:
                list(
                    pool.map(timed_grade, [slug] * jobs, ["efficient"] * jobs, [calibration] * jobs)
                )
            entry[f"throughput_{workers}_workers_per_min"] = round(
                jobs / (time.perf_counter() - t0) * 60, 1
            )
        out["templates"][slug] = entry
        print(json.dumps({slug: entry}), flush=True)
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
