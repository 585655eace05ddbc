"""Completion time as time to a pass, censored at the time limit: a Cox model.

Most trials end at the time limit without passing, so completion time is censored: a linear
model of PAR minutes (limit for every failed trial) treats the ceiling as an observed time. The
pre-registered choice is a Cox proportional-hazards model of the time until a trial passes:

- time: the time taken for a passed trial; the time limit otherwise (a failed or timed-out
  trial never passed within the limit, so it is censored there);
- covariates: AI and period (period 1 the reference); baseline hazards stratified by task (each
  task has its own time profile); Efron ties;
- standard errors robust to clustering within participants (statsmodels ``PHReg`` with
  ``groups``), in place of a frailty term.

A hazard ratio above 1 means trials with the assistant pass sooner (or more often within the
limit) than trials without it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from study.results.glmm import wald

Row = dict[str, Any]


def time_model(rows: Sequence[Row], *, min_participants: int) -> dict[str, Any]:
    """Fit the Cox model to graded trials of participants with trials in both conditions."""
    import pandas as pd
    from statsmodels.duration.hazard_regression import PHReg

    graded = [
        r
        for r in rows
        if r.get("overall_pass") is not None
        and r.get("completion_time_s") is not None
        and r.get("ai") is not None
    ]
    conditions: dict[str, set[bool]] = {}
    for r in graded:
        conditions.setdefault(r["participant"], set()).add(bool(r["ai"]))
    both = {pid for pid, seen in conditions.items() if len(seen) == 2}
    data = [r for r in graded if r["participant"] in both]
    events = sum(1 for r in data if r["overall_pass"] >= 0.5)
    result: dict[str, Any] = {
        "model": "Cox proportional hazards of the time to a pass, censored at the time limit",
        "n_participants": len(both),
        "n_trials": len(data),
        "n_events": events,
        "censored_share": (1 - events / len(data)) if data else None,
        "computed": False,
    }
    if len(both) < min_participants:
        result["reason"] = (
            f"needs at least {min_participants} participants with graded trials in both "
            f"conditions (have {len(both)})"
        )
        return result
    if events == 0:
        result["reason"] = "no trial passed, so there is no time to a pass to model"
        return result
    frame = pd.DataFrame(
        {
            "time": [
                r["completion_time_s"] / 60
                if r["overall_pass"] >= 0.5
                else r.get("time_limit_min") or r["completion_time_s"] / 60
                for r in data
            ],
            "event": [int(r["overall_pass"] >= 0.5) for r in data],
            "ai": [int(bool(r["ai"])) for r in data],
            "period": [int(r["period"]) for r in data],
            "task": [str(r["template"]) for r in data],
            "pid": [str(r["participant"]) for r in data],
        }
    )
    periods = pd.get_dummies(frame["period"], prefix="period", drop_first=True).astype(float)
    exog = pd.concat([frame[["ai"]].astype(float), periods], axis=1)
    if np.linalg.matrix_rank(exog.to_numpy()) < exog.shape[1]:
        result["reason"] = (
            "the AI condition coincides with the periods: there is no counterbalancing"
        )
        return result
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = PHReg(
                frame["time"].to_numpy(),
                exog.to_numpy(),
                status=frame["event"].to_numpy(),
                strata=frame["task"].to_numpy(),
                ties="efron",
            ).fit(groups=frame["pid"].to_numpy())
            b, se = float(fit.params[0]), float(fit.bse[0])
        except (ValueError, np.linalg.LinAlgError) as exc:
            result["reason"] = f"could not be fitted ({exc})"
            return result
    if not (math.isfinite(b) and math.isfinite(se)) or se <= 0:
        result["reason"] = "could not be fitted (the AI effect is not bounded by the data)"
        return result
    ratio, low, high, p = wald(b, se)
    result.update(
        computed=True,
        hazard_ratio=ratio,
        ci_low=low,
        ci_high=high,
        p=p,
        n_tasks=int(frame["task"].nunique()),
        warnings=sorted({str(w.message).splitlines()[0] for w in caught})[:3],
    )
    return result
