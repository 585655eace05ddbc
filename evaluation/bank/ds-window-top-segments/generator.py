"""Hidden-test generator for ds-window-top-segments (trusted bank code, plain stdlib).

Expected leaderboards come from an incremental implementation; every functional case is
cross-checked against a full recount at generation time.
"""

from __future__ import annotations

import heapq
from itertools import accumulate
from operator import itemgetter

PREFIXES = ["GRC", "ELE", "TRV", "HOM", "FSH", "TOY", "BKS", "SPT", "AUT", "PHR"]


def _money(amount, status, policy):
    if status == "V" or (amount < 0 and policy != "net"):
        return 0
    return amount


def _boards(rows, window, k, every, policy):
    """rows: (segment, amount, status) triples; incremental totals and a lazy heap."""
    net = policy == "net"
    money = [0 if s == "V" or (a < 0 and not net) else a for _, a, s in rows]
    segments = [seg for seg, _, _ in rows]
    totals, heap, boards = {}, [], []
    push, get = heapq.heappush, totals.get
    for i in range(len(rows)):
        delta = money[i]
        if delta:
            total = totals[segments[i]] = get(segments[i], 0) + delta
            if total > 0:
                push(heap, (-total, segments[i]))
        if i >= window:
            delta = money[i - window]
            if delta:
                total = totals[segments[i - window]] = totals[segments[i - window]] - delta
                if total > 0:
                    push(heap, (-total, segments[i - window]))
        if i < window - 1 or (i - window + 1) % every:
            continue
        best = []
        while heap and len(best) < k:
            negative, seg = heapq.heappop(heap)
            if totals[seg] == -negative and not (best and best[-1][1] == seg):
                best.append((negative, seg))
        for item in best:
            heapq.heappush(heap, item)
        boards.append([seg for _, seg in best])
    return boards


def _recount(rows, window, k, every, policy):
    boards = []
    for end in range(window, len(rows) + 1, every):
        totals = {}
        for seg, amount, status in rows[end - window:end]:
            totals[seg] = totals.get(seg, 0) + _money(amount, status, policy)
        ranked = sorted((s for s in totals if totals[s] > 0), key=lambda s: (-totals[s], s))
        boards.append(ranked[:k])
    return boards


def _segment_ids(rng, count):
    ids = set()
    while len(ids) < count:
        ids.add(f"{rng.choice(PREFIXES)}-{rng.randint(1, max(30, count))}")
    ids = sorted(ids)
    rng.shuffle(ids)
    return ids


def _feed(rng, n, segments, amounts=None, refund_rate=0.08, void_rate=0.07, skew=0.6):
    weights = list(accumulate(1.0 / (rank + 1) ** skew for rank in range(len(segments))))
    picks = rng.choices(segments, cum_weights=weights, k=n)
    amounts = amounts or [250 * m for m in (1, 2, 2, 3, 4, 4, 6, 8, 10, 12, 20, 40)]
    values = rng.choices(amounts, k=n)
    rest = max(0.0, 1.0 - refund_rate - void_rate - 0.11)
    kinds = rng.choices(
        [(-1, "S"), (1, "V"), (0, "S"), (1, "P"), (1, "S")],
        weights=[refund_rate, void_rate, 0.01, 0.1, rest],
        k=n,
    )
    return [(seg, sign * value, status) for seg, value, (sign, status) in zip(picks, values, kinds)]


