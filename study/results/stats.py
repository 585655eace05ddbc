"""Paired statistics of the within-subject contrast (AI assistant on vs off), with captions.

Pre-registered plan: shared/notes/counterbalancing.md section 6. All functions are pure: they
take the trial-level rows of ``study.results.dashboard.trial_table`` and return plain JSON.

Definitions (also in the captions and the dashboard's notes):

- **Contrast.** ``ai`` is true for every arm whose AI mode is not "none". Differences are always
  *AI minus no AI*.
- **Per-participant means.** Each participant contributes the mean of their trials in each
  condition; only participants with a value in *both* conditions enter a paired test.
- **Paired t-test** (``scipy.stats.ttest_rel``) with **d_z** = mean difference / SD of the
  differences (what drives paired power) and, for comparison with between-subject studies,
  **d_av** = mean difference / mean of the two conditions' SDs (Lakens 2013).
- **Wilcoxon signed-rank** (``scipy.stats.wilcoxon`` with ``zero_method="pratt"``: zero
  differences are ranked with the others and then dropped, so they still shift the ranks of
  the rest instead of vanishing; the p-value by scipy's default method for the sample).
- **Primary outcome**: overall pass per trial, modelled by a logistic mixed model (AI + period
  + task, random intercept per participant, maximum likelihood by Gauss-Hermite quadrature;
  GEE logit with participant clusters when it cannot be fitted): ``study.results.glmm``. The
  odds ratio with its 95 % interval; the GEE is also shown as a robustness check.
- **McNemar (exact)**, a robustness check of the primary outcome at the participant level: a
  participant *passes a condition* when at least half of their trials in it passed (``mean >=
  0.5``; in the default design of two trials per condition this is "passed at least one"). It
  throws away the trial-level information, so it has less power than the model.
- **Secondary outcomes**: partial pass, completion time (PAR-N, N the arms' time limit),
  NASA-TLX, confidence, each with a paired t-test. The **Holm** family adjusts them together,
  except that completion time enters through its censored model (below): its paired t-test on
  capped minutes is a description only.
- **Completion time** (``study.results.survival``): a Cox model of the time to a pass,
  censored at the time limit (most trials never pass), AI + period, baseline hazard per task,
  standard errors clustered by participant. Models are fitted only with at least
  ``MIN_MIXED_PARTICIPANTS`` participants who have both conditions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from evaluation.grading import par_label
from study.results.glmm import MIN_PARTICIPANTS, analysable, order_effects, pass_models
from study.results.survival import time_model

Row = dict[str, Any]
MIN_MIXED_PARTICIPANTS = MIN_PARTICIPANTS
TIME_OUTCOME = "completion_time_s"
ALPHA = 0.05

# (key, label, unit, scale factor for captions, lower is better)
SECONDARY = (
    ("partial_pass", "Partial pass (share of checks passed)", "percentage points", 100.0, False),
    ("completion_time_s", "Completion time ({par})", "min", 1 / 60, True),
    ("nasa_tlx", "Workload (raw NASA-TLX, 0-100)", "points", 1.0, True),
    ("confidence", "Confidence in the solution (1-7)", "points", 1.0, False),
)


def _num(value: Any) -> float | None:
    """A JSON-safe float (NaN and infinities become None)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def fmt_p(p: float | None) -> str:
    if p is None:
        return "p not computable"
    if p < 0.001:
        return "p < .001"
    return "p = " + f"{p:.3f}".lstrip("0")


def paired_values(rows: Sequence[Row], outcome: str) -> list[tuple[str, float, float]]:
    """(participant, mean without AI, mean with AI) for participants with both conditions."""
    values: dict[str, dict[bool, list[float]]] = defaultdict(lambda: {False: [], True: []})
    for row in rows:
        value = row.get(outcome)
        if value is None or row.get("ai") is None:
            continue
        values[row["participant"]][bool(row["ai"])].append(float(value))
    return [
        (pid, float(np.mean(by[False])), float(np.mean(by[True])))
        for pid, by in sorted(values.items())
        if by[False] and by[True]
    ]


