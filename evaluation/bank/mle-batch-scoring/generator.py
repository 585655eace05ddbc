"""Hidden-test generator for mle-batch-scoring (trusted bank code, plain stdlib).

The frozen model (model/preprocess.json, model/coefficients.csv) and last night's batch
(data/nightly_batch.csv) come from ``perf_rng`` only (seeded by ``perf_rows``), so instances
with the same batch size share one calibration; the functional cases (small CSV texts) and the
offer threshold come from the seed. Expected scores come from ``_score`` (column by column);
every functional case is cross-checked against ``_score_rows`` (record by record, written
independently). The performance case goes through the read-only nightly wrapper, which returns
a digest (70k scores would not fit the sandbox's output cap).
"""

from __future__ import annotations

import hashlib
import json
import math

COLUMNS = ["customer_id", "tenure_months", "monthly_charge", "data_usage_gb",
           "support_tickets_90d", "days_since_last_topup", "late_payments_12m",
           "has_device_financing", "plan", "region"]
# schema v2 column -> the v1 feature name the frozen preprocessing and coefficients use
V1_NAME = {"tenure_months": "tenure", "monthly_charge": "monthly_charge_cents",
           "data_usage_gb": "data_usage_gb", "support_tickets_90d": "support_tickets_90d",
           "days_since_last_topup": "days_since_topup", "late_payments_12m": "late_payments_12m",
           "has_device_financing": "device_financing", "plan": "plan", "region": "region"}
NUMERIC = ["tenure", "monthly_charge_cents", "data_usage_gb", "support_tickets_90d",
           "days_since_topup", "late_payments_12m", "device_financing"]
PLANS = ["prepaid", "postpaid_basic", "postpaid_plus", "family"]
NEW_PLANS = ["postpaid_max", "senior_flex"]
# billing codes of a tariff family the model knows under its training name
# (docs/tariff_catalogue.md: Family Share is the Family tariff family under a new code)
PLAN_CODES = {"family_share": "family"}
REGIONS = {"N": "north", "S": "south", "E": "east", "W": "west", "C": "capital"}
OTHER = "__other__"


# ------------------------------------------------------------------------- the frozen model

def _model(rng):
    def around(value, spread, digits):
        return round(value * (1 + rng.uniform(-spread, spread)), digits)

    numeric = {
        "tenure": {"impute": float(rng.choice([16, 18, 20])), "clip": [0, 96],
                   "mean": around(28.4, 0.08, 3), "std": around(21.7, 0.08, 3)},
        "monthly_charge_cents": {"impute": float(rng.choice([3499, 3999, 4499])),
                                 "clip": [500, 20000],
                                 "mean": around(4650.0, 0.06, 1), "std": around(2710.0, 0.06, 1)},
        "data_usage_gb": {"impute": around(5.5, 0.1, 2), "clip": [0, 200], "transform": "log1p",
                          "mean": around(1.95, 0.05, 4), "std": around(0.95, 0.05, 4)},
        "support_tickets_90d": {"impute": float(rng.choice([2, 3])), "clip": [0, 10],
                                "mean": around(0.9, 0.1, 4), "std": around(1.6, 0.1, 4)},
        "days_since_topup": {"impute": float(rng.choice([10, 12, 14])), "clip": [0, 180],
                             "mean": around(21.0, 0.1, 3), "std": around(24.0, 0.1, 3)},
        "late_payments_12m": {"impute": 0.0, "clip": [0, 12],
                              "mean": around(0.7, 0.1, 4), "std": around(1.3, 0.1, 4)},
        "device_financing": {"impute": 0.0, "clip": [0, 1],
                             "mean": around(0.31, 0.1, 4), "std": around(0.46, 0.05, 4)},
    }
    categorical = {
        "plan": {"vocabulary": list(PLANS), "other": OTHER},
        "region": {"vocabulary": [REGIONS[c] for c in "NSEWC"], "other": OTHER},
    }
    coefficients = {"intercept": round(rng.uniform(-1.4, -0.9), 6)}
    signs = {"tenure": -1, "monthly_charge_cents": 1, "data_usage_gb": -1,
             "support_tickets_90d": 1, "days_since_topup": 1, "late_payments_12m": 1,
             "device_financing": -1}
    for name in NUMERIC:
        coefficients[name] = round(signs[name] * rng.uniform(0.25, 0.9), 6)
    for feature, spec in categorical.items():
        for level in [*spec["vocabulary"], OTHER]:
            coefficients[f"{feature}={level}"] = round(rng.uniform(-0.9, 0.9), 6)
    return {"numeric": numeric, "categorical": categorical}, coefficients


