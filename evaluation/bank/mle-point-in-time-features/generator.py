"""Hidden-test generator for mle-point-in-time-features (trusted bank code, plain stdlib).

Every case is a small extract of the three sources (transactions, profile snapshots, account
holders) plus a batch of labels; the expected feature table comes from a per-customer bisect
over prefix sums (``_fast``) and is cross-checked, on every functional case, against a per-label
scan of the whole extract (``_brute``). ``_brute`` also takes switches that each turn one rule
off; every per-rule case asserts that its switch changes the answer, so each rule the workspace
states is tested on every seed (the literal readings under references/literal/ model the same
switches). The performance extract and the sample extract under data/sample/ come from
``perf_rng`` only, so instances that agree on ``perf_labels`` share one calibration.

Time is integer seconds since 2025-01-01 00:00:00 UTC; days are those seconds // 86400.
"""

from __future__ import annotations

import datetime
from bisect import bisect_left, bisect_right

DAY = 86400
HOUR = 3600
# Every load and landing hour the parameters allow: the performance labels sit on all of them,
# so the performance batch depends on perf_labels only.
PERF_HOURS = (2, 3, 4, 6, 7)
EPOCH = datetime.datetime(2025, 1, 1)
GRADES = ["A", "B", "C", "D", "E"]

RIGHT = {
    "lag": True,  # transactions only once the nightly load has run
    "load_inclusive": True,  # a label exactly at the load hour sees that load
    "anchor": "cutoff",  # windows end at the as-of cutoff and are measured back from it
    "start_inclusive": True,  # a transaction at the window's first instant is inside
    "attribution": "posting",  # link in force on the posting day (posting|at_p|latest|primary)
    "vt_inclusive": False,  # valid_to is the first day the link no longer holds
    "winsor": "upper",  # the notebook's cap: min(amount, cap) (upper|both|none)
    "dedupe": True,  # replayed loads repeat a txn_id; keep it once
    "since_from": "p",  # days since the last visible transaction, from the prediction time
    "since_visible": True,  # ... the last *visible* one
    "snap_rule": "landed",  # landed: D + 1 day at the landing hour; same_day: D <= day(P)
    "snap_inclusive": True,  # a label exactly at the landing hour sees that snapshot
    "stale": True,  # snapshots older than max_age days behind the newest landable are ignored
    "snap_accounts": "at_p",  # accounts held at the prediction time (at_p|latest|ever)
}


_DATES: dict[int, str] = {}


def _date(day: int) -> str:
    if day not in _DATES:
        _DATES[day] = (EPOCH + datetime.timedelta(days=day)).strftime("%Y-%m-%d")
    return _DATES[day]


def _ts(secs: int) -> str:
    day, rest = divmod(secs, DAY)
    return f"{_date(day)} {rest // HOUR:02d}:{rest % HOUR // 60:02d}:{rest % 60:02d}"


def columns(params):
    s, l = params["short_window"], params["long_window"]
    return [
        "label_id",
        f"txn_count_{s}d",
        f"txn_sum_{s}d",
        f"txn_count_{l}d",
        f"txn_sum_{l}d",
        "days_since_last_txn",
        "credit_limit_total",
        "balance_total",
        "max_days_past_due",
    ]


# --------------------------------------------------------------------------- worlds