def paired_test(without_ai: Sequence[float], with_ai: Sequence[float]) -> dict[str, Any]:
    """Paired t-test, d_z, d_av, 95 % CI of the mean difference and Wilcoxon signed-rank."""
    x0, x1 = np.asarray(without_ai, dtype=float), np.asarray(with_ai, dtype=float)
    n = len(x0)
    result: dict[str, Any] = {"n": n, "computed": False}
    if n < 2:
        result["reason"] = f"needs at least 2 participants with both conditions (have {n})"
        return result
    diff = x1 - x0
    mean_diff, sd_diff = float(diff.mean()), float(diff.std(ddof=1))
    sd0, sd1 = float(x0.std(ddof=1)), float(x1.std(ddof=1))
    result.update(
        computed=True,
        mean_without_ai=_num(x0.mean()),
        mean_with_ai=_num(x1.mean()),
        mean_diff=_num(mean_diff),
        sd_diff=_num(sd_diff),
        d_z=_num(mean_diff / sd_diff) if sd_diff > 0 else None,
        d_av=_num(mean_diff / ((sd0 + sd1) / 2)) if sd0 + sd1 > 0 else None,
        df=n - 1,
    )
    if sd_diff > 0:
        t = sps.ttest_rel(x1, x0)
        half = float(sps.t.ppf(1 - ALPHA / 2, n - 1)) * sd_diff / math.sqrt(n)
        result.update(
            t=_num(t.statistic),
            p_t=_num(t.pvalue),
            ci_low=_num(mean_diff - half),
            ci_high=_num(mean_diff + half),
        )
    else:  # every participant differs by the same amount: t is undefined
        result.update(t=None, p_t=None, ci_low=_num(mean_diff), ci_high=_num(mean_diff))
    if np.any(diff != 0):
        w = sps.wilcoxon(x1, x0, zero_method="pratt")
        result.update(wilcoxon_w=_num(w.statistic), p_wilcoxon=_num(w.pvalue))
    else:
        result.update(wilcoxon_w=None, p_wilcoxon=None)
    return result


