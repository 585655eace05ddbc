"""Statistics and figures of the results dashboard against answers worked out by hand.

No database: ``study.results.stats``, ``study.results.dashboard.table2`` and the figures are pure
functions of the trial-level rows.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.duration.hazard_regression import PHReg

from study.results.dashboard import figures
from study.results.stats import (
    holm,
    mcnemar_exact,
    paired_stats,
    paired_test,
    paired_values,
    primary_caption,
    secondary_caption,
)
from study.results.table2 import table2, wilson

WITHOUT = [10.0, 12.0, 9.0, 15.0, 11.0]
WITH = [8.0, 9.0, 9.0, 11.0, 7.0]


def row(pid: str, ai: bool, period: int, **values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trial_id": hash((pid, period)) % 10_000,
        "participant": pid,
        "participant_stage": "complete",
        "track": "SDE",
        "condition": "B" if ai else "A",
        "arm": "AI" if ai else "No AI",
        "ai_mode": "chat" if ai else "none",
        "ai": ai,
        "template": f"task-{period}",
        "difficulty": "easy",
        "session": 1 + (period - 1) // 2,
        "period": period,
        "status": "submitted",
        "grading_status": "done",
        "overall_pass": None,
        "partial_pass": None,
        "completion_time_s": None,
        "tokens": 1000 if ai else None,
        "ai_requests": 3 if ai else None,
        "confidence": None,
        "nasa_tlx": None,
    }
    base.update(values)
    return base


# --- Paired t, d_z, d_av, Wilcoxon ----------------------------------------------------------
def test_paired_t_and_effect_sizes_match_the_hand_computation() -> None:
    r = paired_test(WITHOUT, WITH)
    # differences (with - without): -2, -3, 0, -4, -4 -> mean -2.6, SD sqrt(11.2 / 4) = 1.6733
    assert r["n"] == 5
    assert r["mean_diff"] == pytest.approx(-2.6)
    assert r["sd_diff"] == pytest.approx(math.sqrt(2.8))
    assert r["t"] == pytest.approx(-2.6 / (math.sqrt(2.8) / math.sqrt(5)))  # -3.4744
    assert r["t"] == pytest.approx(-3.4744, abs=1e-4)
    assert r["df"] == 4
    assert r["p_t"] == pytest.approx(0.025481, abs=1e-6)
    assert r["d_z"] == pytest.approx(-2.6 / math.sqrt(2.8))  # -1.5538
    # d_av: SDs sqrt(5.3) and sqrt(2.2) -> -2.6 / 1.8927 = -1.3737 (not d_z!)
    assert r["d_av"] == pytest.approx(-2.6 / ((math.sqrt(5.3) + math.sqrt(2.2)) / 2))
    assert r["d_av"] != pytest.approx(r["d_z"])
    # 95 % CI: mean +- t(0.975, 4) * SE, t(0.975, 4) = 2.776445
    half = 2.776445 * math.sqrt(2.8) / math.sqrt(5)
    assert r["ci_low"] == pytest.approx(-2.6 - half, abs=1e-5)
    assert r["ci_high"] == pytest.approx(-2.6 + half, abs=1e-5)


def exact_wilcoxon_p(diffs: list[float]) -> float:
    """Two-sided exact signed-rank p by enumerating every sign pattern (no ties, no zeros)."""
    ranks = {d: i + 1 for i, d in enumerate(sorted(diffs, key=abs))}
    w_minus = sum(ranks[d] for d in diffs if d < 0)
    w_plus = sum(ranks[d] for d in diffs if d > 0)
    observed = min(w_minus, w_plus)
    n = len(diffs)
    extreme = sum(
        1
        for signs in itertools.product((0, 1), repeat=n)
        if sum(rank * s for rank, s in zip(range(1, n + 1), signs, strict=True)) <= observed
    )
    return min(1.0, 2 * extreme / 2**n)


def test_wilcoxon_matches_exact_enumeration() -> None:
    without = [1.0, 3.0, 1.0, 1.0, 1.0, 1.0]
    with_ai = [2.0, 1.0, 4.0, 5.0, 6.0, 7.0]  # differences 1, -2, 3, 4, 5, 6
    r = paired_test(without, with_ai)
    assert r["wilcoxon_w"] == 2.0  # the smaller rank sum: only rank 2 is negative
    assert r["p_wilcoxon"] == pytest.approx(6 / 64)  # P(W <= 2) = 3/64, two-sided
    assert r["p_wilcoxon"] == pytest.approx(exact_wilcoxon_p([1, -2, 3, 4, 5, 6]))


def test_wilcoxon_keeps_zero_differences_in_the_ranking_pratt() -> None:
    without = [5.0] * 8
    with_ai = [5.0, 5.0, 6.0, 3.0, 8.0, 9.0, 10.0, 11.0]  # differences 0, 0, 1, -2, 3, 4, 5, 6
    r = paired_test(without, with_ai)
    # Pratt ranks the two zeros first (1.5 each) and then drops them: -2 keeps rank 4, so the
    # smaller rank sum is 4. Dropping the zeros first ("wilcox") would give -2 rank 2.
    assert r["wilcoxon_w"] == 4.0
    assert sps.wilcoxon(with_ai, without).statistic == 2.0
    assert r["p_wilcoxon"] == pytest.approx(
        sps.wilcoxon(with_ai, without, zero_method="pratt").pvalue
    )


def test_captions_count_one_participant_in_the_singular() -> None:
    caption = secondary_caption(
        "NASA-TLX", "points", 1.0, True, {**paired_test(WITHOUT, WITH), "n": 1}
    )
    assert caption.endswith("n = 1 participant.")
    primary = primary_caption({**mcnemar_exact([(False, True)]), "computed": True})
    assert "of 1 participant who worked in both conditions" in primary


def test_paired_test_needs_two_pairs_and_survives_constant_differences() -> None:
    assert paired_test([1.0], [2.0]) == {
        "n": 1,
        "computed": False,
        "reason": "needs at least 2 participants with both conditions (have 1)",
    }
    constant = paired_test([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    assert constant["computed"]
    assert constant["t"] is None
    assert constant["d_z"] is None
    same = paired_test([1.0, 2.0], [1.0, 2.0])
    assert same["p_wilcoxon"] is None
    assert same["mean_diff"] == 0.0


def test_per_participant_means_pair_only_complete_participants() -> None:
    rows = [
        row("p1", False, 1, nasa_tlx=40.0),
        row("p1", True, 2, nasa_tlx=30.0),
        row("p1", False, 3, nasa_tlx=60.0),
        row("p1", True, 4, nasa_tlx=None),  # unanswered: left out, not zero
        row("p2", False, 1, nasa_tlx=10.0),  # no AI trial: not paired
    ]
    assert paired_values(rows, "nasa_tlx") == [("p1", 50.0, 30.0)]


# --- McNemar and Holm ---------------------------------------------------------------------
def test_mcnemar_exact_p_for_a_known_table() -> None:
    pairs = [(True, True)] * 3 + [(True, False)] + [(False, True)] * 7 + [(False, False)] * 2
    r = mcnemar_exact(pairs)
    assert r["table"] == [[3, 1], [7, 2]]
    # exact: 2 * P(X <= 1 | n = 8, p = .5) = 2 * 9 / 256
    assert r["p"] == pytest.approx(18 / 256)
    assert r["statistic"] == 1.0
    assert r["risk_difference"] == pytest.approx(6 / 13)
    assert mcnemar_exact([])["computed"] is False


def test_holm_adjusts_like_the_textbook() -> None:
    # sorted: .005*4 = .02, .01*3 = .03, .03*2 = .06, .04*1 = .04 -> monotone .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = holm([0.01, None, 0.04])
    assert adjusted[1] is None
    assert adjusted[0] == pytest.approx(0.02)
    assert adjusted[2] == pytest.approx(0.04)


def pass_rows() -> list[dict[str, Any]]:
    """13 participants, two trials per condition, giving the McNemar table [[3, 1], [7, 2]].
    A participant passes a condition when at least half of its trials passed."""
    patterns = (
        [((1, 0), (0, 1))] * 3  # both conditions passed (one of two each)
        + [((1, 1), (0, 0))]  # only without AI
        + [((0, 0), (1, 0))] * 7  # only with AI
        + [((0, 0), (0, 0))] * 2  # neither
    )
    rows = []
    for i, (without, with_ai) in enumerate(patterns):
        pid = f"p{i:02d}"
        first = 1 + i % 2  # ABAB and BABA alternate, so condition and period are not confounded
        rows += [
            row(pid, False, first, overall_pass=without[0]),
            row(pid, True, 3 - first, overall_pass=with_ai[0]),
        ]
        rows += [
            row(pid, False, first + 2, overall_pass=without[1]),
            row(pid, True, 5 - first, overall_pass=with_ai[1]),
        ]
    return rows


def test_the_mcnemar_robustness_check_uses_the_half_of_trials_rule() -> None:
    result = paired_stats(pass_rows())
    check = result["mcnemar"]
    assert check["table"] == [[3, 1], [7, 2]]
    assert check["p"] == pytest.approx(18 / 256)
    assert check["caption"].startswith("Robustness check (participant level, McNemar)")
    assert "7 passed only with the assistant and 1 only without it" in check["caption"]
    assert "exact McNemar test, p = .070" in check["caption"]


def test_the_primary_outcome_is_the_trial_level_pass_model() -> None:
    rows = pass_rows()
    primary = paired_stats(rows)["primary"]
    assert primary["computed"] is True
    assert primary["method"] == "glmm"
    assert (primary["n_participants"], primary["n_trials"]) == (13, 52)
    assert primary["task_effects"] is False  # each task is one period here: collinear
    assert primary["caption"].startswith(
        "Overall pass (primary outcome), 52 graded trials of 13 participants on 4 tasks, "
        "logistic mixed model (AI + period, random intercept per participant, maximum "
        "likelihood): the AI assistant's odds ratio "
    )
    # The robustness GEE equals statsmodels' own GEE fitted here on the same trials.
    frame = pd.DataFrame(
        {
            "y": [int(r["overall_pass"]) for r in rows],
            "ai": [int(r["ai"]) for r in rows],
            "period": [r["period"] for r in rows],
            "pid": [r["participant"] for r in rows],
        }
    )
    gee = smf.gee(
        "y ~ ai + C(period)",
        "pid",
        frame,
        family=sm.families.Binomial(),
        cov_struct=sm.cov_struct.Exchangeable(),
    ).fit()
    assert primary["gee"]["odds_ratio"] == pytest.approx(math.exp(gee.params["ai"]), rel=1e-6)
    low, high = np.exp(gee.conf_int().loc["ai"])
    assert (primary["gee"]["ci_low"], primary["gee"]["ci_high"]) == (
        pytest.approx(low, rel=1e-6),
        pytest.approx(high, rel=1e-6),
    )
    assert "Robustness check, GEE logit with participant clusters: odds ratio" in primary["caption"]
    order = primary["order_caption"]
    assert order.startswith("Order effects in the primary model (odds ratios against period 1")
    for term in ("period 2 ", "period 4 ", "session 2 "):
        assert term in order
    assert "Carry-over" in order


def test_the_pass_model_needs_ten_participants_and_some_contrast() -> None:
    few = paired_stats(pass_rows()[:36])["primary"]  # 9 participants
    assert few["computed"] is False
    assert few["caption"] == (
        "Overall pass (primary outcome): not modelled — needs at least 10 participants with "
        "graded trials in both conditions (have 9)."
    )
    confounded = [{**r, "period": 2 if r["ai"] else 1} for r in pass_rows()]
    assert paired_stats(confounded)["primary"]["reason"] == (
        "neither model could be fitted (the AI condition coincides with the periods: there is "
        "no counterbalancing)"
    )
    same = [{**r, "overall_pass": 1} for r in pass_rows()]
    assert "every trial has the same result" in paired_stats(same)["primary"]["reason"]


def test_secondary_outcomes_are_holm_adjusted_together_with_captions() -> None:
    rows = []
    for i, (w, a) in enumerate(zip(WITHOUT, WITH, strict=True)):
        pid = f"p{i}"
        rows.append(row(pid, False, 1, completion_time_s=w * 60, nasa_tlx=w * 5, partial_pass=0.5))
        rows.append(
            row(pid, True, 2, completion_time_s=a * 60, nasa_tlx=a * 5 + i, partial_pass=0.5)
        )
    result = paired_stats(rows)
    by_outcome = {r["outcome"]: r for r in result["secondary"]}
    time = by_outcome["completion_time_s"]
    assert time["p_t"] == pytest.approx(0.025481, abs=1e-6)
    # Completion time enters the Holm family through its Cox model (not fitted for 5
    # participants), so the family here is NASA-TLX alone and its p stays as it is.
    assert result["time"]["computed"] is False
    assert time["p_holm"] is None
    tlx = by_outcome["nasa_tlx"]
    assert tlx["p_holm"] == pytest.approx(tlx["p_t"])
    assert by_outcome["confidence"]["computed"] is False  # nobody answered
    assert by_outcome["partial_pass"]["p_t"] is None  # no variation: no t, no Holm entry
    caption = time["caption"]
    assert caption.startswith("Completion time (PAR-60): on average 2.6 min less with the AI")
    assert "d_z = -1.55 (d_av = -1.37)" in caption
    assert "Holm-adjusted" not in caption
    assert "n = 5 participants" in caption
    assert "not computed" in by_outcome["confidence"]["caption"]


def timed_rows(n: int, rng: np.random.Generator, hazard_ratio: float) -> list[dict[str, Any]]:
    """Exponential times to a pass (AI multiplies the hazard by ``hazard_ratio``), censored
    at a 60-minute limit; four periods in a counterbalanced order, tasks crossing conditions."""
    rows = []
    for i in range(n):
        for period, letter in enumerate(("ABBA", "BAAB", "ABAB", "BABA")[i % 4], start=1):
            ai = letter == "B"
            rate = (1 / 80) * (hazard_ratio if ai else 1.0)
            minutes = float(rng.exponential(1 / rate))
            passed = minutes < 60
            rows.append(
                row(
                    f"p{i:03d}",
                    ai,
                    period,
                    template=f"task-{(3 * i + period) % 7}",
                    overall_pass=int(passed),
                    completion_time_s=min(minutes, 60.0) * 60,
                    time_limit_min=60,
                )
            )
    return rows


def test_the_time_model_is_cox_on_the_censored_time_to_a_pass() -> None:
    rows = timed_rows(40, np.random.default_rng(2), 2.0)
    result = paired_stats(rows)["time"]
    assert result["computed"] is True
    assert (result["n_participants"], result["n_trials"]) == (40, 160)
    # The same model fitted directly with statsmodels.
    frame = pd.DataFrame(rows)
    frame["time"] = frame["completion_time_s"] / 60
    exog = pd.concat(
        [
            frame[["ai"]].astype(float),
            pd.get_dummies(frame["period"], prefix="p", drop_first=True).astype(float),
        ],
        axis=1,
    )
    direct = PHReg(
        frame["time"].to_numpy(),
        exog.to_numpy(),
        status=frame["overall_pass"].to_numpy(),
        strata=frame["template"].to_numpy(),
        ties="efron",
    ).fit(groups=frame["participant"].to_numpy())
    assert result["hazard_ratio"] == pytest.approx(math.exp(direct.params[0]), rel=1e-9)
    assert result["ci_low"] == pytest.approx(
        math.exp(direct.params[0] - 1.959964 * direct.bse[0]), rel=1e-6
    )
    assert result["censored_share"] == pytest.approx(1 - frame["overall_pass"].mean())
    assert result["caption"].startswith(
        "Completion time, censored at the time limit (160 graded trials of 40 participants on "
        "7 tasks, "
    )
    assert "Hazard ratio of the AI assistant" in result["caption"]


def test_the_holm_family_takes_the_time_model_in_place_of_the_capped_minutes() -> None:
    rows = timed_rows(40, np.random.default_rng(2), 2.0)
    for r in rows:
        r["nasa_tlx"] = 50.0 + (5.0 if r["ai"] else 0.0) + (hash(r["participant"]) % 7)
    result = paired_stats(rows)
    by_outcome = {r["outcome"]: r for r in result["secondary"]}
    tlx, time = by_outcome["nasa_tlx"], result["time"]
    expected = holm([tlx["p_t"], time["p"]])
    assert (tlx["p_holm"], time["p_holm"]) == (
        pytest.approx(expected[0]),
        pytest.approx(expected[1]),
    )
    assert by_outcome["completion_time_s"]["p_holm"] is None
    assert "Holm-adjusted" in time["caption"]


def test_the_time_model_covers_a_known_hazard_ratio() -> None:
    rng = np.random.default_rng(9)
    covered = sum(
        r["ci_low"] <= 2.0 <= r["ci_high"]
        for r in (paired_stats(timed_rows(45, rng, 2.0))["time"] for _ in range(30))
    )
    assert covered >= 25  # Binomial(30, 0.95) >= 25 with probability 0.998


def test_the_time_model_is_skipped_with_too_few_participants_and_says_why() -> None:
    result = paired_stats(timed_rows(9, np.random.default_rng(1), 1.0))["time"]
    assert result["computed"] is False
    assert result["caption"] == (
        "Completion time (censored at the time limit): not modelled — needs at least 10 "
        "participants with graded trials in both conditions (have 9)."
    )


# --- Table 2 ------------------------------------------------------------------------------
def test_table2_counts_and_wilson_intervals() -> None:
    rows = [row(f"a{i}", False, 1, overall_pass=int(i < 8), partial_pass=0.5) for i in range(10)]
    rows += [
        row(f"a{i}", True, 2, overall_pass=1, difficulty="hard", track="MLE", tokens=500)
        for i in range(3)
    ]
    rows.append(row("a9", True, 4, overall_pass=None))  # grading not finished: not counted
    table = table2(rows)
    assert [c["condition"] for c in table["conditions"]] == ["A", "B"]
    overall = table["sections"][0]["rows"][0]["cells"]
    assert overall[0]["n"] == 10
    assert overall[0]["pass_at_1"] == pytest.approx(0.8)
    assert overall[0]["pass_ci"] == pytest.approx([0.490162, 0.943318], abs=1e-6)
    assert overall[1]["n"] == 3
    assert overall[1]["n_trials"] == 4
    assert overall[1]["tokens"] == pytest.approx((500 * 3 + 1000) / 4)
    assert overall[0]["tokens"] is None  # no AI, no tokens
    by_difficulty = {r["label"]: r["cells"] for r in table["sections"][1]["rows"]}
    assert list(by_difficulty) == ["Easy", "Hard"]
    assert by_difficulty["Hard"][0]["n"] == 0
    assert by_difficulty["Hard"][0]["pass_at_1"] is None
    by_track = {r["label"]: r["cells"] for r in table["sections"][2]["rows"]}
    assert by_track["MLE"][1]["n"] == 3
    assert wilson(0, 0) == (None, None)


# --- Figures ------------------------------------------------------------------------------
def test_figures_as_plotly_dicts() -> None:
    rows = [
        row(
            "p1", False, 1, overall_pass=1, completion_time_s=1800.0, nasa_tlx=50.0, confidence=6.0
        ),
        row("p1", True, 2, overall_pass=0, completion_time_s=3600.0, nasa_tlx=30.0, confidence=3.0),
        row("p2", False, 1, overall_pass=0, completion_time_s=3600.0, difficulty="hard"),
        row("p2", True, 2, overall_pass=1, completion_time_s=900.0, difficulty="hard"),
    ]
    figs = {
        name: fig.to_dict()
        for name, fig in figures(rows, ai_roles=[("Wrote code", 5), ("Found bugs", 2)]).items()
    }
    assert set(figs) == {"pass_rates", "completion_times", "confidence_load", "ai_roles"}

    bars = {t["name"]: t for t in figs["pass_rates"]["data"]}
    assert set(bars) == {"A: No AI", "B: AI"}
    assert list(bars["A: No AI"]["x"]) == ["All", "easy", "hard"]
    assert list(bars["A: No AI"]["y"]) == [50.0, 100.0, 0.0]
    assert list(bars["A: No AI"]["text"]) == ["n = 2", "n = 1", "n = 1"]
    error = bars["A: No AI"]["error_y"]
    low, high = wilson(1, 2)
    assert error["arrayminus"][0] == pytest.approx(round(100 * (0.5 - low), 1))  # type: ignore[operator]
    assert error["array"][0] == pytest.approx(round(100 * (high - 0.5), 1))  # type: ignore[operator]

    boxes = {t["name"]: list(t["y"]) for t in figs["completion_times"]["data"]}
    assert boxes == {"A: No AI": [30.0, 60.0], "B: AI": [60.0, 15.0]}

    scatter = {t["name"]: t for t in figs["confidence_load"]["data"]}
    assert list(scatter["A: No AI"]["x"]) == [50.0]
    assert list(scatter["A: No AI"]["y"]) == [6.0]
    assert list(scatter["B: AI"]["x"]) == [30.0]  # p2 answered nothing

    roles = figs["ai_roles"]["data"][0]
    assert list(roles["y"]) == ["Found bugs", "Wrote code"]  # largest drawn on top
    assert list(roles["x"]) == [2, 5]


def test_figures_without_data_still_render() -> None:
    figs = figures([], ai_roles=[])
    assert figs["pass_rates"].to_dict()["data"] == []
    annotations = figs["ai_roles"].to_dict()["layout"]["annotations"]
    assert annotations[0]["text"] == "No answers yet"