def _world(rng, n_accounts, n_customers, first_day, last_day, density, snap_from=None, dup=0.02,
           boundary=0.12, big=0.04):
    """A random extract: accounts opened, transferred, shared and closed over the period."""
    customers = [f"C{rng.randint(10000, 99999)}{i:03d}" for i in range(n_customers)]
    links, txns, snaps = [], [], []
    span = last_day - first_day
    serial = rng.randint(100000, 400000)
    for index in range(n_accounts):
        account = f"A{rng.randint(1000, 9999)}{index:04d}"
        opened = first_day + rng.randint(0, span // 3)
        closed = None
        if rng.random() < 0.18:
            closed = rng.randint(opened + 10, last_day + 5)
        owner = rng.choice(customers)
        end = closed
        holders = [owner]
        if rng.random() < 0.3 and (closed or last_day) - opened > 12:
            moved = rng.randint(opened + 5, (closed or last_day) - 3)
            links.append([account, owner, "primary", opened, moved])
            owner2 = rng.choice([c for c in customers if c != owner])
            holders.append(owner2)
            links.append([account, owner2, "primary", moved, end])
        else:
            links.append([account, owner, "primary", opened, end])
        if rng.random() < 0.3 and len(customers) > len(holders):
            joint = rng.choice([c for c in customers if c not in holders])
            start = rng.randint(opened, max(opened, (closed or last_day) - 4))
            stop = end
            if rng.random() < 0.4:
                stop = rng.randint(start + 1, (closed or last_day) + 3)
                if closed is not None:
                    stop = min(stop, closed)
                if stop <= start:
                    stop = start + 1
            links.append([account, joint, "joint", start, stop])
        active_to = closed if closed is not None else last_day + 1
        n = max(1, int((active_to - opened) * density * rng.uniform(0.3, 1.7)))
        for _ in range(n):
            day = rng.randint(opened, active_to - 1)
            roll = rng.random()
            if roll < boundary / 2:
                tod = 0
            elif roll < boundary:
                tod = DAY - 1
            else:
                tod = rng.randint(0, DAY - 1)
            roll = rng.random()
            if roll < big / 2:
                amount = rng.randint(150000, 900000)
            elif roll < big:
                amount = -rng.randint(150000, 600000)
            elif roll < big + 0.08:
                amount = -rng.randint(100, 20000)
            else:
                amount = rng.choice([rng.randint(100, 9000), rng.randint(1000, 60000)])
            serial += rng.randint(1, 3)
            txns.append([f"T{serial:08d}", account, day * DAY + tod, amount])
        limit = rng.choice([100000, 250000, 500000, 750000, 1000000, 1500000])
        balance = rng.randint(0, limit)
        dpd = 0
        start = opened if snap_from is None else max(opened, snap_from)
        day = start
        while day < min(active_to, last_day + 1):
            if rng.random() < 0.06:
                day += rng.randint(2, 8)  # the snapshot job skipped this account for a while
                continue
            if rng.random() < 0.05:
                limit = max(50000, limit + rng.choice([-100000, 100000, 250000]))
            balance = max(0, min(limit + 50000, balance + rng.randint(-40000, 40000)))
            if dpd:
                dpd = 0 if rng.random() < 0.15 else dpd + 1
            elif rng.random() < 0.03:
                dpd = rng.randint(1, 40)
            snaps.append([day, account, limit, balance, dpd, rng.choice(GRADES)])
            day += 1
    for _ in range(int(len(txns) * dup)):
        txns.append(list(rng.choice(txns)))
    rng.shuffle(txns)
    rng.shuffle(snaps)
    rng.shuffle(links)
    return {"customers": customers, "links": links, "txns": txns, "snaps": snaps}


def _labels(rng, world, n, first_day, last_day, hours, start_id):
    """Labels whose prediction times often sit on a boundary: midnight, or one of ``hours``
    (the load and landing hours) and the second before it."""
    special = [0, DAY - 1]
    for hour in hours:
        special += [hour * HOUR, hour * HOUR - 1]
    customers = world["customers"] + ["C0000000"]  # one nobody has ever linked
    out = []
    for i in range(n):
        day = rng.randint(first_day, last_day)
        tod = rng.choice(special) if rng.random() < 0.45 else rng.randint(0, DAY - 1)
        out.append([start_id + i, rng.choice(customers), day * DAY + tod])
    return out


def encode(world, labels):
    """The entry point's two arguments: the labels and the extract, column-oriented."""
    txns, snaps, links = world["txns"], world["snaps"], world["links"]
    label_cols = {
        "label_id": [x[0] for x in labels],
        "customer_id": [x[1] for x in labels],
        "prediction_time": [_ts(x[2]) for x in labels],
    }
    tables = {
        "transactions": {
            "txn_id": [t[0] for t in txns],
            "account_id": [t[1] for t in txns],
            "posted_at": [_ts(t[2]) for t in txns],
            "amount_cents": [t[3] for t in txns],
        },
        "profile_snapshots": {
            "snapshot_date": [_date(s[0]) for s in snaps],
            "account_id": [s[1] for s in snaps],
            "credit_limit_cents": [s[2] for s in snaps],
            "balance_cents": [s[3] for s in snaps],
            "days_past_due": [s[4] for s in snaps],
            "review_grade": [s[5] for s in snaps],
        },
        "account_holders": {
            "account_id": [k[0] for k in links],
            "customer_id": [k[1] for k in links],
            "holder_role": [k[2] for k in links],
            "valid_from": [_date(k[3]) for k in links],
            "valid_to": [None if k[4] is None else _date(k[4]) for k in links],
        },
    }
    return label_cols, tables


# --------------------------------------------------------------------------- features


def _cap(amount, cap, mode):
    if mode == "upper":
        return min(amount, cap)
    if mode == "both":
        return max(-cap, min(amount, cap))
    return amount


def _cutoff(p, params, inclusive=True):
    return (p - params["txn_load_hour"] * HOUR - (0 if inclusive else 1)) // DAY * DAY


def _newest_landable(p, params, inclusive=True):
    return (p - params["snapshot_land_hour"] * HOUR - (0 if inclusive else 1)) // DAY - 1


def _brute(world, labels, params, **switches):
    """Per-label scan of the whole extract; ``switches`` turn single rules off."""
    f = {**RIGHT, **switches}
    cap, age = params["winsor_cap_cents"], params["snapshot_max_age_days"]
    windows = [params["short_window"], params["long_window"]]
    txns = world["txns"]
    if f["dedupe"]:
        seen, kept = set(), []
        for t in txns:
            if t[0] not in seen:
                seen.add(t[0])
                kept.append(t)
        txns = kept
    links = world["links"]
    of_account = {}
    for k in links:
        of_account.setdefault(k[0], []).append(k)
    latest = {}
    for k in links:  # the notebook's "current holder": the link with the latest valid_from
        if k[0] not in latest or k[3] >= latest[k[0]][3]:
            latest[k[0]] = k

    def in_force(k, day):
        if k[3] > day:
            return False
        return k[4] is None or (day <= k[4] if f["vt_inclusive"] else day < k[4])

    out = {name: [] for name in columns(params)}
    memo = {}
    for label_id, customer, p in labels:
        pday = p // DAY

        def holds(account, day):
            mode = f["attribution"]
            if mode == "latest":
                return account in latest and latest[account][1] == customer
            if mode == "at_p":
                return any(k[1] == customer and in_force(k, pday) for k in of_account.get(account, ()))
            return any(
                k[1] == customer and in_force(k, day) and (mode != "primary" or k[2] == "primary")
                for k in of_account.get(account, ())
            )

        cut = _cutoff(p, params, f["load_inclusive"])
        key = (customer, pday if f["attribution"] == "at_p" else None)
        if key not in memo:  # which transactions are this customer's does not depend on P
            memo[key] = [t for t in txns if holds(t[1], t[2] // DAY)]
        mine = memo[key]
        visible = [t for t in mine if (t[2] < cut if f["lag"] else t[2] <= p)]
        out["label_id"].append(label_id)
        end = cut if f["lag"] else p
        for n in windows:
            start = (cut if f["anchor"] == "cutoff" else p) - n * DAY
            inside = [
                t for t in visible if (start <= t[2] if f["start_inclusive"] else start < t[2])
            ]
            assert all(t[2] <= end for t in inside)
            out[f"txn_count_{n}d"].append(len(inside))
            out[f"txn_sum_{n}d"].append(sum(_cap(t[3], cap, f["winsor"]) for t in inside))
        pool = visible if f["since_visible"] else mine
        if pool:
            ref = p if f["since_from"] == "p" else cut
            out["days_since_last_txn"].append((ref - max(t[2] for t in pool)) // DAY)
        else:
            out["days_since_last_txn"].append(None)
        if f["snap_rule"] == "landed":
            newest = _newest_landable(p, params, f["snap_inclusive"])
        else:
            newest = pday
        mode = f["snap_accounts"]
        if mode == "latest":
            accounts = {a for a, k in latest.items() if k[1] == customer}
        elif mode == "ever":
            accounts = {k[0] for k in links if k[1] == customer and k[3] <= pday}
        else:
            accounts = {k[0] for k in links if k[1] == customer and in_force(k, pday)}
        picked = []
        for account in accounts:
            rows = [
                s for s in world["snaps"]
                if s[1] == account and s[0] <= newest and (not f["stale"] or s[0] >= newest - age)
            ]
            if rows:
                picked.append(max(rows, key=lambda s: s[0]))
        if picked:
            out["credit_limit_total"].append(sum(s[2] for s in picked))
            out["balance_total"].append(sum(s[3] for s in picked))
            out["max_days_past_due"].append(max(s[4] for s in picked))
        else:
            out["credit_limit_total"].append(None)
            out["balance_total"].append(None)
            out["max_days_past_due"].append(None)
    return out


def _fast(world, labels, params):
    """Prefix sums per customer and per-account snapshot lists, bisected per label."""
    cap, age = params["winsor_cap_cents"], params["snapshot_max_age_days"]
    windows = [params["short_window"], params["long_window"]]
    by_account = {}
    for k in world["links"]:
        by_account.setdefault(k[0], []).append(k)
    held_by = {}
    for k in world["links"]:
        held_by.setdefault(k[1], []).append(k)
    seen = set()
    per_customer = {}
    for txn_id, account, posted, amount in world["txns"]:
        if txn_id in seen:
            continue
        seen.add(txn_id)
        day = posted // DAY
        for k in by_account.get(account, ()):
            if k[3] <= day and (k[4] is None or day < k[4]):
                per_customer.setdefault(k[1], []).append((posted, min(amount, cap)))
    stream = {}
    for customer, rows in per_customer.items():
        rows.sort()
        times = [r[0] for r in rows]
        prefix = [0]
        for r in rows:
            prefix.append(prefix[-1] + r[1])
        stream[customer] = (times, prefix)
    snaps = {}
    for s in sorted(world["snaps"]):
        snaps.setdefault(s[1], ([], []))
        snaps[s[1]][0].append(s[0])
        snaps[s[1]][1].append(s)
    out = {name: [] for name in columns(params)}
    for label_id, customer, p in labels:
        out["label_id"].append(label_id)
        cut = _cutoff(p, params)
        times, prefix = stream.get(customer, ([], [0]))
        hi = bisect_left(times, cut)
        for n in windows:
            lo = bisect_left(times, cut - n * DAY)
            out[f"txn_count_{n}d"].append(hi - lo)
            out[f"txn_sum_{n}d"].append(prefix[hi] - prefix[lo])
        out["days_since_last_txn"].append((p - times[hi - 1]) // DAY if hi else None)
        pday, newest = p // DAY, _newest_landable(p, params)
        picked = []
        accounts = {
            k[0] for k in held_by.get(customer, ()) if k[3] <= pday and (k[4] is None or pday < k[4])
        }
        for account in accounts:
            days, rows = snaps.get(account, ([], []))
            at = bisect_right(days, newest) - 1
            if at >= 0 and days[at] >= newest - age:
                picked.append(rows[at])
        if picked:
            out["credit_limit_total"].append(sum(s[2] for s in picked))
            out["balance_total"].append(sum(s[3] for s in picked))
            out["max_days_past_due"].append(max(s[4] for s in picked))
        else:
            out["credit_limit_total"].append(None)
            out["balance_total"].append(None)
            out["max_days_past_due"].append(None)
    return out


# --------------------------------------------------------------------------- cases

# Per-rule cases: the switch that turns the rule off must change the expected table.
RULE_CASES = [
    ("rule_transactions_load_lag", {"lag": False}),
    ("rule_transactions_load_hour_boundary", {"load_inclusive": False}),
    ("rule_window_anchored_at_cutoff", {"anchor": "p"}),
    ("rule_window_start_inclusive", {"start_inclusive": False}),
    ("rule_holder_in_force_on_posting_day", {"attribution": "at_p"}),
    ("rule_holder_valid_to_exclusive", {"vt_inclusive": True}),
    ("rule_joint_and_former_holders", {"attribution": "latest"}),
    ("rule_joint_holder_gets_full_amount", {"attribution": "primary"}),
    ("rule_cap_applies_upward_only", {"winsor": "both"}),
    ("rule_cap_before_summing", {"winsor": "none"}),
    ("rule_replayed_transactions", {"dedupe": False}),
    ("rule_days_since_from_prediction_time", {"since_from": "cutoff"}),
    ("rule_days_since_visible_only", {"since_visible": False}),
    ("rule_snapshot_lands_next_morning", {"snap_rule": "same_day"}),
    ("rule_snapshot_landing_hour_boundary", {"snap_inclusive": False}),
    ("rule_snapshot_max_age", {"stale": False}),
    ("rule_snapshot_accounts_held_at_prediction", {"snap_accounts": "ever"}),
]


def _small(rng, params, n_labels=30):
    first, last = 10, 110
    world = _world(rng, rng.randint(7, 10), rng.randint(5, 7), first, last, rng.uniform(0.4, 0.8))
    hours = (params["txn_load_hour"], params["snapshot_land_hour"])
    labels = _labels(rng, world, n_labels, 60, last + 2, hours, rng.randint(1000, 9000))
    return world, labels


def _quiet(rng, params):
    """A visible example: one account per customer, no transfers, no joint holders, amounts
    under the cap, no replays, labels at midday well inside the data."""
    for _ in range(400):
        customers = [f"C{rng.randint(10000, 99999)}{i:03d}" for i in range(2)]
        links, txns, snaps = [], [], []
        for i, customer in enumerate(customers):
            account = f"A{rng.randint(1000, 9999)}{i:04d}"
            links.append([account, customer, "primary", 0, None])
            for _ in range(rng.randint(4, 7)):
                posted = rng.randint(5, 75) * DAY + rng.randint(13 * HOUR, 18 * HOUR)
                txns.append([f"T{rng.randint(10**7, 10**8 - 1)}", account, posted,
                             rng.randint(500, 40000)])
            limit, balance = rng.choice([200000, 300000, 500000]), rng.randint(20000, 150000)
            for day in range(77, 90):
                snaps.append([day, account, limit, balance, 0, rng.choice(GRADES)])
        world = {"customers": customers, "links": links, "txns": txns, "snaps": snaps}
        labels = [
            [100 + i, customers[i % 2], rng.randint(82, 88) * DAY + 12 * HOUR + rng.randint(0, 2400)]
            for i in range(4)
        ]
        expected = _brute(world, labels, params)
        if all(_brute(world, labels, params, **{k: v}) == expected for _, sw in RULE_CASES
               for k, v in sw.items()):
            return world, labels, expected
    raise AssertionError("no quiet visible example found")


def _case(name, category, world, labels, expected, visible=False):
    label_cols, tables = encode(world, labels)
    return {"name": name, "kind": "functional", "category": category,
            "args": [label_cols, tables], "expected": expected, "visible": visible}


def _checked(world, labels, params, name):
    expected = _fast(world, labels, params)
    if expected != _brute(world, labels, params):
        raise AssertionError(f"bisect and scan disagree on {name}")
    return expected


def generate(params, names, rng, perf_rng):
    cases = []
    example = None
    for index in range(2):
        world, labels, expected = _quiet(rng, params)
        if _fast(world, labels, params) != expected:
            raise AssertionError("bisect and scan disagree on a visible example")
        cases.append(_case(f"visible_example_{index + 1}", "example", world, labels, expected, True))
        example = example or (world, labels, expected)
    for name, switch in RULE_CASES:
        for _attempt in range(60):
            world, labels = _small(rng, params)
            expected = _checked(world, labels, params, name)
            if _brute(world, labels, params, **switch) != expected:
                break
        else:
            raise AssertionError(f"{name}: no extract where the rule matters")
        cases.append(_case(name, "rule", world, labels, expected))
    # Edges: a customer nobody ever linked, an empty transaction table, all accounts closed.
    world, labels = _small(rng, params, 12)
    labels = [[1, "C0000000", labels[0][2]], *labels[1:]]
    cases.append(_case("edge_unknown_customer", "edge", world, labels,
                       _checked(world, labels, params, "edge_unknown_customer")))
    world, labels = _small(rng, params, 12)
    world = {**world, "txns": []}
    cases.append(_case("edge_no_transactions", "edge", world, labels,
                       _checked(world, labels, params, "edge_no_transactions")))
    world, labels = _small(rng, params, 0)
    cases.append(_case("edge_no_labels", "edge", world, [], _checked(world, [], params, "x")))
    for index in range(4):
        world, labels = _small(rng, params, rng.randint(20, 45))
        name = f"random_extract_{index + 1}"
        cases.append(_case(name, "random", world, labels, _checked(world, labels, params, name)))

    # Performance: one extract shared by every instance with the same perf_labels.
    perf_world = _world(perf_rng, 600, 480, 0, 150, 0.33, snap_from=105, dup=0.01)
    perf_labels = _labels(perf_rng, perf_world, params["perf_labels"], 115, 150, PERF_HOURS, 1)
    label_cols, tables = encode(perf_world, perf_labels)
    cases.append({"name": "scale_training_set", "kind": "performance", "category": "scale",
                  "args": [label_cols, tables], "expected": _fast(perf_world, perf_labels, params)})

    sample = _world(perf_rng, 40, 30, 0, 120, 0.6, dup=0.01)
    world, labels, expected = example
    label_cols, tables = encode(world, labels)
    arg_labels, arg_tables = names["labels_arg"], names["tables_arg"]
    return {
        "task_data": {"input": {arg_labels: label_cols, arg_tables: tables},
                      "expected_output": expected},
        "cases": cases,
        "files": _sample_files(sample),
    }


def _csv(header, rows):
    def cell(v):
        return "" if v is None else str(v)
    return "\n".join([",".join(header), *(",".join(cell(v) for v in row) for row in rows)]) + "\n"


def _sample_files(world):
    _, tables = encode(world, [])
    out = {}
    for name, path in (("transactions", "data/sample/transactions.csv"),
                       ("profile_snapshots", "data/sample/profile_snapshots.csv"),
                       ("account_holders", "data/sample/account_holders.csv")):
        table = tables[name]
        header = list(table)
        out[path] = _csv(header, list(zip(*(table[h] for h in header))))
    return out


def compare(expected, actual):
    if not isinstance(actual, dict):
        return False, "returned something other than a dict of columns"
    if set(actual) != set(expected):
        extra = sorted(set(actual) - set(expected))
        missing = sorted(set(expected) - set(actual))
        parts = []
        if missing:
            parts.append("missing columns " + ", ".join(missing))
        if extra:
            parts.append("unexpected columns " + ", ".join(extra))
        return False, "; ".join(parts)
    for name in expected:
        want, got = expected[name], actual[name]
        if not isinstance(got, list) or len(got) != len(want):
            return False, f"column {name} does not have one value per label"
        bad = 0
        for w, g in zip(want, got):
            if w is None or g is None:
                bad += (w is None) != (g is None)
            elif isinstance(g, bool) or not isinstance(g, int | float) or g != w:
                bad += 1
        if bad:
            return False, f"column {name} differs from the expected value for {bad} of {len(want)} labels"
    return True, ""
