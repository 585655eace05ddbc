"""Hidden-test generator for ds-month-close-revenue (trusted bank code, plain stdlib).

Reference data (data/fx_rates.csv, data/store_regions.csv) and the performance export come from
``perf_rng`` (seeded by the [performance] parameters only), so every instance that agrees on
them shares one calibration; the functional cases come from the seed's ``rng``. The rules that
decide the expected report depend on ordinary parameters (fiscal-year start, period pattern,
refund window, FX gap rule, business-day offset), which never change the inputs' size.

Expected reports come from the structured rows the generator drew (business dates known, integer
arithmetic); every functional case is cross-checked against an independent brute force that
parses the rendered export text with ``decimal`` and scans the reference tables row by row.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import ROUND_HALF_UP, Decimal
from math import gcd

DAY = dt.timedelta(days=1)
EPOCH = dt.date(1970, 1, 1)
ORDERS_FROM = dt.date(2025, 1, 6)
ORDERS_TO = dt.date(2026, 3, 29)
FX_FROM = dt.date(2024, 11, 1)
FX_TO = dt.date(2026, 9, 30)
APP_LIVE = dt.date(2025, 5, 12)
NOMINAL_OFFSET = 1  # random exports are drawn at UTC+1; each instance reads them at its own offset  # the app channel went live after last year's job was written
HOLIDAYS = {
    dt.date(2024, 12, 25), dt.date(2024, 12, 26), dt.date(2025, 1, 1), dt.date(2025, 4, 18),
    dt.date(2025, 4, 21), dt.date(2025, 5, 1), dt.date(2025, 12, 25), dt.date(2025, 12, 26),
    dt.date(2026, 1, 1), dt.date(2026, 4, 3), dt.date(2026, 4, 6), dt.date(2026, 5, 1),
}
REPORTING = "EUR"
START_RATES = {"SEK": 0.0871, "NOK": 0.0852, "DKK": 0.1341, "GBP": 1.1712, "PLN": 0.2331,
               "USD": 0.9214, "CHF": 1.0452}
COUNTRIES = [("SE", "SEK"), ("NO", "NOK"), ("DK", "DKK"), ("UK", "GBP"), ("PL", "PLN"),
             ("DE", "EUR"), ("FI", "EUR"), ("NL", "EUR")]
REGION_NAMES = ["Nordics", "Baltic Rim", "Central", "Atlantic", "Alpine", "Lowlands", "Isles",
                "Danube", "Capital"]
ONLINE_STORE = "WEB01"
ONLINE_REGION = "Online"
# Status codes per source system (export contract); the cancelled ones are excluded.
STATUSES = {
    "POS": (["C"], ["V"]),
    "WEB": (["shipped", "delivered"], ["cancelled"]),
    "MKT": (["SHIPPED"], ["CANCELED"]),
    "APP": (["10", "20"], ["90", "91"]),
}
CANCELLED = {(src, code) for src, (_ok, bad) in STATUSES.items() for code in bad}
HEADER = ["order_id", "line_no", "source", "order_ts", "store_id", "sku", "quantity",
          "unit_price", "discount", "currency", "status"]
REASONS = ["damaged", "late delivery", "wrong size", "price match", "goodwill", "missing part"]


# ----------------------------------------------------------------------------- rules


def period_lengths(pattern: str) -> list[int]:
    return [int(x) for x in pattern.split("-")] * 4


def fiscal_month(day: dt.date, fy_start: dt.date, pattern: str) -> str:
    """52-week fiscal years from fy_start (FYnnnn named by the calendar year it ends in)."""
    weeks = (day - fy_start).days // 7
    year_index, week = divmod(weeks, 52)
    ends = fy_start + dt.timedelta(days=364 * (year_index + 1) - 1)
    period, edge = 0, 0
    for period, length in enumerate(period_lengths(pattern), start=1):
        edge += length
        if week < edge:
            break
    return f"FY{ends.year}-P{period:02d}"


def half_away(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded to an integer, halves away from zero (T-SQL ROUND)."""
    sign = -1 if numerator < 0 else 1
    return sign * ((2 * abs(numerator) + denominator) // (2 * denominator))


def business_date(utc: dt.datetime, offset_h: int) -> dt.date:
    return (utc + dt.timedelta(hours=offset_h)).date()


# ----------------------------------------------------------------------------- reference data


def _fx_days():
    day, out = FX_FROM, []
    while day <= FX_TO:
        if day.weekday() < 5 and day not in HOLIDAYS:
            out.append(day)
        day += DAY
    return out


def _fx(perf_rng):
    days = _fx_days()
    table = {}
    for cur, start in START_RATES.items():
        rate = start
        series = {}
        for day in days:
            rate *= 1 + perf_rng.gauss(0, 0.004)
            series[day] = int(round(rate * 1_000_000))
        table[cur] = series
    return days, table


def _fx_csv(days, table):
    lines = [f"rate_date,currency,{REPORTING.lower()}_per_unit"]
    for day in days:
        for cur in START_RATES:
            micro = table[cur][day]
            lines.append(f"{day.isoformat()},{cur},{micro // 1_000_000}.{micro % 1_000_000:06d}")
    return "\n".join(lines) + "\n"


def _stores(perf_rng):
    regions = perf_rng.sample(REGION_NAMES, 5)
    stores = {}
    assignments = []  # (store, region, valid_from, valid_to or None)
    number = 0
    for country, cur in COUNTRIES:
        for _ in range(perf_rng.randint(4, 6)):
            number += perf_rng.randint(1, 9)
            store = f"{country}{number:03d}"
            stores[store] = cur
            current = perf_rng.choice(regions)
            start = dt.date(2023, 1, 1) + DAY * perf_rng.randint(0, 500)
            changes = perf_rng.choice([0, 0, 1, 1, 2])
            cuts = sorted(perf_rng.sample(range(20, (ORDERS_TO - ORDERS_FROM).days - 20), changes))
            for cut in cuts:
                change = ORDERS_FROM + DAY * cut
                assignments.append((store, current, start, change))
                current = perf_rng.choice([r for r in regions if r != current])
                start = change
            assignments.append((store, current, start, None))
    assignments.append((ONLINE_STORE, ONLINE_REGION, dt.date(2022, 9, 1), None))
    return stores, assignments


def _regions_csv(assignments):
    lines = ["store_id,region,valid_from,valid_to"]
    for store, region, start, end in assignments:
        lines.append(f"{store},{region},{start.isoformat()},{end.isoformat() if end else ''}")
    return "\n".join(lines) + "\n"


class World:
    """Reference data shared by every case of an instance, plus the instance's rules."""

    def __init__(self, reference, params):
        self.fx_days, self.fx, self.stores, self.assignments = reference
        self.fy_start = dt.date.fromisoformat(params["fy_start"])
        self.pattern = params["period_pattern"]
        self.window = params["refund_window_days"]
        self.gap = params["fx_gap_rule"]
        self.offset = params["business_utc_offset"]
        self.by_store = {}
        for store, region, start, end in self.assignments:
            self.by_store.setdefault(store, []).append((start, end, region))
        self.fx_set = set(self.fx_days)
        self.moved = [s for s, spans in self.by_store.items() if len(spans) > 1]
        self.months = {}

    def region(self, store, day):
        for start, end, region in self.by_store[store]:
            if start <= day and (end is None or day < end):
                return region
        raise AssertionError(f"no region for {store} on {day}")

    def rate_day(self, day):
        step = -DAY if self.gap == "preceding" else DAY
        while day not in self.fx_set:
            day += step
        return day

    def rate(self, cur, day):
        if cur == REPORTING:
            return 1_000_000
        return self.fx[cur][self.rate_day(day)]

    def month(self, day):
        label = self.months.get(day)
        if label is None:
            label = self.months[day] = fiscal_month(day, self.fy_start, self.pattern)
        return label


# ----------------------------------------------------------------------------- rows


def _money(cents):
    return f"{cents // 100}.{cents % 100:02d}"


def make_line(world, order_id, line_no, source, day, store, cur, qty, price, disc, status,
              minute, rng, offset):
    """One export row (text fields) plus the facts the generator knows about it. ``day`` and
    ``minute`` are the local time at UTC+``offset``; UTC timestamps (web, app) keep the instant
    in ``_utc`` so that the business day follows the instance's own offset."""
    utc = None
    if source == "POS":
        stamp = f"{day.day:02d}.{day.month:02d}.{day.year} {minute // 60:02d}:{minute % 60:02d}"
    elif source == "MKT":
        stamp = f"{day.month:02d}/{day.day:02d}/{day.year}"
    else:
        utc = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=minute - 60 * offset)
        if source == "WEB":
            stamp = utc.strftime("%Y-%m-%dT%H:%M:%SZ")
        else:
            seconds = int((utc - dt.datetime(1970, 1, 1)).total_seconds())
            stamp = str(seconds * 1000 + rng.randint(0, 999))
    return {
        "order_id": order_id, "line_no": line_no, "source": source, "order_ts": stamp,
        "store_id": store,
        "sku": f"SKU-{(sum(map(ord, order_id)) * 7919 + line_no * 104729) % 90000 + 10000}",
        "quantity": qty, "unit_price": price, "discount": disc, "currency": cur,
        "status": status, "_day": day, "_utc": utc,
    }


