"""The primary outcome's model: overall pass per trial, AI assistant on vs off.

A logistic mixed model (GLMM) with a random intercept per participant, fitted by maximum
likelihood with Gauss-Hermite quadrature (the participants' likelihoods are independent
one-dimensional integrals, so quadrature is exact up to the number of nodes):

    logit P(pass) = b0 + b_ai * ai + period effects + task effects + u_participant,
    u ~ Normal(0, sigma^2)

Tasks are fixed effects, not a second random intercept: crossed participant and task effects
have no one-dimensional integral to take by quadrature, and a handful of tasks gives a poorly
estimated task variance anyway (the project's notes pre-registered ``(1 | task)``; the analysis
plan states this choice). The estimate is the conditional (within-participant) odds ratio
exp(b_ai), with a Wald 95 % interval from the inverse of the observed information.

When the GLMM cannot be fitted (the optimiser does not reach a vanishing gradient, the
information matrix is singular, or the estimate runs off to separation), the fallback is a GEE
logit with participant clusters (exchangeable working correlation, robust standard errors),
whose odds ratio is population-averaged; the result says which model was used and why. Both
are always reported, so the GEE also serves as a robustness check.

This module imports only numpy, scipy, pandas and statsmodels: the export package ships its
source as ``analysis/primary_model.py``, so the primary model can be rerun from the package.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import stats as sps
from scipy.special import logsumexp

NODES = 30  # Gauss-Hermite nodes; 20-30 are plenty for a random intercept
MAX_LOG_ODDS = 8.0  # |b_ai| beyond this means separation: the data cannot bound the effect
MAX_GRADIENT = 1e-3  # the fit counts as converged when no score component exceeds this
MIN_PARTICIPANTS = 10  # with both conditions; fewer and the model is not fitted
Z = float(sps.norm.ppf(0.975))


def design_matrix(frame: pd.DataFrame, extra: tuple[str, ...] = ()) -> tuple[np.ndarray, list[str]]:
    """Intercept, ai, the ``extra`` columns, period dummies (first period as reference) and
    task dummies (first task as reference) when there is more than one task and they are not
    collinear with the rest."""
    base = pd.DataFrame({"Intercept": 1.0, "ai": frame["ai"].astype(float)}, index=frame.index)
    for name in extra:
        base[name] = frame[name].astype(float)
    periods = pd.get_dummies(frame["period"].astype(int), prefix="period", drop_first=True)
    columns = [base, periods.astype(float)]
    tasks = pd.get_dummies(frame["task"].astype(str), prefix="task", drop_first=True)
    candidate = pd.concat([*columns, tasks.astype(float)], axis=1)
    if (
        frame["task"].nunique() > 1
        and np.linalg.matrix_rank(candidate.to_numpy()) == candidate.shape[1]
    ):
        matrix = candidate
    else:
        matrix = pd.concat(columns, axis=1)
    return matrix.to_numpy(), list(matrix.columns)


def marginal_loglik(
    theta: np.ndarray, x: np.ndarray, y: np.ndarray, groups: np.ndarray, nodes: int = NODES
) -> float:
    """Log-likelihood of ``theta`` = (coefficients..., log sigma), the random intercept
    integrated out by Gauss-Hermite quadrature. ``groups``: participant index per row."""
    return _loglik_and_gradient(theta, x, y, groups, nodes)[0]


def _loglik_and_gradient(
    theta: np.ndarray, x: np.ndarray, y: np.ndarray, groups: np.ndarray, nodes: int = NODES
) -> tuple[float, np.ndarray]:
    beta, log_sigma = theta[:-1], theta[-1]
    points, weights = np.polynomial.hermite.hermgauss(nodes)
    u = math.sqrt(2.0) * math.exp(log_sigma) * points  # N(0, sigma^2) at the nodes
    eta = (x @ beta)[:, None] + u[None, :]  # rows x nodes
    per_row = y[:, None] * eta - np.logaddexp(0.0, eta)
    per_group = np.zeros((int(groups.max()) + 1, nodes))
    np.add.at(per_group, groups, per_row)
    joint = per_group + np.log(weights / math.sqrt(math.pi))[None, :]
    per_participant = logsumexp(joint, axis=1)
    # Gradient: each node weighted by its posterior share within the participant.
    posterior = np.exp(joint - per_participant[:, None])[groups]  # rows x nodes
    residual = y[:, None] - 1.0 / (1.0 + np.exp(-eta))
    weighted = (posterior * residual).sum(axis=1)
    grad_beta = x.T @ weighted
    grad_log_sigma = float((posterior * residual * u[None, :]).sum())
    return float(per_participant.sum()), np.append(grad_beta, grad_log_sigma)


def _hessian(gradient: Any, theta: np.ndarray, step: float = 1e-5) -> np.ndarray:
    """Central differences of the analytic ``gradient`` at ``theta``, symmetrised."""
    n = len(theta)
    h = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = step
        h[:, j] = (gradient(theta + e) - gradient(theta - e)) / (2 * step)
    return (h + h.T) / 2


class FitError(ValueError):
    """The model cannot be fitted to these data (the message says why)."""


def fit_glmm(frame: pd.DataFrame, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Fit the GLMM to ``frame`` (columns pid, task, period, ai, y, and the ``extra``
    covariates). Raises ``FitError``. ``coefficients``: name -> (estimate, standard error);
    ``covariance``: of the coefficients, in ``terms`` order."""
    x, names = design_matrix(frame, extra)
    if np.linalg.matrix_rank(x) < x.shape[1]:
        raise FitError("the terms are not identifiable from this design")
    y = frame["y"].to_numpy(dtype=float)
    groups = pd.factorize(frame["pid"])[0]
    start = np.zeros(x.shape[1] + 1)

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = _loglik_and_gradient(theta, x, y, groups)
        return -value, -gradient

    result = optimize.minimize(negative, start, jac=True, method="BFGS", options={"gtol": 1e-5})
    if not np.all(np.isfinite(result.x)):
        raise FitError("the optimiser did not reach finite estimates")
    theta = result.x
    # BFGS may stop on lost precision at the optimum; what matters is a vanishing gradient.
    if float(np.max(np.abs(negative(theta)[1]))) > MAX_GRADIENT:
        raise FitError("the optimiser did not converge")
    ai = names.index("ai")
    if abs(theta[ai]) > MAX_LOG_ODDS:
        raise FitError("the AI effect is not bounded by the data (separation)")
    hessian = _hessian(lambda t: negative(t)[1], theta)
    try:
        covariance = np.linalg.inv(hessian)
    except np.linalg.LinAlgError as exc:
        raise FitError("the information matrix is singular") from exc
    variance = float(covariance[ai, ai])
    if not math.isfinite(variance) or variance <= 0:
        raise FitError("the information matrix is not positive definite")
    se = math.sqrt(variance)
    beta_cov = covariance[:-1, :-1]
    return {
        "method": "glmm",
        "log_odds": float(theta[ai]),
        "se": se,
        "participant_sd": float(math.exp(theta[-1])),
        "converged": True,
        "loglik": float(-result.fun),
        "terms": names,
        "coefficients": {
            name: (float(theta[i]), math.sqrt(max(float(beta_cov[i, i]), 0.0)))
            for i, name in enumerate(names)
        },
        "covariance": beta_cov.tolist(),
    }