def generate(params, names, rng):
    policy = params["refund_policy"]
    columns = rng.sample([names["segment_col"], names["amount_col"], names["status_col"]], 3)
    order = [
        {names["segment_col"]: 0, names["amount_col"]: 1, names["status_col"]: 2}[c]
        for c in columns
    ]

    pick = itemgetter(*order)

    def extract(rows):
        return {"columns": list(columns), "rows": [list(pick(r)) for r in rows]}

    cases = []

    def add(name, category, rows, window, k, every, kind="functional", visible=False):
        expected = _boards(rows, window, k, every, policy)
        if len(rows) <= 1000 and expected != _recount(rows, window, k, every, policy):
            raise AssertionError(f"incremental and recount disagree on {name}")
        cases.append(
            {
                "name": name,
                "kind": kind,
                "category": category,
                "args": [extract(rows), window, k, every],
                "kwargs": {},
                "expected": expected,
                "visible": visible,
            }
        )

    few = _segment_ids(rng, 6)
    example_rows = _feed(rng, 16, few[:4], refund_rate=0.12, void_rate=0.08)
    seg, amount, _ = example_rows[4]
    example_rows[4] = (seg, abs(amount) or 500, "V")
    seg, amount, _ = example_rows[9]
    example_rows[9] = (seg, -abs(amount) or -500, "S")
    add("example_from_task_data", "example", example_rows, 6, 2, 3, visible=True)
    add("example_small_feed", "example", _feed(rng, 30, few), 10, 3, 4, visible=True)

    add("edge_empty_feed", "edge", [], 3, 2, 1)
    add("edge_window_longer_than_feed", "edge", _feed(rng, 5, few), 6, 2, 1)
    add("edge_window_equals_feed", "edge", _feed(rng, 12, few), 12, 3, 5)
    add("edge_window_one", "edge", _feed(rng, 20, few, refund_rate=0.3), 1, 2, 1)
    add("edge_k_exceeds_segments", "edge", _feed(rng, 40, few[:3]), 15, 10, 2)
    voided = [(s, a, "V") for s, a, _ in _feed(rng, 10, few)]
    add("edge_voided_window", "edge", _feed(rng, 8, few) + voided + _feed(rng, 6, few), 6, 3, 2)
    add("edge_refund_heavy", "edge", _feed(rng, 60, few, refund_rate=0.45), 12, 3, 3)
    add("edge_every_exceeds_feed", "edge", _feed(rng, 25, few), 9, 2, 40)
    add("edge_zero_and_refund_only", "edge", [(few[0], 0, "S"), (few[1], -500, "S")] * 4, 3, 2, 1)
    tied = sorted(f"{p}-{n}" for p in ("ELE", "GRC") for n in (3, 12, 100, 7))
    rng.shuffle(tied)
    tie_rows = [(seg, 1000, "S") for seg in tied] + [(seg, 1000, "P") for seg in tied]
    add("edge_equal_revenue_order", "edge", tie_rows + tie_rows[:5], 8, 5, 1)
    tie_feed = _feed(rng, 120, tied, amounts=[500, 1000], refund_rate=0.15)
    add("edge_many_ties", "edge", tie_feed, 20, 4, 1)
    for index in range(8):
        segs = _segment_ids(rng, rng.randint(2, 12))
        rows = _feed(rng, rng.randint(10, 250), segs, refund_rate=rng.choice([0.05, 0.1, 0.3]))
        window = rng.randint(1, max(1, len(rows) // 2))
        add(f"random_{index + 1}", "random", rows, window, rng.randint(1, 5), rng.randint(1, 6))
    segs = _segment_ids(rng, 60)
    add("random_medium", "random", _feed(rng, 3000, segs), 300, 5, 7)

    n, window, every = params["perf_rows"], params["perf_window"], params["perf_every"]
    segs = _segment_ids(rng, params["segment_count"])
    rows = _feed(rng, n, segs, amounts=[250 * m for m in (1, 2, 4, 6, 8, 12, 20)], skew=0.4)
    add("scale_long_feed", "scale", rows, window, 5, every, kind="performance")

    first = cases[0]
    return {
        "task_data": {
            "input": {
                names["feed_arg"]: first["args"][0],
                names["window_arg"]: first["args"][1],
                names["k_arg"]: first["args"][2],
                names["every_arg"]: first["args"][3],
            },
            "expected_output": first["expected"],
        },
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, list):
        return False, f"returned {type(actual).__name__}, expected a list of leaderboards"
    if len(actual) != len(expected):
        return False, f"returned {len(actual)} leaderboards, expected a different number"
    for board in actual:
        if not isinstance(board, list) or not all(isinstance(s, str) for s in board):
            return False, "every leaderboard must be a list of segment id strings"
    wrong = sum(1 for e, a in zip(expected, actual) if e != a)
    if wrong:
        return False, f"{wrong} of {len(expected)} leaderboards differ from the expected ones"
    return True, "all leaderboards match"
