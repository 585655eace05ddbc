"""The primary outcome's GLMM (``study.results.glmm``) against known answers: the quadrature
likelihood against direct numerical integration, the estimate against plain logistic regression
when participants do not differ, and the interval's coverage of an injected effect."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import integrate
from scipy import stats as sps

from study.results.glmm import (
    design_matrix,
    fit_glmm,
    marginal_loglik,
    order_effects,
    pass_models,
    summarise,
)
from study.results.synthetic import SEQUENCES, crossover_trials

trials = crossover_trials


def test_the_quadrature_likelihood_equals_direct_integration():
    frame = trials(np.random.default_rng(3), 6, 1.0, 1.0)
    x, _ = design_matrix(frame)
    y = frame["y"].to_numpy(dtype=float)
    groups = pd.factorize(frame["pid"])[0]
    rng = np.random.default_rng(4)
    theta = np.append(rng.normal(0, 0.5, x.shape[1]), math.log(1.3))
    eta = x @ theta[:-1]
    sigma = math.exp(theta[-1])
    direct = 0.0
    for g in range(groups.max() + 1):
        mine = groups == g

        def density(u: float, mine: np.ndarray = mine) -> float:
            e = eta[mine] + u
            return float(np.exp(np.sum(y[mine] * e - np.logaddexp(0, e)))) * sps.norm.pdf(
                u, 0, sigma
            )

        direct += math.log(integrate.quad(density, -12 * sigma, 12 * sigma)[0])
    assert marginal_loglik(theta, x, y, groups) == pytest.approx(direct, abs=1e-7)


def test_without_participant_differences_the_glmm_agrees_with_logistic_regression():
    frame = trials(np.random.default_rng(5), 400, 0.8, 0.0)
    fit = fit_glmm(frame)
    x, names = design_matrix(frame)
    logit = sm.Logit(frame["y"].to_numpy(dtype=float), x).fit(disp=0)
    assert fit["converged"]
    assert fit["participant_sd"] < 0.3
    assert fit["log_odds"] == pytest.approx(logit.params[names.index("ai")], abs=0.03)
    assert fit["se"] == pytest.approx(logit.bse[names.index("ai")], rel=0.05)


def test_a_large_sample_recovers_the_injected_effect_and_variance():
    fit = fit_glmm(trials(np.random.default_rng(6), 600, 1.0, 1.0))
    assert fit["log_odds"] == pytest.approx(1.0, abs=0.2)
    assert fit["participant_sd"] == pytest.approx(1.0, abs=0.25)


def test_the_interval_covers_a_known_effect_at_the_nominal_rate_and_nulls_rarely_reject():
    """45 participants per replication (the reference design's N), 40 replications each."""
    rng = np.random.default_rng(11)
    covered = rejected = 0
    for _ in range(40):
        result = pass_models(trials(rng, 45, 1.0, 1.0))["primary"]
        covered += result["ci_low"] <= math.e <= result["ci_high"]
        null = pass_models(trials(rng, 45, 0.0, 1.0))["primary"]
        rejected += null["p"] < 0.05
    # Binomial(40, 0.95) is at least 34 with probability 0.986; Binomial(40, 0.05) at most 5
    # with probability 0.986.
    assert covered >= 34
    assert rejected <= 5


def test_summaries_give_the_odds_ratio_and_its_wald_interval():
    s = summarise({"method": "glmm", "log_odds": math.log(2.0), "se": 0.5, "terms": []})
    assert s["odds_ratio"] == pytest.approx(2.0)
    assert s["ci_low"] == pytest.approx(2.0 * math.exp(-1.959964 * 0.5), rel=1e-6)
    assert s["ci_high"] == pytest.approx(2.0 * math.exp(1.959964 * 0.5), rel=1e-6)
    assert s["p"] == pytest.approx(2 * sps.norm.sf(math.log(2.0) / 0.5))


def ordered_trials(
    rng: np.random.Generator, n: int, period_effects: list[float], carry: float
) -> pd.DataFrame:
    """Like ``trials`` with a known effect of each period and of AI in the previous period."""
    rows = []
    for p in range(n):
        u = rng.normal(0.0, 0.5)
        previous = 0
        for period, letter in enumerate(SEQUENCES[p % 4], start=1):
            ai = int(letter == "B")
            eta = -0.5 + 0.8 * ai + period_effects[period - 1] + carry * previous + u
            y = int(rng.random() < 1 / (1 + math.exp(-eta)))
            rows.append({"pid": f"p{p}", "task": "t", "period": period, "ai": ai, "y": y})
            previous = ai
    return pd.DataFrame(rows)


SESSIONS = {1: 1, 2: 1, 3: 2, 4: 2}


def test_period_and_session_effects_are_recovered():
    frame = ordered_trials(np.random.default_rng(21), 1200, [0.0, 0.4, 0.8, 1.2], 0.0)
    fit = summarise(fit_glmm(frame))
    order = order_effects(frame, fit, SESSIONS)
    by_period = {e["period"]: e for e in order["periods"]}
    for period, truth in ((2, 0.4), (3, 0.8), (4, 1.2)):
        assert by_period[period]["ci_low"] < math.exp(truth) < by_period[period]["ci_high"]
    # Session 2 against session 1: (b3 + b4) / 2 - (0 + b2) / 2, truth (0.8 + 1.2 - 0.4) / 2.
    session = order["sessions"][0]
    b = {n: fit["coefficients"][n][0] for n in ("period_2", "period_3", "period_4")}
    expected = (b["period_3"] + b["period_4"] - b["period_2"]) / 2
    assert session["odds_ratio"] == pytest.approx(math.exp(expected))
    assert session["ci_low"] < math.exp(0.8) < session["ci_high"]


def test_a_carry_over_effect_is_found_by_the_sensitivity_model():
    # The primary model has no carry-over term: its period effects absorb the average
    # carry-over, and the sensitivity model estimates it.
    frame = ordered_trials(np.random.default_rng(23), 1200, [0.0, 0.4, 0.8, 1.2], 0.7)
    carry = order_effects(frame, summarise(fit_glmm(frame)), SESSIONS)["carryover"]
    assert carry["ci_low"] < math.exp(0.7) < carry["ci_high"]
    assert carry["p"] < 0.01


def test_no_carry_over_is_rarely_flagged():
    rng = np.random.default_rng(22)
    flagged = 0
    for _ in range(30):
        frame = ordered_trials(rng, 60, [0.0, 0.2, 0.4, 0.6], 0.0)
        flagged += (
            order_effects(frame, summarise(fit_glmm(frame)), SESSIONS)["carryover"]["p"] < 0.05
        )
    assert flagged <= 4  # Binomial(30, 0.05) <= 4 with probability 0.98


def test_carry_over_looks_at_the_period_right_before_even_when_one_is_missing():
    frame = ordered_trials(np.random.default_rng(24), 1200, [0.0, 0.4, 0.8, 1.2], 0.7)
    # Period 2 is missing for 40 % of participants: their period-3 trial has no known previous
    # condition (taking period 1's instead would bias the estimate towards none).
    gone = {f"p{i}" for i in range(0, 1200, 5)} | {f"p{i}" for i in range(1, 1200, 5)}
    frame = frame[~((frame["period"] == 2) & frame["pid"].isin(gone))].reset_index(drop=True)
    carry = order_effects(frame, summarise(fit_glmm(frame)), SESSIONS)["carryover"]
    assert carry["ci_low"] < math.exp(0.7) < carry["ci_high"]
