"""Calibration of the primary analysis: does the platform's pass model recover a known AI
effect inside its 95 % interval at the nominal rate, and reject a true null about 5 % of the
time? Synthetic crossovers (``study.results.synthetic``) go through the same code as the
results dashboard (``study.results.glmm.pass_models``).

    .venv/bin/python bench/analysis_coverage.py --replications 200 --participants 45

Prints one JSON object: coverage and rejections with their Wilson intervals, fallbacks to the
GEE, and the time per fit. Needs no database.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.proportions import wilson
from study.results.glmm import pass_models
from study.results.synthetic import crossover_trials


def wilson_95(k: int, n: int) -> list[float]:
    low, high = wilson(k, n)
    return [round(low or 0.0, 4), round(high or 1.0, 4)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--participants", type=int, default=45)
    parser.add_argument("--log-odds", type=float, default=1.0, help="The injected AI effect.")
    parser.add_argument("--sigma", type=float, default=1.0, help="Participant SD (log-odds).")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    if args.replications < 1 or args.participants < 10:
        parser.error("--replications must be positive and --participants at least 10.")
    rng = np.random.default_rng(args.seed)
    covered = rejected = fallbacks = 0
    start = time.perf_counter()
    for _ in range(args.replications):
        effect = pass_models(crossover_trials(rng, args.participants, args.log_odds, args.sigma))
        null = pass_models(crossover_trials(rng, args.participants, 0.0, args.sigma))
        for result in (effect["primary"], null["primary"]):
            fallbacks += result["method"] != "glmm"
        truth = math.exp(args.log_odds)
        covered += effect["primary"]["ci_low"] <= truth <= effect["primary"]["ci_high"]
        rejected += null["primary"]["p"] < 0.05
    elapsed = time.perf_counter() - start
    n = args.replications
    print(
        json.dumps(
            {
                "replications": n,
                "participants": args.participants,
                "injected_odds_ratio": round(math.exp(args.log_odds), 4),
                "coverage": covered / n,
                "coverage_wilson_95": wilson_95(covered, n),
                "null_rejections": rejected / n,
                "null_rejections_wilson_95": wilson_95(rejected, n),
                "gee_fallbacks": fallbacks,
                "seconds_per_fit": round(elapsed / (2 * n), 4),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
