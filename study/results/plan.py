"""The study's analysis plan: what the dashboard computes, written down before the data.

``analysis_plan(study)`` is plain JSON built from the study's design settings and the analysis
code's own constants, so it always says what the code does. Every configuration snapshot freezes
the plan as it was when participants joined under it; the dashboard runs the current code and
shows the current plan; the package exports both (``analysis_plan.json``). ``deviations`` lists,
in sentences, where a run departed from the plan: a model that could not be fitted or fell
back, terms left out, and participants who joined under a plan other than the one that ran
(compared by ``plan_digest``, which covers the analysis and leaves out the design settings,
such as the target, that do not change it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from study.assignment.services import study_sequences
from study.models import Study
from study.results.glmm import NODES
from study.results.stats import ALPHA, MIN_MIXED_PARTICIPANTS, SECONDARY

PLAN_VERSION = "1.0"


def analysis_plan(study: Study) -> dict[str, Any]:
    conditions = sorted(study.arms.values_list("condition", flat=True))
    try:
        sequences = list(study_sequences(study, conditions))
    except ValueError:
        sequences = []
    return {
        "version": PLAN_VERSION,
        "contrast": "AI minus no AI: every arm whose AI mode is not 'none' against the others",
        "alpha": ALPHA,
        "tests": "two-sided",
        "design": {
            "conditions": conditions,
            "sessions": study.sessions,
            "trials_per_session": study.trials_per_session,
            "sequence_set": study.sequence_set,
            "sequences": sequences,
            "balance_priority": study.balance_priority,
            "target_participants": study.target_participants,
        },
        "primary": {
            "outcome": "overall_pass (every hidden test and both efficiency checks), per trial",
            "model": "logistic mixed model: pass ~ ai + period + task + (1 | participant)",
            "estimation": f"maximum likelihood, Gauss-Hermite quadrature with {NODES} nodes",
            "effect": "odds ratio of the AI assistant with its 95 % Wald interval",
            "fallback": "GEE logit with participant clusters (exchangeable, robust standard "
            "errors) when the mixed model cannot be fitted",
            "terms_dropped_when_collinear": "task",
            "task_effects": "fixed, not a random intercept as the project's notes pre-registered: "
            "crossed random effects have no exact quadrature, and a few tasks estimate a task "
            "variance poorly",
            "robustness": [
                "GEE logit with participant clusters",
                "exact McNemar test on participants (a condition passed when at least half "
                "of its trials passed)",
            ],
        },
        "secondary": {
            "outcomes": [key for key, *_ in SECONDARY],
            "test": "paired t-test on per-participant condition means (participants with both "
            "conditions)",
            "effect_sizes": ["d_z", "d_av"],
            "robustness": "Wilcoxon signed-rank, Pratt's treatment of zero differences",
            "correction": "Holm across the secondary family; completion time enters through "
            "its Cox model, its paired t-test on capped minutes is descriptive",
        },
        "completion_time": {
            "model": "Cox proportional hazards of the time to a pass: ai + period, baseline "
            "hazard per task, Efron ties, standard errors clustered by participant",
            "censoring": "a trial without a pass is censored at its time limit",
            "effect": "hazard ratio of the AI assistant with its 95 % interval",
        },
        "order_effects": {
            "period": "odds ratios of periods against period 1 in the primary model",
            "session": "mean of a session's period log-odds against session 1's",
            "carryover": "sensitivity model: the primary model plus the previous period's "
            "condition",
        },
        "exclusions": [
            "participants excluded by a researcher",
            "trials that have not ended, and outcomes whose grading has not finished",
            "paired tests: participants with results in both conditions only",
            f"models: fitted only with at least {MIN_MIXED_PARTICIPANTS} participants with "
            "graded trials in both conditions",
        ],
    }


def plan_digest(plan: dict[str, Any]) -> str:
    """A short hash of the analysis a plan describes (its design block left out)."""
    analysis = {k: v for k, v in plan.items() if k != "design"}
    return hashlib.sha256(json.dumps(analysis, sort_keys=True).encode()).hexdigest()[:12]


def deviations(
    stats: dict[str, Any], current: dict[str, Any], digests: Iterable[str | None]
) -> list[str]:
    """Where the analysis of ``stats``, run under the ``current`` plan, departed from it.
    ``digests``: the ``plan_digest`` of each analysed trial's configuration snapshot (None for
    snapshots from before plans existed)."""
    found: list[str] = []
    distinct = {d for d in digests if d is not None}
    if distinct - {plan_digest(current)}:
        found.append(
            f"Participants joined under {len(distinct)} version(s) of the analysis plan, not "
            "all of them the one this analysis ran (the configuration or the analysis code "
            "changed after they joined)."
        )
    primary = stats["primary"]
    if not primary.get("computed"):
        found.append(f"The primary model was not fitted: {primary['reason']}.")
    else:
        if primary["method"] != "glmm":
            found.append(
                "The logistic mixed model could not be fitted "
                f"({primary['fallback_reason']}); the GEE logit took its place, as planned."
            )
        if not primary["task_effects"] and primary["n_tasks"] > 1:
            found.append(
                "Task effects were left out of the primary model: the tasks coincide with "
                "periods or conditions."
            )
        order = primary.get("order")
        if order is None:
            found.append("Order effects and carry-over were not estimated (no mixed model).")
        elif "error" in order["carryover"]:
            found.append(f"Carry-over could not be tested: {order['carryover']['error']}.")
        if "error" in primary.get("gee", {}):
            found.append(
                f"The GEE robustness check could not be fitted: {primary['gee']['error']}."
            )
    time = stats["time"]
    if not time.get("computed"):
        found.append(f"The completion-time model was not fitted: {time['reason']}.")
    for result in stats["secondary"]:
        if not result.get("computed"):
            found.append(f"{result['label']}: not computed ({result.get('reason', 'no data')}).")
        elif result.get("p_t") is None:
            found.append(f"{result['label']}: the paired t-test was undefined (no variation).")
    return found