def wald(b: float, se: float) -> tuple[float, float, float, float]:
    """exp(b), its 95 % Wald interval and the two-sided p of a log-scale coefficient."""
    p = float(2 * sps.norm.sf(abs(b) / se)) if se > 0 else 1.0
    return math.exp(b), math.exp(b - Z * se), math.exp(b + Z * se), p


def _interval(b: float, se: float) -> dict[str, float]:
    ratio, low, high, p = wald(b, se)
    return {"odds_ratio": ratio, "ci_low": low, "ci_high": high, "p": p}


def order_effects(
    frame: pd.DataFrame, fit: dict[str, Any], sessions: dict[int, int]
) -> dict[str, Any]:
    """Period and session effects of a GLMM fit, as odds ratios against period 1 and session
    1 (a session's effect is the mean of its periods' log-odds minus session 1's), and the
    carry-over sensitivity model: the GLMM plus "AI in the previous period"."""
    names, cov = fit["terms"], np.asarray(fit["covariance"])
    periods = [
        {"period": int(name.split("_")[1]), **_interval(*fit["coefficients"][name])}
        for name in names
        if name.startswith("period_")
    ]
    by_session: dict[int, list[int]] = {}
    for period, session in sorted(sessions.items()):
        by_session.setdefault(session, []).append(period)
    session_rows = []
    first = min(by_session) if by_session else 1
    for session, members in sorted(by_session.items()):
        if session == first:
            continue
        c = np.zeros(len(names))
        for period in members:
            if f"period_{period}" in names:
                c[names.index(f"period_{period}")] += 1 / len(members)
        for period in by_session[first]:
            if f"period_{period}" in names:
                c[names.index(f"period_{period}")] -= 1 / len(by_session[first])
        b, se = (
            float(c @ np.array([fit["coefficients"][n][0] for n in names])),
            math.sqrt(max(float(c @ cov @ c), 0.0)),
        )
        session_rows.append({"session": session, **_interval(b, se)})
    # The condition of the period right before (not of the previous row: a trial may be
    # missing); period 1 has none (0), and a row whose previous period is unknown is dropped.
    condition = {
        (pid, period): ai
        for pid, period, ai in frame[["pid", "period", "ai"]].itertuples(index=False)
    }
    first_period = int(frame["period"].min())
    previous = [
        0.0 if period == first_period else condition.get((pid, period - 1))
        for pid, period in frame[["pid", "period"]].itertuples(index=False)
    ]
    with_carry = frame.assign(carryover=previous).dropna(subset=["carryover"])
    try:
        carry = fit_glmm(with_carry, extra=("carryover",))
        carryover: dict[str, Any] = _interval(*carry["coefficients"]["carryover"])
    except FitError as exc:
        carryover = {"error": str(exc)}
    return {"periods": periods, "sessions": session_rows, "carryover": carryover}