def mcnemar_exact(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """Exact McNemar test on (passed without AI, passed with AI) pairs."""
    both = sum(1 for a, b in pairs if a and b)
    only_without = sum(1 for a, b in pairs if a and not b)
    only_with = sum(1 for a, b in pairs if b and not a)
    neither = sum(1 for a, b in pairs if not a and not b)
    table = [[both, only_without], [only_with, neither]]  # rows: without AI pass / fail
    n = len(pairs)
    result: dict[str, Any] = {
        "n": n,
        "table": table,
        "passed_without_ai": both + only_without,
        "passed_with_ai": both + only_with,
        "only_with_ai": only_with,
        "only_without_ai": only_without,
    }
    if n == 0:
        result.update(computed=False, reason="no participant has results in both conditions")
        return result
    test = mcnemar(np.array(table), exact=True)
    result.update(
        computed=True,
        statistic=_num(test.statistic),
        p=_num(test.pvalue),
        risk_difference=_num((only_with - only_without) / n),
    )
    return result


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values; None (not computed) stays None and is not counted."""
    present = [i for i, p in enumerate(pvalues) if p is not None]
    adjusted: list[float | None] = [None] * len(pvalues)
    if present:
        _, corrected, _, _ = multipletests([pvalues[i] for i in present], method="holm")
        for i, value in zip(present, corrected, strict=True):
            adjusted[i] = _num(value)
    return adjusted


def _participants(n: int) -> str:
    return f"{n} participant" if n == 1 else f"{n} participants"


def _direction(diff: float, lower_is_better: bool) -> str:
    if lower_is_better:
        return "less" if diff < 0 else "more"
    return "higher" if diff > 0 else "lower"


def secondary_caption(label: str, unit: str, scale: float, lower: bool, r: dict[str, Any]) -> str:
    if not r.get("computed"):
        return f"{label}: not computed — {r.get('reason', 'no data')}."
    diff = r["mean_diff"] * scale
    amount = f"{abs(diff):.1f} {unit}"
    word = _direction(diff, lower)
    text = (
        f"{label}: on average {amount} {word} with the AI assistant than without it"
        if diff
        else f"{label}: no average difference between the conditions"
    )
    if r.get("ci_low") is not None:
        text += (
            f" (95 % CI of the difference, AI minus no AI: {r['ci_low'] * scale:.1f} to "
            f"{r['ci_high'] * scale:.1f} {unit})"
        )
    parts = []
    if r.get("t") is not None:
        parts.append(f"Paired t({r['df']}) = {r['t']:.2f}, {fmt_p(r['p_t'])}")
    if r.get("p_holm") is not None:
        parts.append(f"Holm-adjusted {fmt_p(r['p_holm'])}")
    if r.get("d_z") is not None:
        parts.append(f"d_z = {r['d_z']:.2f} (d_av = {r['d_av']:.2f})")
    if r.get("p_wilcoxon") is not None:
        parts.append(f"Wilcoxon signed-rank {fmt_p(r['p_wilcoxon'])}")
    parts.append(f"n = {_participants(r['n'])}")
    return text + ". " + "; ".join(parts) + "."


def primary_caption(r: dict[str, Any]) -> str:
    """The McNemar robustness check of the primary outcome."""
    if not r.get("computed"):
        return (
            f"Overall pass, McNemar robustness check: not computed — {r.get('reason', 'no data')}."
        )
    n = r["n"]
    return (
        f"Robustness check (participant level, McNemar): of {_participants(n)} who worked in "
        "both conditions, "
        f"{r['passed_with_ai']} passed at least half of their tasks with the AI assistant and "
        f"{r['passed_without_ai']} without it. {r['only_with_ai']} passed only with the "
        f"assistant and {r['only_without_ai']} only without it (exact McNemar test, "
        f"{fmt_p(r['p'])}; risk difference {r['risk_difference'] * 100:+.0f} points)."
    )


def pass_model(rows: Sequence[Row]) -> dict[str, Any]:
    """The primary outcome's model on graded trials of participants with both conditions:
    the GLMM of ``study.results.glmm`` (GEE logit when it cannot be fitted), and the GEE as a
    robustness check."""
    import pandas as pd

    data = [
        {
            "y": int(row["overall_pass"] >= 0.5),
            "ai": int(bool(row["ai"])),
            "period": int(row["period"]),
            "task": str(row["template"]),
            "pid": str(row["participant"]),
        }
        for row in rows
        if row.get("overall_pass") is not None and row.get("ai") is not None
    ]
    columns = ("y", "ai", "period", "task", "pid")
    frame, reason = analysable(pd.DataFrame(data, columns=columns))
    result: dict[str, Any] = {
        "outcome": "overall_pass",
        "n_participants": int(frame["pid"].nunique()),
        "n_trials": len(frame),
        "n_tasks": int(frame["task"].nunique()),
        "computed": False,
    }
    if reason is not None:
        result["reason"] = reason
        return result
    fits = pass_models(frame)
    primary = fits["primary"]
    if "error" not in fits["glmm"]:
        sessions = {int(row["period"]): int(row["session"]) for row in rows if row.get("session")}
        result["order"] = order_effects(frame, fits["glmm"], sessions)
    result["glmm"] = {k: v for k, v in fits["glmm"].items() if k != "covariance"}
    result["gee"] = fits["gee"]
    if "error" in primary:
        result["reason"] = f"neither model could be fitted ({fits['glmm']['error']})"
        return result
    result.update(
        computed=True,
        method=primary["method"],
        odds_ratio=_num(primary["odds_ratio"]),
        ci_low=_num(primary["ci_low"]),
        ci_high=_num(primary["ci_high"]),
        p=_num(primary["p"]),
        task_effects=any(t.startswith("task_") for t in primary["terms"]),
    )
    if "error" in fits["glmm"]:
        result["fallback_reason"] = fits["glmm"]["error"]
    return result


def _or_text(r: dict[str, Any]) -> str:
    return (
        f"odds ratio {r['odds_ratio']:.2f} (95 % CI {r['ci_low']:.2f} to {r['ci_high']:.2f}, "
        f"{fmt_p(r['p'])})"
    )


def pass_model_caption(r: dict[str, Any]) -> str:
    if not r.get("computed"):
        return f"Overall pass (primary outcome): not modelled — {r['reason']}."
    terms = "AI + period + task" if r["task_effects"] else "AI + period"
    if r["method"] == "glmm":
        model = (
            f"logistic mixed model ({terms}, random intercept per participant, maximum likelihood)"
        )
    else:
        model = (
            f"GEE logit ({terms}, participant clusters, robust standard errors), used because "
            f"the logistic mixed model could not be fitted: {r['fallback_reason']}"
        )
    text = (
        f"Overall pass (primary outcome), {r['n_trials']} graded trials of "
        f"{_participants(r['n_participants'])} on {r['n_tasks']} tasks, {model}: the AI "
        f"assistant's {_or_text(r)}."
    )
    if r["method"] == "glmm" and "error" not in r["gee"]:
        text += f" Robustness check, GEE logit with participant clusters: {_or_text(r['gee'])}."
    return text


def time_caption(r: dict[str, Any]) -> str:
    if not r.get("computed"):
        return f"Completion time (censored at the time limit): not modelled — {r['reason']}."
    holm_text = f"; Holm-adjusted {fmt_p(r['p_holm'])}" if r.get("p_holm") is not None else ""
    return (
        f"Completion time, censored at the time limit ({r['n_trials']} graded trials of "
        f"{_participants(r['n_participants'])} on {r['n_tasks']} tasks, "
        f"{r['censored_share'] * 100:.0f} % without a pass): Cox model of the time to a pass "
        "(AI + period, baseline hazard per task, standard errors clustered by participant). "
        f"Hazard ratio of the AI assistant {r['hazard_ratio']:.2f} (95 % CI "
        f"{r['ci_low']:.2f} to {r['ci_high']:.2f}, {fmt_p(r['p'])}{holm_text}); above 1 means "
        "passing sooner with the assistant."
    )


def order_caption(r: dict[str, Any]) -> str:
    """Period, session and carry-over effects of the primary model (empty when not fitted)."""
    order = r.get("order")
    if not order:
        return ""

    def ci(e: dict[str, Any]) -> str:
        return f"{e['odds_ratio']:.2f} ({e['ci_low']:.2f} to {e['ci_high']:.2f})"

    parts = [f"period {e['period']} {ci(e)}" for e in order["periods"]]
    parts += [f"session {e['session']} {ci(e)}, {fmt_p(e['p'])}" for e in order["sessions"]]
    text = (
        "Order effects in the primary model (odds ratios against period 1 and session 1, 95 % "
        "CI): " + ("; ".join(parts) if parts else "none estimable") + "."
    )
    carry = order["carryover"]
    if "error" in carry:
        text += f" Carry-over could not be tested: {carry['error']}."
    else:
        text += (
            " Carry-over (sensitivity model adding the previous period's condition): odds ratio "
            f"of AI in the previous period {ci(carry)}, {fmt_p(carry['p'])}."
        )
    return text


def paired_stats(rows: Sequence[Row]) -> dict[str, Any]:
    """Primary (the pass model; McNemar on participants as a robustness check), secondary
    family (paired t + Wilcoxon, Holm) and the completion-time model, each with a plain-language
    caption."""
    primary = pass_model(rows)
    primary["caption"] = pass_model_caption(primary)
    primary["order_caption"] = order_caption(primary)
    pairs = [(a >= 0.5, b >= 0.5) for _, a, b in paired_values(rows, "overall_pass")]
    mcnemar_result = mcnemar_exact(pairs)
    mcnemar_result["outcome"] = "overall_pass"
    mcnemar_result["caption"] = primary_caption(mcnemar_result)
    secondary = []
    par = par_label(r["time_limit_min"] for r in rows if r.get("time_limit_min"))
    for key, label, unit, _, lower in SECONDARY:
        label = label.format(par=par)
        values = paired_values(rows, key)
        result = paired_test([v[1] for v in values], [v[2] for v in values])
        result.update(outcome=key, label=label, unit=unit, lower_is_better=lower)
        secondary.append(result)
    # The Holm family: for completion time its censored model (the paired t-test on capped
    # minutes stays as a description), for the other outcomes their paired t-test.
    time = time_model(rows, min_participants=MIN_MIXED_PARTICIPANTS)
    family = [time if r["outcome"] == TIME_OUTCOME else r for r in secondary]
    pvalues = [m.get("p") if m is time else m.get("p_t") for m in family]
    for result in secondary:
        result["p_holm"] = None
    for member, adjusted in zip(family, holm(pvalues), strict=True):
        member["p_holm"] = adjusted
    for result, (_, _label, unit, scale, lower) in zip(secondary, SECONDARY, strict=True):
        result["caption"] = secondary_caption(result["label"], unit, scale, lower, result)
    time["caption"] = time_caption(time)
    return {
        "contrast": "AI assistant on minus off",
        "n_paired": mcnemar_result["n"],
        "primary": primary,
        "mcnemar": mcnemar_result,
        "secondary": secondary,
        "time": time,
    }
