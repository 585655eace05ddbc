"""Hidden-test generator for ds-tariff-bills (trusted bank code, plain stdlib).

The tariff file (data/tariffs.csv) and the performance batch come from ``perf_rng`` (seeded by
the [performance] parameters only, never by the seed or the names), so instances that agree on
those parameters share one calibration; the functional cases come from the seed's ``rng``. The
file is shipped read-only in the workspace. Expected bills come from a per-code bisect; every functional case is cross-checked
against a scan of the whole file.
"""

from __future__ import annotations

from bisect import bisect_right

FAMILIES = ["DOM", "ECO", "EV", "HEAT", "SME", "FLEX", "AGR", "NITE", "GRN", "BIZ"]
HORIZON = 3650  # days covered by the tariff history


def _versions(rng, codes, per_code):
    rows = []
    for code in codes:
        days = sorted(rng.sample(range(30, HORIZON), per_code - 1))
        for start in [rng.randint(0, 20), *days]:
            low = rng.randint(15000, 30000)
            rows.append(
                {
                    "tariff_code": code,
                    "effective_from": start,
                    "band_kwh": rng.randint(150, 400),
                    "rate_low": low,
                    "rate_high": low + rng.randint(2000, 12000),
                    "standing_per_day": rng.randint(20000, 60000),
                }
            )
    rng.shuffle(rows)
    return rows


def _csv(rows):
    header = ["tariff_code", "effective_from", "band_kwh", "rate_low", "rate_high", "standing_per_day"]
    lines = [",".join(header)]
    lines += [",".join(str(row[key]) for key in header) for row in rows]
    return "\n".join(lines) + "\n"


def _price(version, kwh, days, band_days):
    allowance = version["band_kwh"] * days // band_days
    inside = min(kwh, allowance)
    total = inside * version["rate_low"] + (kwh - inside) * version["rate_high"]
    return (total + version["standing_per_day"] * days + 500) // 1000


def _bills(rows, readings, band_days):
    by_code = {}
    for row in sorted(rows, key=lambda r: r["effective_from"]):
        by_code.setdefault(row["tariff_code"], []).append(row)
    starts = {code: [r["effective_from"] for r in vs] for code, vs in by_code.items()}
    out = []
    for _meter, code, day, kwh, days in readings:
        if code not in by_code:
            out.append(None)
            continue
        pos = bisect_right(starts[code], day) - 1
        out.append(None if pos < 0 else _price(by_code[code][pos], kwh, days, band_days))
    return out


def _scan(rows, readings, band_days):
    out = []
    for _meter, code, day, kwh, days in readings:
        live = [r for r in rows if r["tariff_code"] == code and r["effective_from"] <= day]
        best = max(live, key=lambda r: r["effective_from"], default=None)
        out.append(None if best is None else _price(best, kwh, days, band_days))
    return out


def _reading(rng, codes, meter):
    return [
        f"M{meter:07d}",
        rng.choice(codes),
        rng.randint(0, HORIZON + 200),
        rng.choice([0, rng.randint(1, 120), rng.randint(100, 900), rng.randint(800, 2500)]),
        rng.randint(1, 92),
    ]


TARIFF_CODES = 8


def generate(params, names, rng, perf_rng):
    band_days = params["band_days"]
    families = perf_rng.sample(FAMILIES, TARIFF_CODES)
    codes = [f"{family}-{perf_rng.randint(1, 9)}{perf_rng.choice('ABCD')}" for family in families]
    rows = _versions(perf_rng, codes, params["versions_per_code"])
    perf = [_reading(perf_rng, codes, 10_000 + i) for i in range(params["perf_readings"])]
    arg = names["readings_arg"]
    first = min(r["effective_from"] for r in rows if r["tariff_code"] == codes[0])
    version = next(r for r in rows if r["tariff_code"] == codes[0] and r["effective_from"] == first)

    def batch(n, start=1):
        return [_reading(rng, codes, start + i) for i in range(n)]

    # Hand-made edges around the rules only the diagram states.
    allowance = version["band_kwh"] * 7 // band_days
    edges = {
        "edge_empty_batch": [],
        "edge_exact_allowance": [["M0000001", codes[0], first, allowance, 7]],
        "edge_above_allowance": [["M0000002", codes[0], first, allowance + 1, 7]],
        "edge_zero_kwh": [["M0000003", codes[0], first, 0, 31]],
        "edge_before_first_version": [["M0000004", codes[0], first - 1, 50, 10]] if first else
        [["M0000004", "NONE-0X", 5, 50, 10]],
        "edge_unknown_code": [["M0000005", "ZZZ-9Z", 100, 50, 10]],
        "edge_odd_days": [["M0000006", codes[0], first, 400, 29], ["M0000007", codes[0], first, 10, 1]],
    }
    # A bill whose millicents end in exactly 500: the rounding direction decides it.
    for kwh in range(1, 4000):
        for days in range(1, 40):
            allowance = version["band_kwh"] * days // band_days
            inside = min(kwh, allowance)
            total = inside * version["rate_low"] + (kwh - inside) * version["rate_high"]
            if (total + version["standing_per_day"] * days) % 1000 == 500:
                edges["edge_half_cent"] = [["M0000008", codes[0], first, kwh, days]]
                break
        if "edge_half_cent" in edges:
            break

    cases = []
    visible = [batch(5, 100), batch(6, 200)]
    for index, readings in enumerate(visible):
        cases.append(("visible_example_%d" % (index + 1), "example", readings, True))
    for name, readings in edges.items():
        cases.append((name, "edge", readings, False))
    for index in range(10):
        cases.append((f"random_small_{index + 1}", "random", batch(rng.randint(5, 40), 1000 * index), False))
    out = []
    for name, category, readings, shown in cases:
        expected = _bills(rows, readings, band_days)
        if expected != _scan(rows, readings, band_days):
            raise AssertionError(f"bisect and scan disagree on {name}")
        out.append({"name": name, "kind": "functional", "category": category,
                    "args": [readings], "expected": expected, "visible": shown})
    out.append({"name": "scale_nightly_run", "kind": "performance", "category": "scale",
                "args": [perf], "expected": _bills(rows, perf, band_days)})
    example = batch(4, 50)
    return {
        "task_data": {"input": {arg: example}, "expected_output": _bills(rows, example, band_days)},
        "cases": out,
        "files": {"data/tariffs.csv": _csv(rows)},
    }