def fit_gee(frame: pd.DataFrame) -> dict[str, Any]:
    """GEE logit with participant clusters (exchangeable, robust SEs). Raises ``FitError``."""
    import statsmodels.api as sm

    x, names = design_matrix(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = sm.GEE(
                frame["y"].to_numpy(dtype=float),
                x,
                groups=pd.factorize(frame["pid"])[0],
                family=sm.families.Binomial(),
                cov_struct=sm.cov_struct.Exchangeable(),
            ).fit()
            ai = names.index("ai")
            log_odds, se = float(fit.params[ai]), float(fit.bse[ai])
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise FitError(f"the GEE could not be fitted ({exc})") from exc
    if not (math.isfinite(log_odds) and math.isfinite(se)) or abs(log_odds) > MAX_LOG_ODDS:
        raise FitError("the AI effect is not bounded by the data (separation)")
    return {"method": "gee", "log_odds": log_odds, "se": se, "terms": names}


def summarise(fit: dict[str, Any]) -> dict[str, Any]:
    """Odds ratio, 95 % Wald interval and p of a fit's AI coefficient."""
    return {**fit, **_interval(fit["log_odds"], fit["se"])}


def analysable(frame: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The trials the primary model uses (participants with graded trials in both conditions)
    and, when it cannot run on them, the reason. The dashboard and the exported script both
    apply it, so they fit the same frame."""
    conditions = frame.groupby("pid")["ai"].nunique()
    kept = frame[frame["pid"].isin(conditions[conditions == 2].index)].reset_index(drop=True)
    n = int(kept["pid"].nunique())
    if n < MIN_PARTICIPANTS:
        return kept, (
            f"needs at least {MIN_PARTICIPANTS} participants with graded trials in both "
            f"conditions (have {n})"
        )
    if kept["y"].nunique() < 2:
        return kept, "every trial has the same result, so there is no contrast to model"
    return kept, None


def pass_models(frame: pd.DataFrame) -> dict[str, Any]:
    """The primary model (GLMM, GEE when the GLMM cannot be fitted) and the GEE robustness
    check, each summarised, with the reason when one could not be fitted."""
    x, _ = design_matrix(frame)
    if np.linalg.matrix_rank(x) < x.shape[1]:
        reason = "the AI condition coincides with the periods: there is no counterbalancing"
        return {name: {"method": name, "error": reason} for name in ("primary", "glmm", "gee")}
    out: dict[str, Any] = {}
    for name, fitter in (("glmm", fit_glmm), ("gee", fit_gee)):
        try:
            out[name] = summarise(fitter(frame))
        except FitError as exc:
            out[name] = {"method": name, "error": str(exc)}
    primary = out["glmm"] if "error" not in out["glmm"] else out["gee"]
    return {"primary": primary, **out}


if __name__ == "__main__":  # the export package's analysis/primary_model.py
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    attempts = pd.read_csv(next((root / "data").glob("*_description-taskattempts_data.csv")))
    # A trial that ran out of time with nothing to grade failed; others wait for grading.
    nothing = attempts["status"].eq("expired") & attempts["grading_status"].eq("none")
    passed = attempts["pass_all"].astype(str).str.lower().map({"true": 1, "false": 0})
    attempts = attempts.assign(y=passed.where(~nothing, 0)).dropna(subset=["y"])
    data = pd.DataFrame(
        {
            "pid": attempts["participant_id"].astype(str),
            "task": attempts["task_id"].astype(str),
            "period": attempts["period"].astype(int),
            "ai": (attempts["ai_mode"] != "none").astype(int),
            "y": attempts["y"].astype(int),
        }
    )
    data, reason = analysable(data)
    print(data.groupby("ai")["y"].agg(["mean", "count"]))
    if reason is not None:
        print(f"primary: not fitted: {reason}")
        raise SystemExit(0)
    for label, result in pass_models(data).items():
        if "error" in result:
            print(f"{label}: not fitted: {result['error']}")
        else:
            print(
                f"{label} ({result['method']}): odds ratio {result['odds_ratio']:.3f} (95 % CI "
                f"{result['ci_low']:.3f} to {result['ci_high']:.3f}), p = {result['p']:.4f}"
            )
