"""The pure design layer: Williams squares, sequences, plan enumeration and the minimiser."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from study.assignment.design import (
    SEQUENCES,
    Constraints,
    DesignError,
    Plan,
    TaskInfo,
    can_balance,
    condition_sequences,
    difficulty_gap,
    enumerate_plans,
    williams,
)
from study.assignment.minimiser import (
    Counts,
    cell_shares,
    choose_plan,
    exact_fill_candidates,
    imbalance,
    score_candidates,
)

DIFFICULTIES = ("easy", "medium", "hard")
REFERENCE_POOL = [  # the notes' reference design: 3 tracks x 3 difficulties
    TaskInfo(f"{track.lower()}-{d}", track, d)
    for track in ("SDE", "MLE", "DS")
    for d in DIFFICULTIES
]


def one_track_pool(n: int) -> list[TaskInfo]:
    return [TaskInfo(f"t{i:02d}", "SDE", DIFFICULTIES[i % 3]) for i in range(n)]


# --- Williams squares and condition sequences -----------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_williams_square_balances_positions(n):
    rows = williams(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    assert all(sorted(row) == list(range(n)) for row in rows)
    for position in range(n):
        counts = Counter(row[position] for row in rows)
        assert set(counts) == set(range(n))
        assert len(set(counts.values())) == 1


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_williams_square_balances_first_order_carry_over(n):
    pairs = Counter((row[i], row[i + 1]) for row in williams(n) for i in range(n - 1))
    expected = {(a, b) for a in range(n) for b in range(n) if a != b}
    assert set(pairs) == expected
    assert len(set(pairs.values())) == 1


def test_a_cyclic_latin_square_would_fail_the_carry_over_check():
    cyclic = [[(i + r) % 4 for i in range(4)] for r in range(4)]
    pairs = Counter((row[i], row[i + 1]) for row in cyclic for i in range(3))
    assert len(pairs) < 12  # A always precedes B: why we use Williams


def test_two_conditions_in_two_sessions_give_the_four_crossover_sequences():
    assert condition_sequences("AB", 2, 2) == SEQUENCES == ("ABBA", "BAAB", "ABAB", "BABA")


def test_the_four_sequences_put_one_of_each_condition_in_every_session():
    for seq in SEQUENCES:
        assert sorted(seq[:2]) == ["A", "B"]
        assert sorted(seq[2:]) == ["A", "B"]
    for period in range(4):
        assert Counter(seq[period] for seq in SEQUENCES) == {"A": 2, "B": 2}
    assert "AABB" not in SEQUENCES
    assert "BBAA" not in SEQUENCES


def test_three_conditions_use_williams_orders_within_each_session():
    sequences = condition_sequences("ABC", 2, 3)
    assert len(sequences) == 36  # 6 Williams rows per session, combined freely
    for seq in sequences:
        assert sorted(seq[:3]) == sorted(seq[3:]) == ["A", "B", "C"]
    for period in range(6):
        assert len(set(Counter(s[period] for s in sequences).values())) == 1


def test_other_session_shapes_balance_conditions_overall_and_per_session():
    assert condition_sequences("AB", 2, 1) == ("AB", "BA")
    four = condition_sequences("AB", 1, 4)
    assert set(four) == {"AABB", "ABAB", "ABBA", "BAAB", "BABA", "BBAA"}
    with pytest.raises(DesignError, match="equally often"):
        condition_sequences("ABC", 1, 2)
    with pytest.raises(DesignError, match="distinct single letters"):
        condition_sequences("AA", 2, 2)


# --- Plans ------------------------------------------------------------------------------------
def test_reference_design_has_the_documented_numbers_of_candidates():
    both_tracks = Constraints(min_tracks=2, difficulty="matched")
    assert len(enumerate_plans(REFERENCE_POOL, SEQUENCES, 4, both_tracks)) == 2592
    per_session = Constraints(
        min_tracks=2, difficulty="matched", session_length=2, distinct_tracks_per_session=True
    )
    assert len(enumerate_plans(REFERENCE_POOL, SEQUENCES, 4, per_session)) == 1680


def test_every_plan_uses_distinct_tasks_with_matched_difficulty():
    levels = {"easy": 1, "medium": 2, "hard": 3}
    pool = {t.slug: t for t in one_track_pool(9)}
    plans = enumerate_plans(list(pool.values()), SEQUENCES, 4)
    assert len(plans) == 2592
    for plan in plans:
        assert len(set(plan.tasks)) == 4
        sums: Counter[str] = Counter()
        for slug, condition in zip(plan.tasks, plan.sequence, strict=True):
            sums[condition] += levels[pool[slug].difficulty]
        assert sums["A"] == sums["B"]


def test_difficulty_matching_is_dropped_only_when_no_plan_can_satisfy_it():
    pool = [TaskInfo("e", "SDE", "easy"), TaskInfo("h", "SDE", "hard")]
    assert enumerate_plans(pool, ("AB", "BA"), 2, Constraints(difficulty="matched")) == []
    assert len(enumerate_plans(pool, ("AB", "BA"), 2)) == 4


def test_enumeration_refuses_small_pools_and_unknown_difficulties():
    with pytest.raises(DesignError, match="needs 4"):
        enumerate_plans(one_track_pool(3), SEQUENCES, 4)
    with pytest.raises(DesignError, match="unknown difficulty"):
        enumerate_plans([*one_track_pool(3), TaskInfo("x", "SDE", "tricky")], SEQUENCES, 4)


# --- Counts and scores -----------------------------------------------------------------------
SMALL_PLANS = enumerate_plans(one_track_pool(6), SEQUENCES, 4)


@st.composite
def counts_and_plans(draw):
    history = draw(st.lists(st.sampled_from(SMALL_PLANS), max_size=30))
    counts = Counts.empty(SMALL_PLANS)
    for plan in history:
        counts.add(plan)
    return counts


@settings(max_examples=60, deadline=None)
@given(counts=counts_and_plans())
def test_fast_scores_equal_the_reference_imbalance(counts):
    fast = score_candidates(SMALL_PLANS, counts)
    assert fast == [imbalance(counts, plan) for plan in SMALL_PLANS]


@settings(max_examples=30, deadline=None)
@given(counts=counts_and_plans())
def test_counts_survive_a_json_round_trip(counts):
    assert Counts.from_json(counts.to_json()) == counts


@settings(max_examples=40, deadline=None)
@given(counts=counts_and_plans(), seed=st.integers(0, 2**31 - 1))
def test_the_best_plan_is_chosen_with_p_best_one_and_choices_replay(counts, seed):
    choice = choose_plan(SMALL_PLANS, counts, random.Random(seed), 1.0)
    scores = score_candidates(SMALL_PLANS, counts)
    assert choice.min_score == min(scores)
    assert imbalance(counts, choice.plan) == choice.min_score
    assert choice.n_tied == scores.count(min(scores))
    assert choose_plan(SMALL_PLANS, counts, random.Random(seed), 1.0) == choice


def test_the_biased_coin_sometimes_picks_a_worse_plan():
    counts = Counts.empty(SMALL_PLANS)
    counts.add(SMALL_PLANS[0])
    best = min(score_candidates(SMALL_PLANS, counts))
    picks = [choose_plan(SMALL_PLANS, counts, random.Random(s), 0.5).plan for s in range(60)]
    assert any(imbalance(counts, p) > best for p in picks)


# --- Exact fill ------------------------------------------------------------------------------
def _brute_force_decomposable(deficit: Counter, r: int, plans: list[Plan]) -> bool:
    signatures = {frozenset((t, c) for t, c, _ in p.cells()) for p in plans}
    for combo in itertools.combinations_with_replacement(signatures, r):
        if Counter(cell for sig in combo for cell in sig) == +deficit:
            return True
    return r == 0 and not +deficit


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), remaining=st.integers(1, 3))
def test_exact_fill_keeps_exactly_the_plans_that_leave_a_completable_remainder(seed, remaining):
    target = 15  # 6 tasks: every task x condition cell gets 15 * 2 / 6 = 5
    shares = cell_shares(SMALL_PLANS, target)
    assert shares is not None
    counts = Counts.empty(SMALL_PLANS)
    rng = random.Random(seed)
    while counts.participants < target - remaining:
        counts.add(choose_plan(SMALL_PLANS, counts, rng, 0.7, target=target).plan)
    kept = set(exact_fill_candidates(SMALL_PLANS, counts, target))
    deficit = Counter({cell: n - counts.task_condition[cell] for cell, n in shares.items()})
    for plan in SMALL_PLANS:
        after = deficit - Counter((t, c) for t, c, _ in plan.cells())
        fits = all(deficit[(t, c)] > 0 for t, c, _ in plan.cells())
        expected = fits and _brute_force_decomposable(after, remaining - 1, SMALL_PLANS)
        assert (plan in kept) == expected


def test_exact_fill_does_not_apply_when_shares_are_fractional():
    assert cell_shares(SMALL_PLANS, 14) is None  # 14 * 2 / 6 is not whole
    assert exact_fill_candidates(SMALL_PLANS, Counts.empty(SMALL_PLANS), 14) == []


def test_matched_plans_can_balance_a_pool_of_three_per_difficulty_but_not_an_uneven_one():
    levels = {"easy": 1, "medium": 2, "hard": 3}

    def matched(pool):
        plans = enumerate_plans(pool, SEQUENCES, 4, Constraints(difficulty="off"))
        lv = {t.slug: levels[t.difficulty] for t in pool}
        return [p for p in plans if difficulty_gap(p, lv) == 0]

    assert can_balance(matched(REFERENCE_POOL))
    uneven = [
        TaskInfo(f"t{i}", "SDE", d)
        for i, d in enumerate(("easy", "medium", "hard", "easy", "medium"))
    ]
    assert not can_balance(matched(uneven))  # both medium tasks are in every matched plan
    assert not can_balance([])
