"""Grading speed of this checkout against another one, in one run (not a test; run by hand):

    git worktree add --detach /tmp/baseline <commit>
    .venv/bin/python bench/grading_regression.py --baseline /tmp/baseline \
        [--template sde-binary-palindromes] [--rounds 3] [--gradings 3] [--json]

Each round starts one process per checkout, baseline and current in turn (alternating which
goes first), so both see the same machine load. A process calibrates the template once (not
timed) and then times ``--gradings`` gradings of the efficient reference; a round's figure is
their median. The result is the ratio of the medians over rounds, current / baseline
(issue 10's target: at most 1.10).
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
from evaluation.grading import grade
from evaluation.instances import get_instance
from evaluation.sandbox import get_sandbox

instance = get_instance(os.environ["TEMPLATE"], 1)
sandbox = get_sandbox("bwrap")
calibration = calibrate(instance, sandbox, rounds=3)
source = instance.references["efficient"].encode()
walls = []
for _ in range(int(os.environ["GRADINGS"])):
    started = time.perf_counter()
    report = grade(instance, source, sandbox=sandbox, calibration=calibration)
    walls.append(time.perf_counter() - started)
    assert report["overall_pass"], report
print(json.dumps({"median_s": statistics.median(walls), "walls": walls}))
"""


def one(tree: Path, template: str, gradings: int, python: str) -> float:
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
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["median_s"])


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
    for index in range(args.rounds):
        order = [("baseline", args.baseline), ("current", ROOT)]
        for label, tree in order if index % 2 == 0 else order[::-1]:
            figures[label].append(one(tree, args.template, args.gradings, python))
    baseline, current = (statistics.median(figures[k]) for k in ("baseline", "current"))
    result = {
        "template": args.template,
        "baseline_s": round(baseline, 3),
        "current_s": round(current, 3),
        "ratio": round(current / baseline, 3),
        "rounds": {k: [round(v, 3) for v in vs] for k, vs in figures.items()},
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
