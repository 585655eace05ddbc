"""Grading speed of this checkout against another one, in one run (not a test; run by hand):

    git worktree add --detach /tmp/baseline <commit>
    .venv/bin/python bench/grading_regression.py --baseline /tmp/baseline \
        [--template sde-binary-palindromes] [--rounds 3] [--gradings 3] [--json]

Each round starts one process per checkout, baseline and current in turn (alternating which
goes first), so both see the same machine load. A process calibrates the template once (not
timed) and then times ``--gradings`` gradings of the efficient reference; a round's figure is
their median. A grading whose canary drifted recalibrates and grades again, as the service does
(counted in ``canary_drifts``; its wall time includes the recalibration). The result is the
ratio of the medians over rounds, current / baseline (issue 10's target: at most 1.10).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, os, statistics, sys, time
sys.path.insert(0, os.environ["TREE"])
import django
django.setup()
from evaluation.calibration import calibrate
from evaluation.grading import CanaryDrift, grade
from evaluation.instances import get_instance
from evaluation.sandbox import get_sandbox

instance = get_instance(os.environ["TEMPLATE"], 1)
sandbox = get_sandbox("bwrap")
calibration = calibrate(instance, sandbox, rounds=3)
files = instance.references["efficient"]
walls, drifts = [], 0
for _ in range(int(os.environ["GRADINGS"])):
    started = time.perf_counter()
    try:
        report = grade(instance, files, sandbox=sandbox, calibration=calibration)
    except CanaryDrift:  # what the service does: measure again, then judge by the canary
        drifts += 1
        calibration = calibrate(instance, sandbox, rounds=3)
        report = grade(
            instance, files, sandbox=sandbox, calibration=calibration, tolerate_drift=True
        )
    walls.append(time.perf_counter() - started)
    assert report["overall_pass"], report
print(json.dumps({"median_s": statistics.median(walls), "walls": walls, "drifts": drifts}))
"""


def one(tree: Path, template: str, gradings: int, python: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="haieval-bench-") as var:
        env = dict(
            os.environ,
            TREE=str(tree),
            TEMPLATE=template,
            GRADINGS=str(gradings),
            DJANGO_SETTINGS_MODULE="config.settings.test",
            HAIEVAL_VAR_DIR=var,
            DATABASE_URL=f"sqlite:///{var}/db.sqlite3",
            PYTHONPATH=str(tree),
        )
        env.pop("REDIS_URL", None)
        proc = subprocess.run(  # noqa: S603 - our own interpreter and script
            [python, "-c", CHILD], env=env, cwd=tree, capture_output=True, text=True, check=False
        )
    if proc.returncode != 0:
        sys.exit(f"grading in {tree} failed:\n{proc.stderr[-2000:]}")
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(figures["median_s"]), int(figures["drifts"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--template", default="sde-binary-palindromes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gradings", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.baseline / "evaluation").is_dir():
        sys.exit(f"{args.baseline} is not a checkout of this project")
    python = str(ROOT / ".venv" / "bin" / "python")
    figures: dict[str, list[float]] = {"baseline": [], "current": []}
    drifts = {"baseline": 0, "current": 0}
    for index in range(args.rounds):
        order = [("baseline", args.baseline), ("current", ROOT)]
        for label, tree in order if index % 2 == 0 else order[::-1]:
            median, drifted = one(tree, args.template, args.gradings, python)
            figures[label].append(median)
            drifts[label] += drifted
    baseline, current = (statistics.median(figures[k]) for k in ("baseline", "current"))
    result = {
        "template": args.template,
        "baseline_s": round(baseline, 3),
        "current_s": round(current, 3),
        "ratio": round(current / baseline, 3),
        "rounds": {k: [round(v, 3) for v in vs] for k, vs in figures.items()},
        "canary_drifts": drifts,  # gradings that had to recalibrate (their wall time includes it)
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{args.template}: baseline {baseline:.2f} s, current {current:.2f} s, "
            f"ratio {current / baseline:.3f} (rounds {result['rounds']}, "
            f"load {result['load_average']})"
        )


if __name__ == "__main__":
    main()