def line_day(world, row):
    """The business day of a generated line or refund under the instance's offset."""
    if row["_utc"] is None:
        return row["_day"]
    return business_date(row["_utc"], world.offset)


def make_refund(refund_id, line, lag, amount, minute, offset):
    """A refund filed ``lag`` days after the line's nominal day, at ``minute`` local (UTC+offset)."""
    day = line["_day"] + DAY * lag
    utc = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=minute - 60 * offset)
    return {
        "refund_id": refund_id, "order_id": line["order_id"], "line_no": line["line_no"],
        "filed_at": utc.strftime("%Y-%m-%dT%H:%M:%SZ"), "amount": _money(amount),
        "currency": line["currency"], "reason": REASONS[(lag + amount) % len(REASONS)],
        "_utc": utc,
    }


def orders_csv(lines):
    out = [",".join(HEADER)]
    for row in lines:
        disc = "" if row["discount"] is None else _money(row["discount"])
        out.append(",".join([
            row["order_id"], str(row["line_no"]), row["source"], row["order_ts"],
            row["store_id"], row["sku"], str(row["quantity"]), _money(row["unit_price"]), disc,
            row["currency"], row["status"],
        ]))
    return "\n".join(out) + "\n"


def refunds_jsonl(refunds):
    keys = ["refund_id", "order_id", "line_no", "filed_at", "amount", "currency", "reason"]
    return "".join(json.dumps({k: r[k] for k in keys}) + "\n" for r in refunds)