def _preprocess_json(pre):
    doc = {
        "model": "churn-propensity",
        "model_version": "3.4.0",
        "fitted_on": "training snapshot 2025-06-30, feature export schema v1",
        "steps": ["impute", "clip", "transform", "standardise", "one_hot"],
        "numeric": pre["numeric"],
        "categorical": pre["categorical"],
    }
    return json.dumps(doc, indent=2) + "\n"


def _coefficients_csv(coefficients):
    lines = ["feature,coefficient"]
    lines += [f"{name},{value!r}" for name, value in coefficients.items()]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ scoring

def _num(text):
    return None if text == "" else float(text)


def _parse(csv_text):
    lines = csv_text.splitlines()
    header = lines[0].split(",")
    assert header == COLUMNS, header
    rows = [line.split(",") for line in lines[1:]]
    columns = list(zip(*rows)) if rows else [()] * len(header)
    return {name: list(values) for name, values in zip(header, columns)}


def _score(csv_text, pre, coefficients, threshold):
    """Column by column: what the efficient (vectorised) reference does."""
    cols = _parse(csv_text)
    n = len(cols["customer_id"])
    crm_ok = [v != "" for v in cols["has_device_financing"]]
    z = [coefficients["intercept"]] * n
    for column in COLUMNS[1:8]:
        name = V1_NAME[column]
        spec = pre["numeric"][name]
        raw = cols[column]
        if column == "has_device_financing":
            values = [None if v == "" else (1.0 if v == "Y" else 0.0) for v in raw]
        else:
            values = [_num(v) for v in raw]
        if column == "monthly_charge":
            values = [None if v is None else v * 100.0 for v in values]
        low, high = spec["clip"]
        coef = coefficients[name]
        out = []
        for v, crm_answered in zip(values, crm_ok):
            if v is None:
                # a blank ticket count is "no ticket" only when the CRM answered for the row
                # (docs/runbooks/feature_export.md, CRM_PARTIAL: every CRM field empty)
                v = 0.0 if column == "support_tickets_90d" and crm_answered else spec["impute"]
            v = min(max(v, low), high)
            if spec.get("transform") == "log1p":
                v = math.log1p(v)
            out.append((v - spec["mean"]) / spec["std"] * coef)
        z = [a + b for a, b in zip(z, out)]
    for column in ("plan", "region"):
        vocab = set(pre["categorical"][column]["vocabulary"])
        raw = cols[column]
        if column == "region":
            raw = [REGIONS.get(v, v) for v in raw]
        else:
            raw = [PLAN_CODES.get(v, v) for v in raw]
        z = [a + coefficients[f"{column}={v if v in vocab else OTHER}"] for a, v in zip(z, raw)]
    scores = [round(1.0 / (1.0 + math.exp(-v)), 4) for v in z]
    return {"customer_id": cols["customer_id"], "score": scores,
            "offer": [s >= threshold for s in scores]}


def _score_rows(csv_text, pre, coefficients, threshold):
    """Record by record, written separately: the cross-check."""
    lines = csv_text.splitlines()
    header = lines[0].split(",")
    ids, scores, offers = [], [], []
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        total = coefficients["intercept"]
        for column, name in V1_NAME.items():
            if name in pre["categorical"]:
                value = row[column]
                if column == "region":
                    value = {"N": "north", "S": "south", "E": "east", "W": "west",
                             "C": "capital"}.get(value, OTHER)
                elif value == "family_share":
                    value = "family"
                if value not in pre["categorical"][name]["vocabulary"]:
                    value = OTHER
                total += coefficients[name + "=" + value]
                continue
            spec = pre["numeric"][name]
            text = row[column]
            if text == "":
                timeout = row["has_device_financing"] == ""
                x = 0.0 if name == "support_tickets_90d" and not timeout else spec["impute"]
            elif column == "has_device_financing":
                x = {"Y": 1.0, "N": 0.0}[text]
            elif column == "monthly_charge":
                x = float(text) * 100
            else:
                x = float(text)
            x = spec["clip"][0] if x < spec["clip"][0] else spec["clip"][1] if x > spec["clip"][1] else x
            if spec.get("transform"):
                x = math.log(1 + x)
            total += coefficients[name] * (x - spec["mean"]) / spec["std"]
        p = 1 / (1 + math.exp(-total))
        ids.append(row["customer_id"])
        scores.append(round(p, 4))
        offers.append(round(p, 4) >= threshold)
    return {"customer_id": ids, "score": scores, "offer": offers}


