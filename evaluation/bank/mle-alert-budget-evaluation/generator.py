"""Hidden-test generator for mle-alert-budget-evaluation (trusted bank code, plain stdlib).

The nightly export (data/transactions.csv) and the performance case come from ``perf_rng`` only
(seeded by the template version and ``perf_rows``), so instances that agree on ``perf_rows``
share one calibration. Functional cases come from the seed's ``rng`` and are passed inline as a
dict of columns (the same layout as the export).

Expected values come from ``_evaluate`` (indexed: bisect per card, one sort per site-day); every
functional case is cross-checked against ``_brute`` (a scan of every row for every feature, a
selection by repeated minimum per site-day). ``_evaluate`` also models the literal readings
(flags); every rule case is drawn until the reading it targets gives a different answer, so each
shipped literal reading fails at least one hidden case on every seed.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import random
from bisect import bisect_left, bisect_right
from operator import itemgetter

DAY = 86_400
EPOCH = dt.date(1970, 1, 1)
FIRST_DAY = (dt.date(2025, 9, 1) - EPOCH).days  # the export's first transaction day
COLUMNS = ["txn_id", "event_ts", "card_id", "site", "channel", "auth_amount", "settled_amount",
           "is_fraud"]
SITE_POOL = ["ABZ", "BFS", "BHM", "BRS", "CBG", "CDF", "CVT", "DND", "DRB", "EDI", "EXT", "GLA",
             "HUL", "INV", "IPS", "LBA", "LCY", "LDS", "LIV", "LTN", "MAN", "NCL", "NOR", "NTG",
             "OXF", "PLH", "PME", "RDG", "SHF", "SOU", "STK", "SWA", "SZX", "WOL", "YRK", "ZDV",
             "KLK", "MDW", "TRU", "WIC"]
CHANNELS = ["pos", "ecom", "atm", "moto"]

# The scorecard shipped in models/scorecard.json (points are integers: ties are exact).
AMOUNT_EDGES = [0, 25, 100, 400, 1500]          # pounds, lower bounds
AMOUNT_POINTS = [0, 3, 7, 12, 18]
CHANNEL_POINTS = {"pos": 0, "atm": 4, "moto": 6, "ecom": 9}
VELOCITY_EDGES = [0, 1, 3, 6]
VELOCITY_POINTS = [0, 2, 6, 11]
PRIOR_EDGES = [0, 1, 2]
PRIOR_POINTS = [0, 14, 22]
NIGHT_POINTS = [0, 5]                           # hour 00-05 UTC
LOOKBACK_DAYS = 90
VELOCITY_S = DAY

# config/bank-holidays.json (the GOV.UK feed the rota tool reads), 2025-2026.
HOLIDAY_FEED = {
    "england-and-wales": [
        ("2025-01-01", "New Year’s Day"), ("2025-04-18", "Good Friday"),
        ("2025-04-21", "Easter Monday"), ("2025-05-05", "Early May bank holiday"),
        ("2025-05-26", "Spring bank holiday"), ("2025-08-25", "Summer bank holiday"),
        ("2025-12-25", "Christmas Day"), ("2025-12-26", "Boxing Day"),
        ("2026-01-01", "New Year’s Day"), ("2026-04-03", "Good Friday"),
        ("2026-04-06", "Easter Monday"), ("2026-05-04", "Early May bank holiday"),
        ("2026-05-25", "Spring bank holiday"), ("2026-08-31", "Summer bank holiday"),
        ("2026-12-25", "Christmas Day"), ("2026-12-28", "Boxing Day (substitute day)"),
    ],
    "scotland": [
        ("2025-01-01", "New Year’s Day"), ("2025-01-02", "2nd January"),
        ("2025-04-18", "Good Friday"), ("2025-05-05", "Early May bank holiday"),
        ("2025-05-26", "Spring bank holiday"), ("2025-08-04", "Summer bank holiday"),
        ("2025-12-01", "St Andrew’s Day (substitute day)"), ("2025-12-25", "Christmas Day"),
        ("2025-12-26", "Boxing Day"), ("2026-01-01", "New Year’s Day"),
        ("2026-01-02", "2nd January"), ("2026-04-03", "Good Friday"),
        ("2026-05-04", "Early May bank holiday"), ("2026-05-25", "Spring bank holiday"),
        ("2026-08-03", "Summer bank holiday"), ("2026-11-30", "St Andrew’s Day"),
        ("2026-12-25", "Christmas Day"), ("2026-12-28", "Boxing Day (substitute day)"),
    ],
    "northern-ireland": [
        ("2025-01-01", "New Year’s Day"), ("2025-03-17", "St Patrick’s Day"),
        ("2025-04-18", "Good Friday"), ("2025-04-21", "Easter Monday"),
        ("2025-05-05", "Early May bank holiday"), ("2025-05-26", "Spring bank holiday"),
        ("2025-07-14", "Battle of the Boyne (Orangemen’s Day) (substitute day)"),
        ("2025-08-25", "Summer bank holiday"), ("2025-12-25", "Christmas Day"),
        ("2025-12-26", "Boxing Day"), ("2026-01-01", "New Year’s Day"),
        ("2026-03-17", "St Patrick’s Day"), ("2026-04-03", "Good Friday"),
        ("2026-04-06", "Easter Monday"), ("2026-05-04", "Early May bank holiday"),
        ("2026-05-25", "Spring bank holiday"),
        ("2026-07-13", "Battle of the Boyne (Orangemen’s Day) (substitute day)"),
        ("2026-08-31", "Summer bank holiday"), ("2026-12-25", "Christmas Day"),
        ("2026-12-28", "Boxing Day (substitute day)"),
    ],
}


def _day_of(text):
    return (dt.date.fromisoformat(text) - EPOCH).days


HOLIDAYS = {division: frozenset(_day_of(d) for d, _ in events)
            for division, events in HOLIDAY_FEED.items()}
ALL_HOLIDAYS = frozenset().union(*HOLIDAYS.values())


def division_of(region):
    """The GOV.UK division of a roster region (Wales shares England's calendar)."""
    return {"Scotland": "scotland", "Northern Ireland": "northern-ireland"}.get(
        region, "england-and-wales")


def _bin(edges, points, value):
    return points[bisect_right(edges, value) - 1]


def day_str(day):
    return (EPOCH + dt.timedelta(days=day)).isoformat()


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------

Row = tuple  # (txn_id, ts, card, site, channel, auth_cents, settled_cents or None, fraud)


def _amount_tables(rng, size):
    """Per channel, `size` log-normal amounts in cents (drawn once: rows pick from them)."""
    tables = {}
    for channel, base in (("pos", 3.2), ("ecom", 3.9), ("atm", 4.3), ("moto", 4.6)):
        tables[channel] = [max(100, min(int(math.exp(rng.gauss(base, 1.05)) * 100), 900_000))
                           for _ in range(size)]
    return tables


def make_rows(rng, n_rows, n_cards, sites, days, first_day=FIRST_DAY, unsettled_from=None,
              fraud_scale=1.0, retry_rate=0.0, retry_boundary=0.0):
    """Rows of a synthetic export: cards with a home site, bursts on compromised cards, and
    (retry_rate) requests the card switch re-sent after its timeout: the same txn_id, card,
    site, channel, amount and label, a later event_ts, never settled."""
    home = [rng.choice(sites) for _ in range(n_cards)]
    compromised = {}
    for card in rng.sample(range(n_cards), max(1, n_cards // 12)):
        compromised[card] = first_day + rng.randrange(days)
    ids = rng.sample(range(1_000_000, 9_999_999), n_rows)
    size = 2048 if n_rows > 20_000 else 128
    tables = _amount_tables(rng, size)
    rows = []
    rnd = rng.random
    n_sites = len(sites)
    last = first_day + days - 1
    for index in range(n_rows):
        card = int(rnd() * n_cards)
        hit = compromised.get(card)
        day = first_day + int(rnd() * days)
        second = int(rnd() * DAY)
        if hit is not None:
            if rnd() < 0.5:
                day = min(last, hit + int(rnd() * 6))
            if rnd() < 0.3:
                second = int(rnd() * 21_600)
        draw = rnd()
        channel = "pos" if draw < 0.58 else "ecom" if draw < 0.88 else "atm" if draw < 0.96 \
            else "moto"
        site = home[card] if rnd() < 0.85 else sites[int(rnd() * n_sites)]
        auth = tables[channel][int(rnd() * size)]
        draw = rnd()
        if channel == "pos" and draw < 0.35:  # tips and pre-authorisation holds
            settled = auth + int(auth * (0.05 + draw * 0.7))
        elif channel == "ecom" and draw < 0.45:  # currency conversion at settlement
            settled = max(1, int(auth * (0.93 + draw * 0.3)))
        else:
            settled = auth
        if unsettled_from is not None and day >= unsettled_from:
            settled = None
        p = 0.004 + (0.01 if channel == "ecom" else 0.0) + (0.006 if auth > 40_000 else 0.0)
        if hit is not None and day >= hit:
            p += 0.35
        fraud = 1 if rnd() < p * fraud_scale else 0
        rows.append(Row((ids[index], day * DAY + second, 100_000 + card * 7, site, channel, auth,
                         settled, fraud)))
    if retry_rate:
        rows.extend(retries(rng, rows, int(n_rows * retry_rate), boundary=retry_boundary))
    return rows


def retries(rng, rows, count, boundary=0.0):
    """Retry copies of `count` rows (moved into `rows` where needed): 8, 16 or 24 s after the
    first attempt (one to three switch timeouts); with probability `boundary` the first attempt
    is moved to just before 06:00 or midnight UTC, so that its retry straddles the night bin or
    the day."""
    out = []
    for index in rng.sample(range(len(rows)), min(count, len(rows))):
        r = rows[index]
        gap = 8 * rng.randint(1, 3)
        if boundary and rng.random() < boundary:
            edge = (r[1] // DAY) * DAY + rng.choice((6 * 3600, DAY))
            r = rows[index] = Row((r[0], edge - rng.randint(1, gap), *r[2:]))
        out.append(Row((r[0], r[1] + gap, *r[2:6], None, r[7])))
    return out


def export_csv(rows):
    ordered = sorted(rows, key=itemgetter(2, 1, 0))  # clustered by card, like the export
    memo = {None: ""}
    out = [",".join(COLUMNS)]
    for r in ordered:
        auth, settled = r[5], r[6]
        a = memo.get(auth)
        if a is None:
            a = memo[auth] = "%d.%02d" % divmod(auth, 100)
        b = memo.get(settled)
        if b is None:
            b = memo[settled] = "%d.%02d" % divmod(settled, 100)
        out.append(f"{r[0]},{r[1]},{r[2]},{r[3]},{r[4]},{a},{b},{r[7]}")
    return "\n".join(out) + "\n", ordered


def columns(rows):
    """The inline layout of a case: a dict of columns (amounts in pounds, null when unsettled)."""
    return {
        "txn_id": [r[0] for r in rows],
        "event_ts": [r[1] for r in rows],
        "card_id": [r[2] for r in rows],
        "site": [r[3] for r in rows],
        "channel": [r[4] for r in rows],
        "auth_amount": [r[5] / 100 for r in rows],
        "settled_amount": [None if r[6] is None else r[6] / 100 for r in rows],
        "is_fraud": [r[7] for r in rows],
    }


# ---------------------------------------------------------------------------------------------
# The metric (and the literal readings, as flags)
# ---------------------------------------------------------------------------------------------

# Sites without weekend cover (config/site_roster.csv, drawn from perf_rng in generate()).
_ROSTER = {"closed": frozenset(), "division": {}}


def weekend(day):
    return (day + 3) % 7 >= 5  # day 0 (1970-01-01) was a Thursday


def unstaffed(site, day, ignore_roster=False, ignore_holidays=False, all_regions=False):
    """A site without weekend cover works neither Saturdays and Sundays nor the bank holidays of
    its region's division (the rota tool plans a holiday with the Sunday pattern)."""
    if ignore_roster or site not in _ROSTER["closed"]:
        return False
    if weekend(day):
        return True
    if ignore_holidays:
        return False
    return day in (ALL_HOLIDAYS if all_regions else HOLIDAYS[_ROSTER["division"][site]])


def first_attempts(rows, last=False):
    """One row per txn_id: the first attempt (smallest event_ts), or the last one (`last`), in
    the input order."""
    best = {}
    for r in rows:
        cur = best.get(r[0])
        if cur is None or (r[1] > cur[1] if last else r[1] < cur[1]):
            best[r[0]] = r
    return [r for r in rows if best[r[0]] is r]


READINGS = {
    "correct": {},
    "legacy-copy": {"legacy_prior": True, "settled": True},
    "text-only": {"text_window": True, "no_delay": True},
    "ignores-label-delay": {"no_delay": True},
    "ignores-budget-ties": {"ties_input": True},
    "ignores-min-positives": {"all_sites": True},
    "ignores-known-columns": {"settled": True},
    "ignores-roster": {"ignore_roster": True},
    "seconds-lookback": {"prior_seconds": True},
    "leaky-prior-only": {"legacy_prior": True},  # not shipped: isolates the leak in a case
    "ignores-holidays": {"ignore_holidays": True},
    "holidays-all-regions": {"all_regions": True},
    "counts-retries": {"count_retries": True},
    "retry-last-wins": {"retry_last": True},
}


def _points(row, velocity, prior, settled_flag):
    cents = row[5]
    if settled_flag and row[6] is not None:
        cents = row[6]
    return (_bin(AMOUNT_EDGES, AMOUNT_POINTS, cents / 100) + CHANNEL_POINTS[row[4]]
            + _bin(VELOCITY_EDGES, VELOCITY_POINTS, velocity)
            + _bin(PRIOR_EDGES, PRIOR_POINTS, prior)
            + NIGHT_POINTS[(row[1] % DAY) // 3600 < 6])


def _legacy_prior(rows):
    """The package's feature: per card, frauds summed over the card's last 90 ACTIVE days up to
    and including the row's own day (its own label and same-day later rows included)."""
    daily = {}
    for r in rows:
        key = (r[2], r[1] // DAY)
        daily[key] = daily.get(key, 0) + r[7]
    per_card = {}
    for (card, day), count in sorted(daily.items()):
        per_card.setdefault(card, []).append((day, count))
    value = {}
    for card, items in per_card.items():
        running = []
        total = 0
        for k, (day, count) in enumerate(items):
            total += count
            running.append(total)
            lo = k - LOOKBACK_DAYS
            value[(card, day)] = total - (running[lo] if lo >= 0 else 0)
    return value


def _evaluate(rows, cutoff_day, budget, min_positives, window_days, delay, legacy_prior=False,
              settled=False, text_window=False, no_delay=False, ties_input=False,
              all_sites=False, prior_seconds=False, ignore_roster=False, ignore_holidays=False,
              all_regions=False, count_retries=False, retry_last=False):
    if not count_retries:
        rows = first_attempts(rows, last=retry_last)
    end = cutoff_day - (0 if text_window else delay)
    start = end - window_days + 1
    lag = 1 if no_delay else delay
    times, frauds = {}, {}
    fraud_ts = {}
    for r in rows:
        times.setdefault(r[2], []).append(r[1])
        if r[7]:
            frauds.setdefault(r[2], []).append(r[1] // DAY)
            fraud_ts.setdefault(r[2], []).append(r[1])
    for values in fraud_ts.values():
        values.sort()
    for store in (times, frauds):
        for values in store.values():
            values.sort()
    legacy = _legacy_prior(rows) if legacy_prior else None
    groups = {}
    for position, r in enumerate(rows):
        day = r[1] // DAY
        if not start <= day <= end:
            continue
        ts_list = times[r[2]]
        velocity = bisect_left(ts_list, r[1]) - bisect_left(ts_list, r[1] - VELOCITY_S)
        if legacy is not None:
            prior = legacy[(r[2], day)]
        else:
            fl = frauds.get(r[2], [])
            prior = bisect_right(fl, day - lag) - bisect_left(fl, day - LOOKBACK_DAYS)
            if prior_seconds:  # a 90 x 86400 s window before event_ts instead of 90 UTC days
                ft = fraud_ts.get(r[2], [])
                prior = max(0, bisect_right(fl, day - lag)
                            - bisect_left(ft, r[1] - LOOKBACK_DAYS * DAY))
        score = _points(r, velocity, prior, settled)
        order = (position,) if ties_input else (r[1], r[0])
        groups.setdefault((r[3], day), []).append(((-score, *order), r[7]))
    stats = {}
    for (site, day), items in groups.items():
        items.sort()
        entry = stats.setdefault(site, [0, 0])
        reviews = 0 if unstaffed(site, day, ignore_roster, ignore_holidays, all_regions) \
            else budget
        for rank, (_key, fraud) in enumerate(items):
            entry[0] += fraud
            if rank < reviews:
                entry[1] += fraud
    return _report(stats, min_positives, all_sites)


def _report(stats, min_positives, all_sites=False):
    sites, included = [], []
    for site in sorted(stats):
        positives, caught = stats[site]
        recall = caught / positives if positives else None
        counted = positives >= (1 if all_sites else min_positives) and positives > 0
        if counted:
            included.append(recall)
        sites.append({"site": site, "positives": positives, "alerted_positives": caught,
                      "recall": recall, "included": counted})
    metric = sum(included) / len(included) if included else None
    return {"recall_at_budget": metric, "sites": sites}


def _brute(rows, cutoff_day, budget, min_positives, window_days, delay):
    """Independent check: every feature by a scan of all rows, the top-B by repeated minimum."""
    end = cutoff_day - delay
    start = end - window_days + 1
    firsts = {}
    for r in rows:  # a txn_id is one transaction, at its first attempt
        if r[0] not in firsts or r[1] < firsts[r[0]][1]:
            firsts[r[0]] = r
    rows = list(firsts.values())
    scored = []
    for r in rows:
        day = r[1] // DAY
        if day < start or day > end:
            continue
        velocity = sum(1 for o in rows if o[2] == r[2] and r[1] - DAY <= o[1] < r[1])
        prior = sum(1 for o in rows if o[2] == r[2] and o[7] == 1
                    and day - LOOKBACK_DAYS <= o[1] // DAY and o[1] // DAY + delay <= day)
        amount = r[5] / 100
        points = 0
        for edge, pts in zip(AMOUNT_EDGES, AMOUNT_POINTS):
            if amount >= edge:
                points = pts
        points += CHANNEL_POINTS[r[4]]
        points += max(p for e, p in zip(VELOCITY_EDGES, VELOCITY_POINTS) if velocity >= e)
        points += max(p for e, p in zip(PRIOR_EDGES, PRIOR_POINTS) if prior >= e)
        points += 5 if (r[1] % DAY) < 6 * 3600 else 0
        scored.append((r, points))
    stats = {}
    for site in {r[3] for r, _ in scored}:
        for day in {r[1] // DAY for r, _ in scored if r[3] == site}:
            pool = [(r, p) for r, p in scored if r[3] == site and r[1] // DAY == day]
            entry = stats.setdefault(site, [0, 0])
            entry[0] += sum(r[7] for r, _ in pool)
            date = EPOCH + dt.timedelta(days=day)
            division = _ROSTER["division"].get(site)
            staffed = not (site in _ROSTER["closed"] and (
                date.weekday() >= 5 or date.isoformat() in {
                    d for d, _ in HOLIDAY_FEED[division]}))
            for _ in range(min(budget if staffed else 0, len(pool))):
                best = min(pool, key=lambda item: (-item[1], item[0][1], item[0][0]))
                entry[1] += best[0][7]
                pool.remove(best)
    return _report(stats, min_positives)


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

def _small(rng, n_rows, n_cards, n_sites, days, fraud_scale=3.0, retry_rate=0.03, sites=None,
           first=None):
    sites = sites or rng.sample(SITE_POOL, n_sites)
    first = FIRST_DAY + rng.randrange(0, 60) if first is None else first
    rows = make_rows(rng, n_rows, n_cards, sites, days, first_day=first, fraud_scale=fraud_scale,
                     retry_rate=retry_rate)
    for index in rng.sample(range(n_rows), n_rows // 20):  # a few unsettled rows
        rows[index] = Row((*rows[index][:6], None, rows[index][7]))
    rng.shuffle(rows)
    return rows, first


def _args(rows, cutoff_day, budget, min_positives, window_days):
    return [columns(rows), day_str(cutoff_day), budget, min_positives, window_days]


def _draw(rng, trial, key):
    """The first non-None result of `trial`: 400 draws from the seed's rng, then draws from a
    fixed fallback sequence (seeded by `key` only). The fallback depends on nothing but the
    label delay and the roster (perf_rows), so it is checked for every combination offline
    (REVIEW.md section 5): no seed can make the search fail."""
    for _attempt in range(400):
        got = trial(rng)
        if got is not None:
            return got
    for k in itertools.count():
        got = trial(random.Random(f"{key}:fallback:{k}"))
        if got is not None:
            return got
    return None  # unreachable


def _rule_case(rng, delay, reading, shape, must_pass=(), key=None):
    """Draw small instances of `shape` until the literal `reading` gives another answer than the
    correct one (and the readings in `must_pass` the same one)."""
    def trial(r):
        rows, first, cutoff, budget, min_pos, window = shape(r)
        args = (rows, cutoff, budget, min_pos, window, delay)
        expected = _evaluate(*args)
        if expected["recall_at_budget"] is None:
            return None
        if _evaluate(*args, **READINGS[reading]) == expected:
            return None
        if any(_evaluate(*args, **READINGS[other]) != expected for other in must_pass):
            return None
        return rows, cutoff, budget, min_pos, window, expected
    return _draw(rng, trial, f"rule:{key or reading}")


def _shape_dense(n_rows=260, n_cards=30, n_sites=3, days=40, budget=(2, 4), min_pos=(1, 3),
                 window=(8, 14)):
    def shape(rng):
        rows, first = _small(rng, n_rows, n_cards, n_sites, days)
        span_end = first + days - 1
        cutoff = span_end - rng.randrange(0, 3)
        return (rows, first, cutoff, rng.randint(*budget), rng.randint(*min_pos),
                rng.randint(*window))
    return shape


def _shape_lookback(rng):
    """A dense slice plus, for a few window transactions, an earlier fraud of the same card on
    the UTC day exactly 90 days before, earlier in that day than the transaction's time
    (inside the 90-day window by days, outside a 90 x 86 400 s window)."""
    rows, first, cutoff, budget, min_pos, window = _shape_dense(days=20)(rng)
    last = max(r[1] // DAY for r in rows)
    candidates = [r for r in rows if r[1] // DAY >= last - 12]
    extra = []
    for r in rng.sample(candidates, min(len(candidates), rng.randint(3, 8))):
        day = r[1] // DAY - LOOKBACK_DAYS
        second = rng.randint(0, r[1] % DAY - 1) if r[1] % DAY else 0
        extra.append(Row((10_000_000 + len(extra), day * DAY + second, r[2], r[3], "pos", 1_500,
                          1_500, 1)))
    rows = rows + extra
    rng.shuffle(rows)
    return rows, first, cutoff, budget, min_pos, window


def _shape_settlement(rng):
    """A dense slice where a third of the authorisations settle far from the authorised amount
    (hotel and fuel pre-authorisations, released holds)."""
    rows, first, cutoff, budget, min_pos, window = _shape_dense()(rng)
    out = []
    for r in rows:
        if r[6] is not None and rng.random() < 0.35:
            r = (*r[:6], max(1, int(r[5] * rng.uniform(0.15, 3.5))), r[7])
        out.append(r)
    return out, first, cutoff, budget, min_pos, window


def _shape_holidays(rng):
    """Late November to mid January at sites without weekend cover, Scottish and English or
    Welsh (St Andrew's Day, Christmas, New Year, 2 January), plus one site with cover."""
    closed = sorted(_ROSTER["closed"])
    scots = [s for s in closed if _ROSTER["division"][s] == "scotland"]
    others = [s for s in closed if _ROSTER["division"][s] != "scotland"]
    open_sites = [s for s in SITE_POOL if s not in _ROSTER["closed"]]
    sites = [rng.choice(scots), *rng.sample(others, 2), rng.choice(open_sites)]
    days = 50
    first = _day_of("2025-11-20") + rng.randrange(0, 10)
    rows, first = _small(rng, 420, 40, 4, days, sites=sites, first=first)
    cutoff = first + days - 1 - rng.randrange(0, 6)
    return rows, first, cutoff, rng.randint(2, 4), rng.randint(1, 3), rng.randint(10, 16)


def _shape_retries(boundary):
    """A dense slice with more switch retries; with `boundary`, many of them straddle 06:00 or
    midnight UTC."""
    def shape(rng):
        rows, first = _small(rng, 320, 30, 2, 30, retry_rate=0.0)
        rows = rows + retries(rng, rows, rng.randint(12, 30), boundary=boundary)
        rng.shuffle(rows)
        cutoff = first + 29 - rng.randrange(0, 3)
        return rows, first, cutoff, rng.randint(1, 3), rng.randint(1, 3), rng.randint(8, 14)
    return shape


def _shape_quiet(rng, delay):
    """An ordinary review: the window covers every transaction, whichever way it is read."""
    days = rng.randint(12, 18)
    rows, first = _small(rng, rng.randint(50, 70), rng.randint(20, 30), 2, days,
                         fraud_scale=4.0, retry_rate=0.0)
    cutoff = first + days - 1 + delay + rng.randint(0, 3)
    window = cutoff - first + 1 + rng.randint(0, 3)
    return rows, first, cutoff, rng.randint(2, 4), 1, window


def _edge_threshold(rng, delay):
    """A site with exactly min_positives positives (counted) and one with one fewer (not)."""
    def trial(r):
        rows, first = _small(r, 220, 30, 3, 30)
        cutoff = first + 29
        window = 12
        stats = _evaluate(rows, cutoff, 3, 1, window, delay)["sites"]
        counts = sorted({s["positives"] for s in stats if s["positives"] > 1})
        for n in counts:
            if any(s["positives"] == n - 1 for s in stats):
                expected = _evaluate(rows, cutoff, 3, n, window, delay)
                if expected["recall_at_budget"] is not None:
                    return rows, cutoff, 3, n, window, expected
        return None
    return _draw(rng, trial, "edge:threshold")


def _check(name, rows, cutoff, budget, min_pos, window, delay, expected):
    if len(rows) <= 400:
        brute = _brute(rows, cutoff, budget, min_pos, window, delay)
        if not _same(brute, expected):
            raise AssertionError(f"indexed and brute-force evaluations disagree on {name}")


def _same(a, b):
    return compare(a, b)[0]


_PERF_CACHE: dict = {}


def _perf(perf_rng, perf_rows):
    key = perf_rows
    if key not in _PERF_CACHE:
        sites = perf_rng.sample(SITE_POOL, 36)
        days = 150
        export_day = FIRST_DAY + days + 1
        rows = make_rows(perf_rng, perf_rows, perf_rows // 12, sites, days,
                         unsettled_from=export_day - 3, retry_rate=0.012,
                         retry_boundary=0.15)
        text, ordered = export_csv(rows)
        cutoff = FIRST_DAY + days - perf_rng.randint(0, 2)
        budget = perf_rng.randint(3, 5)
        min_pos = perf_rng.randint(8, 12)
        window = 28
        _PERF_CACHE[key] = (text, ordered, cutoff, budget, min_pos, window)
    return _PERF_CACHE[key]


REGIONS = ["Scotland", "North East", "North West", "Yorkshire", "Midlands", "Wales",
           "South West", "South East", "London", "East", "Northern Ireland"]
LEADS = ["A. Patel", "B. Morgan", "C. Evans", "D. Walsh", "E. Nowak", "F. Idowu", "G. Reid",
         "H. Lam", "J. Carter", "K. Osei", "L. Murphy", "M. Kaur"]


def _roster(perf_rng):
    """11 of the 40 sites without weekend cover, two of them in Scotland and three in English
    or Welsh regions (so that every calendar of the holiday feed has a site it closes)."""
    order = perf_rng.sample(SITE_POOL, len(SITE_POOL))
    closed = frozenset(order[:11])
    region = {site: perf_rng.choice(REGIONS) for site in SITE_POOL}
    for site in order[:2]:
        region[site] = "Scotland"
    english = [r for r in REGIONS if division_of(r) == "england-and-wales"]
    for site in order[2:5]:
        region[site] = perf_rng.choice(english)
    lines = ["site,region,ops_lead,weekend_cover,queue"]
    for site in sorted(SITE_POOL):
        lines.append(",".join([site, region[site], perf_rng.choice(LEADS),
                               "no" if site in closed else "yes",
                               perf_rng.choice(["card-present", "card-not-present", "mixed"])]))
    division = {site: division_of(region[site]) for site in closed}
    return closed, division, "\n".join(lines) + "\n"


def holiday_feed_json():
    """config/bank-holidays.json in the layout of https://www.gov.uk/bank-holidays.json."""
    feed = {}
    for division, events in HOLIDAY_FEED.items():
        feed[division] = {"division": division, "events": [
            {"title": title, "date": date, "notes": "substitute day" if "substitute" in title
             else "", "bunting": "Good Friday" not in title} for date, title in events]}
    return json.dumps(feed, indent=1, ensure_ascii=False) + "\n"


def generate(params, names, rng, perf_rng):
    delay = params["label_delay"]
    closed, division, roster_csv = _roster(perf_rng)
    _ROSTER["closed"] = closed
    _ROSTER["division"] = division
    text, ordered, p_cut, p_budget, p_min, p_window = _perf(perf_rng, params["perf_rows"])
    cases = []

    def add(name, category, rows, cutoff, budget, min_pos, window, expected=None, visible=False):
        if expected is None:
            expected = _evaluate(rows, cutoff, budget, min_pos, window, delay)
        _check(name, rows, cutoff, budget, min_pos, window, delay, expected)
        cases.append({"name": name, "kind": "functional", "category": category,
                      "args": _args(rows, cutoff, budget, min_pos, window),
                      "expected": expected, "visible": visible})

    # Visible: ordinary behaviour on which every literal reading agrees (no rule given away).
    everyone = [k for k in READINGS if k != "correct"]  # every reading agrees on them
    def neutral(r):
        rows, first, cutoff, budget, min_pos, window = _shape_quiet(r, delay)
        args = (rows, cutoff, budget, min_pos, window, delay)
        expected = _evaluate(*args)
        if expected["recall_at_budget"] is not None and all(
                _evaluate(*args, **READINGS[k]) == expected for k in everyone):
            return rows, cutoff, budget, min_pos, window, expected
        return None

    for index in range(2):
        rows, cutoff, budget, min_pos, window, expected = _draw(rng, neutral, "visible")
        add(f"visible_example_{index + 1}", "example", rows, cutoff, budget, min_pos, window,
            expected, visible=True)

    # One or two cases per rule: each separates the literal reading that ignores it.
    dense = _shape_dense()
    rule_cases = [
        ("rule_label_delay_window", "label-delay", "text-only", dense, ("ignores-label-delay",)),
        ("rule_label_delay_feature", "label-delay", "ignores-label-delay", dense, ()),
        ("rule_no_leak_features", "leakage", "leaky-prior-only", dense, ()),
        ("rule_legacy_features", "leakage", "legacy-copy", dense, ()),
        ("rule_known_columns", "leakage", "ignores-known-columns", _shape_settlement, ()),
        ("rule_day_windows", "leakage", "seconds-lookback", _shape_lookback, ()),
        ("rule_weekend_cover", "budget", "ignores-roster", dense, ()),
        ("rule_budget_ties", "ties", "ignores-budget-ties", _shape_dense(budget=(1, 3)), ()),
        ("rule_budget_ties_2", "ties", "ignores-budget-ties", _shape_dense(n_rows=400), ()),
        ("rule_min_positives", "threshold", "ignores-min-positives",
         _shape_dense(min_pos=(3, 6), n_sites=5), ()),
        ("rule_bank_holidays", "budget", "ignores-holidays", _shape_holidays, ()),
        ("rule_holiday_division", "budget", "holidays-all-regions", _shape_holidays, ()),
        ("rule_switch_retries", "retries", "counts-retries", _shape_retries(0.0), ()),
        ("rule_retry_first_attempt", "retries", "retry-last-wins", _shape_retries(0.6), ()),
    ]
    for name, category, reading, shape, keep in rule_cases:
        add(name, category, *_rule_case(rng, delay, reading, shape, keep, key=name))

    # Edges.
    rows, first = _small(rng, 80, 20, 2, 20)
    add("edge_cutoff_before_data", "edge", rows, first + delay - 1, 3, 1, 7)
    rows, first = _small(rng, 120, 15, 3, 25)
    add("edge_no_site_qualifies", "edge", rows, first + 24, 2, 10_000, 10)
    add("edge_threshold_boundary", "edge", *_edge_threshold(rng, delay))
    rows, first = _small(rng, 150, 12, 2, 30)
    add("edge_budget_one", "edge", rows, first + 29, 1, 1, 14)
    rows, first = _small(rng, 90, 10, 2, 30)
    add("edge_window_one_day", "edge", rows, first + 25, 2, 1, 1)
    rows, first = _small(rng, 60, 3, 1, 10, fraud_scale=8.0, retry_rate=0.0)
    same = [Row((r[0], rows[0][1] - (rows[0][1] % DAY) + 3600 * 12, *r[2:])) for r in rows[:12]]
    add("edge_same_second", "edge", same + rows[12:], (same[0][1] // DAY) + delay, 2, 1, 3)

    # Randomised.
    for index in range(4):
        shape = _shape_dense(n_rows=rng.randint(200, 380), n_cards=rng.randint(15, 60),
                             n_sites=rng.randint(2, 6), days=rng.randint(25, 60))
        rows, first, cutoff, budget, min_pos, window = shape(rng)
        add(f"random_small_{index + 1}", "random", rows, cutoff, budget, min_pos, window)
    for index in range(2):
        shape = _shape_dense(n_rows=4000, n_cards=500, n_sites=8, days=90, window=(20, 30),
                             budget=(3, 6), min_pos=(2, 5))
        rows, first, cutoff, budget, min_pos, window = shape(rng)
        add(f"random_medium_{index + 1}", "random", rows, cutoff, budget, min_pos, window)

    key = (params["perf_rows"], delay)
    if key not in _PERF_CACHE:
        _PERF_CACHE[key] = _evaluate(ordered, p_cut, p_budget, p_min, p_window, delay)
    perf_expected = _PERF_CACHE[key]
    cases.append({"name": "scale_nightly_export", "kind": "performance", "category": "scale",
                  "args": ["data/transactions.csv", day_str(p_cut), p_budget, p_min, p_window],
                  "expected": perf_expected})

    rows, first, cutoff, budget, min_pos, window = _shape_quiet(rng, delay)
    example_expected = _evaluate(rows, cutoff, budget, min_pos, window, delay)
    return {
        "task_data": {
            "input": {"transactions": columns(rows), "cutoff": day_str(cutoff), "budget": budget,
                      "min_positives": min_pos, "window_days": window},
            "expected_output": example_expected,
        },
        "files": {"data/transactions.csv": text, "config/site_roster.csv": roster_csv,
                  "config/bank-holidays.json": holiday_feed_json()},
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, dict) or set(actual) != {"recall_at_budget", "sites"}:
        return False, "the result must be a dict with the keys recall_at_budget and sites"

    def close(a, b):
        if a is None or b is None:
            return a is None and b is None
        return isinstance(b, (int, float)) and not isinstance(b, bool) and abs(a - b) <= 1e-9

    if not close(expected["recall_at_budget"], actual["recall_at_budget"]):
        if expected["recall_at_budget"] is None or actual["recall_at_budget"] is None:
            return False, "recall_at_budget is None where a number is due, or the other way round"
        return False, "recall_at_budget differs from the expected value"
    sites = actual["sites"]
    if not isinstance(sites, list) or len(sites) != len(expected["sites"]):
        return False, "the per-site breakdown has a different number of sites"
    for want, got in zip(expected["sites"], sites):
        if not isinstance(got, dict) or set(got) != set(want):
            return False, ("each site entry must have the keys site, positives, "
                           "alerted_positives, recall and included")
        if got["site"] != want["site"]:
            return False, "the breakdown lists other sites, or not in site order"
        for key in ("positives", "alerted_positives", "included"):
            if got[key] != want[key]:
                return False, f"site {want['site']}: {key} differs from the expected value"
        if not close(want["recall"], got["recall"]):
            return False, f"site {want['site']}: recall differs from the expected value"
    return True, "ok"