def random_orders(world, rng, count, prefix, first=1, refund_share=0.08, outage_share=0.0):
    """count orders (1-4 lines each) with refunds; a realistic mix of every source."""
    lines, refunds = [], []
    physical = sorted(world.stores)
    span = (ORDERS_TO - ORDERS_FROM).days
    for n in range(first, first + count):
        day = ORDERS_FROM + DAY * rng.randint(0, span)
        source = rng.choices(["POS", "WEB", "MKT", "APP"], [45, 25, 12, 18])[0]
        if source == "APP" and day < APP_LIVE:
            source = "WEB"
        if source in ("WEB", "APP"):
            store = ONLINE_STORE
            cur = rng.choice(["EUR", "EUR", "EUR", "SEK", "NOK", "DKK", "GBP", "PLN", "CHF"])
        else:
            store = rng.choice(physical)
            cur = world.stores[store] if source == "POS" else rng.choice(["USD", "USD", "EUR"])
        minute = None
        order_id = f"{prefix}{n:07d}"
        for line_no in range(1, rng.choice([1, 1, 1, 2, 2, 3, 4]) + 1):
            ok, bad = STATUSES[source]
            status = rng.choice(bad) if rng.random() < 0.05 else rng.choice(ok)
            qty = rng.choice([1, 1, 1, 2, 2, 3, 4, 6])
            price = rng.randint(199, 39999) if cur not in ("SEK", "NOK", "DKK") else \
                rng.randint(1900, 399900)
            disc = None
            if source != "POS" and rng.random() < 0.3:
                disc = qty * price * rng.randint(5, 20) // 100
            elif source != "POS":
                disc = 0 if rng.random() < 0.5 else None
            if minute is None:
                minute = rng.randint(8 * 60, 21 * 60) if source == "POS" else rng.randint(0, 1439)
                if source == "POS" and rng.random() < 0.04:
                    minute = rng.randint(24 * 60, 25 * 60 + 50)  # before the end-of-day closing
            line = make_line(world, order_id, line_no, source, day, store, cur, qty, price, disc,
                             status, minute, rng, NOMINAL_OFFSET)
            lines.append(line)
            if rng.random() < refund_share:
                net = qty * price - (disc or 0)
                parts = rng.choice([1, 1, 2])
                left = net
                for _ in range(parts):
                    amount = rng.randint(1, max(1, left * 3 // 4))
                    left -= amount
                    lag = rng.randint(0, 50) if rng.random() < 0.75 else rng.randint(25, 120)
                    refunds.append(make_refund(f"RF{prefix}{len(refunds) + 1:06d}", line,
                                               lag, amount, rng.randint(0, 1439), NOMINAL_OFFSET))
    refunds += replays(rng, refunds, outage_share)
    rng.shuffle(refunds)
    return lines, refunds


def replay_copy(ref, delay_minutes):
    """The refund emitted again by an outbox replay: same refund_id and amount, ``filed_at``
    stamped at the replay (refunds feed runbook, section 4)."""
    utc = ref["_utc"] + dt.timedelta(minutes=delay_minutes)
    return dict(ref, filed_at=utc.strftime("%Y-%m-%dT%H:%M:%SZ"), _utc=utc, _copy=True)


def replays(rng, refunds, outage_share):
    """Outbox stalls: every refund filed on an outage day (UTC) is emitted again 1-5 days later.
    Outage days are drawn from the filing days, so small exports get some and the close export
    gets many (whole days: the copies often cross a window or period boundary)."""
    if not refunds or outage_share <= 0:
        return []
    filing_days = sorted({r["_utc"].date() for r in refunds})
    if len(refunds) < 100 and rng.random() < 0.1:
        return []  # a small export without an outage now and then
    count = max(1, round(len(filing_days) * outage_share))
    outages = set(rng.sample(filing_days, min(count, len(filing_days))))
    copies = []
    for day in sorted(outages):
        delay = rng.randint(1, 5) * 1440 + rng.randint(-600, 600)
        for ref in refunds:
            if ref["_utc"].date() == day:
                copies.append(replay_copy(ref, delay + rng.randint(0, 90)))
    return copies


# ----------------------------------------------------------------------------- expected


def report(world, lines, refunds):
    """The report from the generator's own facts (integer cents)."""
    cells = {}
    booked = {}
    for row in lines:
        if (row["source"], row["status"]) in CANCELLED:
            continue
        day = line_day(world, row)
        region = world.region(row["store_id"], day)
        rate = world.rate(row["currency"], day)
        net = row["quantity"] * row["unit_price"] - (row["discount"] or 0)
        key = (world.month(day), region)
        cells[key] = cells.get(key, 0) + half_away(net * rate, 1_000_000)
        booked[(row["order_id"], row["line_no"])] = (day, region, rate)
    first = {}
    for ref in refunds:  # a replayed refund counts once, filed when it was first emitted
        kept = first.get(ref["refund_id"])
        if kept is None or ref["_utc"] < kept["_utc"]:
            first[ref["refund_id"]] = ref
    for ref in first.values():
        line = booked.get((ref["order_id"], ref["line_no"]))
        if line is None:
            continue
        day, region, rate = line
        filed = line_day(world, ref)
        month = world.month(day) if (filed - day).days <= world.window else world.month(filed)
        cents = int(ref["amount"].replace(".", ""))
        key = (month, region)
        cells[key] = cells.get(key, 0) - half_away(cents * rate, 1_000_000)
    return [{"fiscal_month": m, "region": r, "revenue": cells[(m, r)] / 100}
            for m, r in sorted(cells)], cells


def _parse_day(source, stamp, offset):
    if source == "POS":
        return dt.datetime.strptime(stamp[:10], "%d.%m.%Y").date()
    if source == "MKT":
        return dt.datetime.strptime(stamp, "%m/%d/%Y").date()
    if source == "WEB":
        return business_date(dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"), offset)
    return business_date(dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(stamp)), offset)


def brute(world, fx_text, regions_text, orders_text, refunds_text):
    """Independent check: parse the rendered texts, scan the tables, Decimal arithmetic."""
    fx_rows = {}
    for row in fx_text.strip().splitlines()[1:]:
        d, c, value = row.split(",")
        fx_rows.setdefault(c, []).append((dt.date.fromisoformat(d), value))
    reg_rows = [r.split(",") for r in regions_text.strip().splitlines()[1:]]
    cent = Decimal("0.01")

    def rate(cur, day):
        if cur == REPORTING:
            return Decimal(1)
        best = None
        for d, value in fx_rows[cur]:
            if world.gap == "preceding" and d <= day and (best is None or d > best[0]):
                best = (d, Decimal(value))
            if world.gap == "following" and d >= day and (best is None or d < best[0]):
                best = (d, Decimal(value))
        return best[1]

    def region(store, day):
        hits = [r for s, r, a, b in reg_rows if s == store and dt.date.fromisoformat(a) <= day
                and (not b or day < dt.date.fromisoformat(b))]
        assert len(hits) == 1, (store, day, hits)
        return hits[0]

    cells = {}
    kept = []
    for text in orders_text.strip().splitlines()[1:]:
        f = dict(zip(HEADER, text.split(",")))
        if (f["source"], f["status"]) in CANCELLED:
            continue
        day = _parse_day(f["source"], f["order_ts"], world.offset)
        r = rate(f["currency"], day)
        net = int(f["quantity"]) * Decimal(f["unit_price"]) - Decimal(f["discount"] or "0")
        value = (net * r).quantize(cent, rounding=ROUND_HALF_UP)
        g = region(f["store_id"], day)
        key = (fiscal_month(day, world.fy_start, world.pattern), g)
        cells[key] = cells.get(key, Decimal(0)) + value
        kept.append((f["order_id"], int(f["line_no"]), day, g, r))
    earliest = {}
    for text in refunds_text.strip().splitlines():
        ref = json.loads(text)
        when = dt.datetime.strptime(ref["filed_at"], "%Y-%m-%dT%H:%M:%SZ")
        if ref["refund_id"] not in earliest or when < earliest[ref["refund_id"]][0]:
            earliest[ref["refund_id"]] = (when, ref)
    for _when, ref in earliest.values():
        match = [k for k in kept if k[0] == ref["order_id"] and k[1] == ref["line_no"]]
        if not match:
            continue
        _o, _n, day, g, r = match[0]
        filed = business_date(dt.datetime.strptime(ref["filed_at"], "%Y-%m-%dT%H:%M:%SZ"),
                              world.offset)
        when = day if (filed - day).days <= world.window else filed
        key = (fiscal_month(when, world.fy_start, world.pattern), g)
        value = (Decimal(ref["amount"]) * r).quantize(cent, rounding=ROUND_HALF_UP)
        cells[key] = cells.get(key, Decimal(0)) - value
    return {k: int(v * 100) for k, v in cells.items()}


# ----------------------------------------------------------------------------- cases


def period_starts(world):
    """Every fiscal period's first day inside the order range."""
    out = []
    day = ORDERS_FROM
    while day <= ORDERS_TO:
        if world.month(day) != world.month(day - DAY):
            out.append(day)
        day += DAY
    return out


class Builder:
    def __init__(self, world, rng, prefix):
        self.world, self.rng, self.prefix = world, rng, prefix
        self.lines, self.refunds, self.n = [], [], 0

    def order(self, source, day, store, cur, items, minute=None):
        self.n += 1
        order_id = f"{self.prefix}{self.n:05d}"
        out = []
        if minute is None:
            minute = self.rng.randint(540, 1200)  # daytime: the same day in UTC
        for no, (qty, price, disc, cancelled) in enumerate(items, start=1):
            ok, bad = STATUSES[source]
            status = (bad[-1] if cancelled else ok[0])
            line = make_line(self.world, order_id, no, source, day, store, cur, qty, price, disc,
                             status, minute, self.rng, self.world.offset)
            self.lines.append(line)
            out.append(line)
        return out

    def refund(self, line, lag, amount, minute=720):
        ref = make_refund(f"RF-{self.prefix}{len(self.refunds) + 1:04d}", line, lag, amount,
                          minute, self.world.offset)
        self.refunds.append(ref)
        return ref

    def filler(self, count):
        lines, refunds = random_orders(self.world, self.rng, count, self.prefix + "X",
                                       refund_share=0.0)
        self.lines.extend(lines)
        self.refunds.extend(refunds)

    def case(self):
        return self.lines, self.refunds


def _weekday_near(day, want_fx=True, world=None):
    while (day in world.fx_set) != want_fx:
        day += DAY
    return day


def edge_cases(world, rng):
    w = world
    starts = period_starts(w)
    physical = sorted(w.stores)
    eur_stores = [s for s in physical if w.stores[s] == "EUR" and s not in w.moved]
    sek_stores = [s for s in physical if w.stores[s] != "EUR" and s not in w.moved]
    cases = {}

    # A 5-week period's boundary that a calendar month does not share.
    b = Builder(w, rng, "C")
    for start in starts[2:6]:
        for day in (start - DAY, start):
            b.order("POS", day, rng.choice(eur_stores), "EUR", [(1, rng.randint(1000, 9000), None, False)])
    cases["edge_fiscal_boundaries"] = b.case()

    # POS dates are day-first: 03.04 is the 3rd of April.
    b = Builder(w, rng, "D")
    for month in range(2, 12):
        day = dt.date(2025, month, rng.randint(1, 12))
        b.order("POS", day, rng.choice(eur_stores), "EUR", [(2, rng.randint(500, 5000), None, False)])
    cases["edge_pos_day_first"] = b.case()

    # Marketplace dates are month-first.
    b = Builder(w, rng, "M")
    for month in range(1, 13):
        day = dt.date(2025, month, rng.randint(1, 12))
        b.order("MKT", day, rng.choice(physical), "EUR", [(1, rng.randint(500, 5000), 0, False)])
    cases["edge_marketplace_month_first"] = b.case()

    # Web orders just after the business-day cut-off: UTC date is the previous day.
    b = Builder(w, rng, "W")
    for start in starts[3:7]:
        b.order("WEB", start, ONLINE_STORE, "EUR", [(1, rng.randint(2000, 9000), 0, False)],
                minute=rng.randint(5, 50))
        b.order("WEB", start - DAY, ONLINE_STORE, "EUR", [(1, rng.randint(2000, 9000), None, False)],
                minute=rng.randint(600, 700))
    cases["edge_web_business_day"] = b.case()

    # The app channel: epoch milliseconds, its own cancel codes.
    b = Builder(w, rng, "A")
    for start in starts[5:9]:
        b.order("APP", start, ONLINE_STORE, "EUR", [(1, rng.randint(2000, 9000), None, False),
                                                     (1, rng.randint(2000, 9000), 0, True)],
                minute=rng.randint(3, 40))
    cases["edge_app_channel"] = b.case()

    # Cancelled lines of every channel are out, and so are refunds filed against them.
    b = Builder(w, rng, "X")
    day = starts[4] + DAY * 3
    for source, store, cur in (("POS", eur_stores[0], "EUR"), ("WEB", ONLINE_STORE, "EUR"),
                               ("MKT", physical[1], "EUR")):
        lines = b.order(source, day, store, cur, [(1, 4000, None, False), (2, 2500, None, True)])
        b.refund(lines[1], 2, 1200)
        b.refund(lines[0], 3, 700)
    cases["edge_cancelled_lines"] = b.case()

    # Partial refunds on one line of a multi-line order (the old job's fan-out).
    b = Builder(w, rng, "P")
    day = starts[6] + DAY * 2
    lines = b.order("POS", day, eur_stores[1], "EUR",
                    [(1, 12000, None, False), (3, 2500, None, False), (2, 999, None, False)])
    b.refund(lines[1], 1, 1500)
    b.refund(lines[1], 4, 1000)
    lines = b.order("WEB", day + DAY, ONLINE_STORE, "EUR", [(1, 8000, 0, False), (1, 6000, 0, False)],
                    minute=700)
    b.refund(lines[0], 2, 2500)
    cases["edge_partial_refunds"] = b.case()

    # Refund timing: on the window's last day stays with the order, the day after moves.
    b = Builder(w, rng, "L")
    for start in starts[2:5]:
        day = start + DAY * 20
        one = b.order("POS", day, eur_stores[2 % len(eur_stores)], "EUR", [(1, 20000, None, False)])
        two = b.order("POS", day, eur_stores[3 % len(eur_stores)], "EUR", [(1, 20000, None, False)])
        b.refund(one[0], w.window, 5000, minute=1380)  # late in the evening: by date, not by hours
        b.refund(two[0], w.window + 1, 4000, minute=30)
    cases["edge_refund_window"] = b.case()

    # A refund filed just after midnight business time (UTC still the previous day).
    b = Builder(w, rng, "N")
    for start in starts[3:6]:
        day = start + DAY * 20
        one = b.order("POS", day, eur_stores[0], "EUR", [(1, 30000, None, False)])
        b.refund(one[0], w.window + 1, 6000, minute=rng.randint(3, 40))
    cases["edge_refund_filed_after_midnight"] = b.case()

    # A late refund of a foreign-currency line: converted at the order date's rate.
    b = Builder(w, rng, "R")
    for k, start in enumerate(starts[4:8]):
        day = _weekday_near(start + DAY * 2, world=w)
        store = sek_stores[k % len(sek_stores)]
        one = b.order("POS", day, store, w.stores[store], [(1, 250000, None, False)])
        b.refund(one[0], 70 + k, 99900)
    cases["edge_late_refund_rate"] = b.case()

    # Stores that moved region: orders before, on and after the changeover day.
    b = Builder(w, rng, "G")
    for store in w.moved[:4]:
        for start, _end, _region in w.by_store[store][1:]:
            for day in (start - DAY, start, start + DAY):
                cur = w.stores[store]
                line = b.order("POS", day, store, cur, [(1, rng.randint(5000, 60000), None, False)])
                if day == start - DAY:
                    b.refund(line[0], w.window + 5, 1000)
    cases["edge_region_changeover"] = b.case()

    # Foreign-currency lines on weekends and on a holiday with no published rate.
    b = Builder(w, rng, "F")
    gaps = [d for d in (dt.date(2025, 4, 18), dt.date(2025, 4, 21), dt.date(2025, 5, 1),
                        dt.date(2025, 12, 26), dt.date(2025, 3, 8), dt.date(2025, 6, 15),
                        dt.date(2025, 9, 27), dt.date(2026, 1, 1))]
    for k, day in enumerate(gaps):
        store = sek_stores[k % len(sek_stores)]
        b.order("POS", day, store, w.stores[store], [(3, rng.randint(50000, 300000), None, False)])
        b.order("MKT", day, physical[k], "USD", [(2, rng.randint(5000, 50000), 0, False)])
    cases["edge_fx_gap_days"] = b.case()

    # Converted amounts that end in exactly half a cent (halves away from zero).
    b = Builder(w, rng, "H")
    found = 0
    for cur in ("GBP", "USD", "CHF", "PLN"):
        pick = None
        # Half a cent exists for a rate r unless 64 divides r; c0 and c0 + m then differ in the
        # parity of the cent below (r // g is odd), so the second pass always finds one.
        for limit in (400_000, None):
            for day in w.fx_days[60:400:7]:
                r = w.fx[cur][day]
                g = gcd(r, 1_000_000)
                if 500_000 % g:
                    continue
                m = 1_000_000 // g
                c0 = (500_000 // g) * pow(r // g, -1, m) % m
                for cents in range(c0, limit or c0 + 3 * m, m):
                    if cents > 1000 and (cents * r // 1_000_000) % 2 == 0:
                        pick = (day, cents)
                        break
                if pick:
                    break
            if pick:
                break
        if not pick:
            continue
        day, cents = pick
        src, store = ("MKT", physical[2]) if cur == "USD" else ("WEB", ONLINE_STORE)
        b.order(src, day, store, cur, [(1, cents, 0, False)], minute=720)
        found += 1
    if not found:  # every rate a multiple of 64 micro-euros: no half cent exists; keep the case
        b.order("WEB", w.fx_days[100], ONLINE_STORE, "EUR", [(1, 12345, 0, False)], minute=720)
    cases["edge_half_cent_rounding"] = b.case()

    # Outbox replays: the copy carries the replay time; the refund was filed at the first one.
    b = Builder(w, rng, "Y")
    for k, start in enumerate(starts[3:7]):
        late_day = start - DAY * (w.window + 6)
        one = b.order("POS", late_day, eur_stores[k % len(eur_stores)], "EUR",
                      [(1, rng.randint(20000, 60000), None, False)])
        late = b.refund(one[0], w.window + 5, rng.randint(2000, 9000), minute=rng.randint(600, 1300))
        two = b.order("POS", start + DAY * 3, eur_stores[(k + 1) % len(eur_stores)], "EUR",
                      [(2, rng.randint(10000, 40000), None, False)])
        edge = b.refund(two[0], w.window, rng.randint(2000, 9000), minute=rng.randint(600, 1300))
        copies = [replay_copy(late, 1440 + rng.randint(-300, 300)),
                  replay_copy(edge, 2 * 1440 + rng.randint(-300, 300))]
        for ref, copy in zip((late, edge), copies):
            at = b.refunds.index(ref)
            if k % 2 == 0:
                b.refunds.insert(at, copy)  # the copy ahead of the original in the delivery
            else:
                b.refunds.insert(at + 1, copy)
    cases["edge_refund_replay"] = b.case()

    # Late-night tills: receipts after midnight keep the business date until the closing.
    b = Builder(w, rng, "T")
    for k, start in enumerate(starts[2:8]):
        last = start - DAY  # a Saturday, the last day of a fiscal month
        if k % 2:
            store = sek_stores[k % len(sek_stores)]
            b.order("POS", last, store, w.stores[store], [(1, rng.randint(20000, 90000), None, False)],
                    minute=rng.randint(24 * 60 + 5, 25 * 60 + 40))
        else:
            store = eur_stores[k % len(eur_stores)]
            b.order("POS", last, store, "EUR", [(1, rng.randint(3000, 9000), None, False),
                                                (2, rng.randint(1000, 4000), None, False)],
                    minute=rng.randint(24 * 60 + 5, 25 * 60 + 40))
        weekday = _weekday_near(start + DAY * 2, world=w)
        while weekday + DAY not in w.fx_set:  # a published rate on the day and the day after
            weekday = _weekday_near(weekday + DAY, world=w)
        store = sek_stores[(k + 1) % len(sek_stores)]
        b.order("POS", weekday, store, w.stores[store], [(1, rng.randint(50000, 300000), None, False)],
                minute=rng.randint(24 * 60 + 5, 25 * 60 + 40))
    cases["edge_pos_after_midnight"] = b.case()

    # Discounts: blank means none; revenue is net of the line discount.
    b = Builder(w, rng, "K")
    day = starts[7] + DAY
    b.order("WEB", day, ONLINE_STORE, "EUR", [(2, 4999, 1000, False), (1, 1999, None, False),
                                               (3, 1000, 0, False)], minute=800)
    b.order("MKT", day, physical[3], "EUR", [(4, 2550, 1530, False)])
    cases["edge_discounts"] = b.case()

    # A late refund lands in a month where its region sold nothing else.
    b = Builder(w, rng, "Z")
    day = starts[1] + DAY
    one = b.order("POS", day, eur_stores[0], "EUR", [(1, 50000, None, False)])
    b.refund(one[0], 100, 10000)
    cases["edge_refund_only_month"] = b.case()

    cases["edge_empty_export"] = ([], [])
    return cases


def _cross_check(world, fx_text, regions_text, name, lines, refunds):
    rows, cells = report(world, lines, refunds)
    brute_cells = brute(world, fx_text, regions_text, orders_csv(lines), refunds_jsonl(refunds))
    if brute_cells != cells:
        raise AssertionError(f"generator and brute force disagree on {name}")
    return rows


def visible_lines(world, rng, prefix, with_refund):
    """Ordinary orders: euro POS and daytime web orders mid-period, no store that moved."""
    b = Builder(world, rng, prefix)
    steady = [s for s in sorted(world.stores) if s not in world.moved and world.stores[s] == "EUR"]
    starts = period_starts(world)
    for k in range(6):
        base = starts[3 + k] + DAY * rng.randint(7, 14)
        day = _weekday_near(base, world=world)
        if k % 2:
            b.order("WEB", day, ONLINE_STORE, "EUR", [(1, rng.randint(1500, 9000), 0, False)],
                    minute=rng.randint(600, 900))
        else:
            b.order("POS", day, rng.choice(steady), "EUR",
                    [(rng.randint(1, 3), rng.randint(500, 9000), None, False)])
    if with_refund:
        line = b.lines[0]
        b.refund(line, 3, line["unit_price"] // 2)
    return b.case()


# Reference tables and the performance export depend on perf_orders only (and are drawn from
# perf_rng alone); instantiating many seeds in one process draws them once per value.
_PERF_CACHE = {}


def _performance_data(params, perf_rng):
    key = params["perf_orders"]
    if key not in _PERF_CACHE:
        days, fx = _fx(perf_rng)
        stores, assignments = _stores(perf_rng)
        reference = (days, fx, stores, assignments)
        lines, refunds = random_orders(World(reference, params), perf_rng, key, "SO",
                                       outage_share=0.08)
        texts = (_fx_csv(days, fx), _regions_csv(assignments), orders_csv(lines),
                 refunds_jsonl(refunds))
        _PERF_CACHE.clear()
        _PERF_CACHE[key] = (reference, lines, refunds, texts)
    return _PERF_CACHE[key]


def generate(params, names, rng, perf_rng):
    reference, perf_lines, perf_refunds, texts = _performance_data(params, perf_rng)
    world = World(reference, params)
    fx_text, regions_text = texts[0], texts[1]
    perf_case = texts[2:]
    perf_expected, _ = report(world, perf_lines, perf_refunds)

    cases = []

    def add(name, category, lines, refunds, visible=False):
        expected = _cross_check(world, fx_text, regions_text, name, lines, refunds)
        cases.append({"name": name, "kind": "functional", "category": category,
                      "args": [orders_csv(lines), refunds_jsonl(refunds)],
                      "expected": expected, "visible": visible})

    add("visible_ordinary_month", "example", *visible_lines(world, rng, "V1", False), visible=True)
    add("visible_with_refund", "example", *visible_lines(world, rng, "V2", True), visible=True)
    for name, (lines, refunds) in edge_cases(world, rng).items():
        add(name, "edge", lines, refunds)
    for index in range(6):
        lines, refunds = random_orders(world, rng, rng.randint(15, 40), f"R{index}",
                                        refund_share=0.25, outage_share=0.15)
        add(f"random_export_{index + 1}", "random", lines, refunds)
    cases.append({"name": "scale_month_close", "kind": "performance", "category": "scale",
                  "args": list(perf_case), "expected": perf_expected})
    example_lines, example_refunds = visible_lines(world, rng, "E", True)
    example_expected = _cross_check(world, fx_text, regions_text, "example", example_lines,
                                    example_refunds)
    return {
        "task_data": {
            "input": {names["orders_arg"]: orders_csv(example_lines),
                      names["refunds_arg"]: refunds_jsonl(example_refunds)},
            "expected_output": example_expected,
        },
        "cases": cases,
        "files": {"data/fx_rates.csv": fx_text, "data/store_regions.csv": regions_text},
    }


def compare(expected, actual):
    if not isinstance(actual, list):
        return False, f"returned {type(actual).__name__}, expected a list of report rows"
    if len(actual) != len(expected):
        return False, f"returned {len(actual)} report rows, expected a different number"
    for index, (want, got) in enumerate(zip(expected, actual), start=1):
        if not isinstance(got, dict) or set(got) != {"fiscal_month", "region", "revenue"}:
            return False, f"row {index} must be a dict with fiscal_month, region and revenue"
        if got["fiscal_month"] != want["fiscal_month"] or got["region"] != want["region"]:
            return False, f"row {index} ({got['fiscal_month']}, {got['region']}) is not the expected cell"
        try:
            cents = round(float(got["revenue"]) * 100)
        except (TypeError, ValueError):
            return False, f"row {index}: revenue is not a number"
        if cents != round(want["revenue"] * 100):
            return False, f"row {index} ({got['fiscal_month']}, {got['region']}): revenue differs"
    return True, "every cell of the report matches"