def _close(a, b):
    return a["customer_id"] == b["customer_id"] and a["offer"] == b["offer"] and all(
        abs(x - y) < 1e-9 for x, y in zip(a["score"], b["score"])) and len(a["score"]) == len(b["score"])


def digest(result):
    """What the nightly wrapper returns for a result (files/${package}/service.py.tmpl)."""
    lines = [f"{c},{s:.4f},{int(o)}" for c, s, o in
             zip(result["customer_id"], result["score"], result["offer"])]
    blob = "\n".join(lines).encode()
    return {"rows": len(lines), "offers": sum(result["offer"]),
            "sha256": hashlib.sha256(blob).hexdigest()}


# ------------------------------------------------------------------------------ batches

def _ri(rng, low, high):
    return low + int(rng.random() * (high - low + 1))


def _row(rng, number, *, plain=False):
    """One v2 export row as CSV fields. plain: no rule beyond renames and frozen scaling
    (no blanks, no new categories, no unit extremes) for the visible examples."""
    r = rng.random
    plan = PLANS[int(r() * 4)]
    region = "NSEWC"[int(r() * 5)]
    if plain:  # prepaid customers with every field present and inside the clip bounds
        return [f"{number:08d}", str(int(r() * 91)), f"{(500 + int(r() * 18501)) / 100:.2f}",
                f"{r() * 150:.2f}", str(1 + int(r() * 6)), str(int(r() * 171)),
                str(int(r() * 9)), "Y" if r() < 0.3 else "N", "prepaid", region]
    u = r()
    if u < 0.06:
        plan = NEW_PLANS[0 if u < 0.03 else 1]
    elif u < 0.07:
        plan = ""
    elif plan == "family" and u < 0.55:  # relaunched Family contracts under the new code
        plan = "family_share"
    u = r()
    if u < 0.03:
        region = "X"
    elif u < 0.04:
        region = ""
    tenure = "" if r() < 0.03 else str(int(r() * 131))
    charge = "" if r() < 0.02 else f"{(500 + int(r() * 25501)) / 100:.2f}"
    usage = "" if r() < 0.03 else f"{r() * 400:.2f}"
    crm_timeout = r() < 0.05  # CRM_PARTIAL: every CRM field of the row is empty
    tickets = "" if crm_timeout or r() < 0.55 else str(1 + int(r() * 15))
    if plan == "prepaid":
        topup = "" if r() < 0.05 else str(int(r() * 251))
    else:
        topup = ""
    late = "" if r() < 0.03 else str(int(r() * 15))
    financing = "" if crm_timeout else ("Y" if r() < 0.32 else "N")
    return [f"{number:08d}", tenure, charge, usage, tickets, topup, late, financing, plan, region]


def _csv(rows):
    return "\n".join([",".join(COLUMNS), *(",".join(row) for row in rows)]) + "\n"


def _batch(rng, count, start, plain=False):
    return [_row(rng, start + i, plain=plain) for i in range(count)]


_PERF_CACHE: dict = {}


