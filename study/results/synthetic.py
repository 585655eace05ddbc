"""Synthetic trial tables for checking the analysis: a counterbalanced crossover with a known
AI effect, for the tests of the primary model and ``bench/analysis_coverage.py``.

Each participant does four of ``tasks`` tasks in one of the four sequences (ABBA, BAAB, ABAB,
BABA, in turn), with a random intercept ~ N(0, sigma^2), task effects spread evenly over
[-0.8, 0.8] and a small period trend on the log-odds scale.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

SEQUENCES = ("ABBA", "BAAB", "ABAB", "BABA")


def crossover_trials(
    rng: np.random.Generator, n: int, log_odds: float, sigma: float, tasks: int = 9
) -> pd.DataFrame:
    """Columns pid, task, period, ai, y: ``n`` participants, AI log-odds ratio ``log_odds``."""
    effects = np.linspace(-0.8, 0.8, tasks)
    rows = []
    for p in range(n):
        u = rng.normal(0.0, sigma)
        for period, (letter, task) in enumerate(
            zip(SEQUENCES[p % 4], rng.choice(tasks, 4, replace=False), strict=True), start=1
        ):
            ai = int(letter == "B")
            eta = -0.3 + log_odds * ai + 0.1 * (period - 2.5) + effects[task] + u
            y = int(rng.random() < 1 / (1 + math.exp(-eta)))
            rows.append({"pid": f"p{p}", "task": f"t{task}", "period": period, "ai": ai, "y": y})
    return pd.DataFrame(rows)