def generate(params, names, rng, perf_rng):
    threshold = float(params["offer_threshold"])
    key = (params["perf_rows"], hash(perf_rng.getstate()))
    if key not in _PERF_CACHE:
        pre, coefficients = _model(perf_rng)
        big = _csv(_batch(perf_rng, params["perf_rows"], 1_000_000))
        _PERF_CACHE[key] = (pre, coefficients, big, _score(big, pre, coefficients, 0.0), {})
    pre, coefficients, big, scored, digests = _PERF_CACHE[key]
    if threshold not in digests:
        digests[threshold] = digest({**scored, "offer": [s >= threshold for s in scored["score"]]})

    def one(name, category, rows, visible=False):
        text = _csv(rows)
        expected = _score(text, pre, coefficients, threshold)
        if not _close(expected, _score_rows(text, pre, coefficients, threshold)):
            raise AssertionError(f"column and row scoring disagree on {name}")
        return {"name": name, "kind": "functional", "category": category, "args": [text],
                "expected": expected, "visible": visible}

    def base(count=3):
        return _batch(rng, count, _ri(rng, 10000, 90000) * 100, plain=True)

    cases = [one("visible_example_1", "example", base(5), True),
             one("visible_example_2", "example", base(6), True)]

    def with_field(column, values, count=None):
        rows = base(len(values) if count is None else count)
        index = COLUMNS.index(column)
        for row, value in zip(rows, values):
            row[index] = value
        return rows

    # Frozen statistics: a batch whose own mean is far from the training mean.
    rows = base(6)
    for row in rows:
        row[1] = str(_ri(rng, 80, 95))
    cases.append(one("frozen_scaler_skewed_batch", "edge", rows))
    cases.append(one("single_row_batch", "edge", base(1)))
    # Unknown and missing categories go to __other__ (and the row stays).
    cases.append(one("new_plan_values", "edge", with_field("plan", [NEW_PLANS[0], "prepaid", NEW_PLANS[1], "family"])))
    cases.append(one("blank_plan", "edge", with_field("plan", ["", "postpaid_basic", ""])))
    # Schema v2 region codes map to the v1 vocabulary; unknown codes to __other__.
    cases.append(one("region_codes", "edge", with_field("region", ["N", "S", "E", "W", "C"])))
    cases.append(one("region_unknown_code", "edge", with_field("region", ["X", "", "C"])))
    # monthly_charge is in currency units in v2; the frozen stats are in cents.
    cases.append(one("charge_units", "edge", with_field("monthly_charge", ["19.99", "54.50", "120.00", "7.25"])))
    cases.append(one("charge_clipped_in_cents", "edge", with_field("monthly_charge", ["249.90", "2.10", "200.00"])))
    # A blank ticket count means no ticket (0), not the generic imputation value.
    cases.append(one("tickets_blank_is_zero", "edge", with_field("support_tickets_90d", ["", "", "3", ""])))
    # Other blanks take preprocess.json's imputation value.
    rows = base(4)
    rows[0][1] = ""
    rows[1][3] = ""
    rows[2][6] = ""
    rows[3][2] = ""
    cases.append(one("generic_imputation", "edge", rows))
    cases.append(one("topup_blank_for_postpaid", "edge",
                     [r[:5] + [""] + r[6:8] + [p] + r[9:] for r, p in zip(base(3), ["postpaid_plus", "family", "postpaid_basic"])]))
    rows = with_field("has_device_financing", ["Y", "N", "", "Y"])
    rows[2][4] = ""  # a CRM timeout empties every CRM field of the row
    cases.append(one("device_financing_flags", "edge", rows))
    # CRM_PARTIAL rows (runbook): the ticket blank of a row whose CRM fields are all empty is
    # unknown (frozen imputation), not the connector's "no ticket".
    rows = base(5)
    for row, tickets, financing in zip(rows, ["", "", "", "4", ""], ["", "Y", "", "", "N"]):
        row[4], row[7] = tickets, financing
    rows[3][4] = ""  # every CRM field empty
    rows[2][8] = "postpaid_basic"
    rows[2][5] = ""
    cases.append(one("crm_timeout_rows", "edge", rows))
    # Family Share is the Family tariff family under its new billing code (tariff catalogue).
    rows = with_field("plan", ["family_share", "family", "family_share", "postpaid_max",
                               "family_share"])
    for row in rows:
        if row[8] != "prepaid":
            row[5] = ""
    cases.append(one("family_share_plan", "edge", rows))
    # Clipping happens on raw values, before the log transform and the scaling.
    cases.append(one("clip_before_scaling", "edge", with_field("data_usage_gb", ["399.00", "0.00", "250.75", "12.00"])))
    rows = with_field("tenure_months", ["130", "0", "97"])
    rows[0][6] = "14"
    cases.append(one("clip_tenure_and_late_payments", "edge", rows))
    # The decision uses the published (rounded) score: a row just under the threshold.
    found = _boundary_row(base, pre, coefficients, threshold)
    cases.append(one("decision_on_rounded_score", "edge", [found, *base(2)]))
    for index in range(5):
        cases.append(one(f"random_batch_{index + 1}", "random",
                         _batch(rng, _ri(rng, 20, 60), _ri(rng, 100, 900) * 1000)))
    cases.append({"name": "nightly_batch", "kind": "performance", "category": "scale",
                  "args": ["data/nightly_batch.csv"], "expected": digests[threshold],
                  "entry": "nightly"})
    example = _csv(base(4))
    return {
        "task_data": {"input": {"csv_text": example},
                      "expected_output": _score(example, pre, coefficients, threshold)},
        "cases": cases,
        "files": {"model/preprocess.json": _preprocess_json(pre),
                  "model/coefficients.csv": _coefficients_csv(coefficients),
                  "data/nightly_batch.csv": big},
    }


def _boundary_row(base, pre, coefficients, threshold):
    """A plain row whose raw probability is in [threshold - 5e-5, threshold): the published
    score (4 decimals) equals the threshold, so the offer is made although the raw score is
    below it. Data usage (0.01 GB steps) aims at the threshold; the monthly charge (one-cent
    steps) fills the gaps where one usage step moves the score by more than the window."""
    usage = pre["numeric"]["data_usage_gb"]
    slope = coefficients["data_usage_gb"] / usage["std"]
    target = math.log((threshold - 2.5e-5) / (1 - threshold + 2.5e-5))
    for _ in range(400):
        row = base(1)[0]
        row[3] = "0.00"
        p0 = _raw_probability(row, pre, coefficients)
        rest = math.log(p0 / (1 - p0)) - slope * (0.0 - usage["mean"])
        gb = math.expm1(usage["mean"] + (target - rest) / slope)
        if not 0.0 <= gb <= 190.0:
            continue
        charge = round(float(row[2]) * 100)
        for cents in sorted(range(-300, 301), key=abs):
            if not 500 <= charge + cents <= 20000:
                continue
            row[2] = f"{(charge + cents) / 100:.2f}"
            for k in range(-8, 9):
                row[3] = f"{max(gb + k / 100, 0.0):.2f}"
                p = _raw_probability(row, pre, coefficients)
                if round(p, 4) == threshold and p < threshold:
                    return list(row)
    raise AssertionError("no boundary row found")


def _raw_probability(row, pre, coefficients):
    text = _csv([row])
    cols = _parse(text)
    total = coefficients["intercept"]
    for column in COLUMNS[1:8]:
        name = V1_NAME[column]
        spec = pre["numeric"][name]
        v = cols[column][0]
        if v == "":
            crm = cols["has_device_financing"][0] != ""
            x = 0.0 if name == "support_tickets_90d" and crm else spec["impute"]
        elif column == "has_device_financing":
            x = 1.0 if v == "Y" else 0.0
        else:
            x = float(v) * (100.0 if column == "monthly_charge" else 1.0)
        x = min(max(x, spec["clip"][0]), spec["clip"][1])
        if spec.get("transform"):
            x = math.log1p(x)
        total += (x - spec["mean"]) / spec["std"] * coefficients[name]
    for column in ("plan", "region"):
        v = cols[column][0]
        v = REGIONS.get(v, v) if column == "region" else PLAN_CODES.get(v, v)
        if v not in pre["categorical"][column]["vocabulary"]:
            v = OTHER
        total += coefficients[f"{column}={v}"]
    return 1.0 / (1.0 + math.exp(-total))


def compare(expected, actual):
    if isinstance(expected, dict) and "sha256" in expected:
        if not isinstance(actual, dict):
            return False, "the nightly digest is not a dict"
        for key in ("rows", "offers"):
            if actual.get(key) != expected.get(key):
                return False, f"the nightly digest's '{key}' differs from the expected one"
        if actual.get("sha256") != expected["sha256"]:
            return False, "the nightly digest's checksum differs: some score or decision differs"
        return True, "ok"
    if not isinstance(actual, dict):
        return False, "did not return the scoring result"
    for key in ("customer_id", "score", "offer"):
        if not isinstance(actual.get(key), list):
            return False, f"'{key}' is missing or not a list"
    if len(actual["customer_id"]) != len(expected["customer_id"]):
        return False, (f"returned {len(actual['customer_id'])} rows, expected a different number "
                       "(every input row gets a score)")
    if actual["customer_id"] != expected["customer_id"]:
        return False, "the customer ids differ from the input's (order or formatting)"
    for index, (want, got) in enumerate(zip(expected["score"], actual["score"])):
        if not isinstance(got, (int, float)) or abs(want - got) > 1e-9:
            return False, f"the score of row {index} differs from the expected one"
    for index, (want, got) in enumerate(zip(expected["offer"], actual["offer"])):
        if want != got:
            return False, f"the offer decision of row {index} differs from the expected one"
    return True, "ok"
