"""Hidden-test generator for mle-ranking-evaluation (trusted bank code, plain stdlib).

Each case is a run (query_id, doc_id, score), the judgments (several judges per pair) and the
query metadata; the config file (config/offline_eval.toml) is rendered from the parameters.
Expected reports come from ``_report`` with the tie-aware DCG in closed form; on every
functional case the per-query DCG is cross-checked against an explicit enumeration of every
ordering of the tied documents (``_dcg_enumerated``). ``_report`` takes switches that each
turn one rule off; every per-rule case asserts that its switch changes the report. The
performance case comes from ``perf_rng`` only (shared by instances with the same
``perf_queries``).
"""

from __future__ import annotations

import itertools
import math

# The config's locale -> market table (config/offline_eval.toml.tmpl says the same).
MARKETS = {
    "NA": ["en-US", "en-CA", "fr-CA", "es-US"],
    "DACH": ["de-DE", "de-AT", "de-CH"],
    "FR": ["fr-FR", "fr-BE", "fr-CH"],
    "UKI": ["en-GB", "en-IE"],
    "LATAM": ["es-MX", "pt-BR", "es-AR"],
}
LOCALE_MARKET = {loc.lower(): m for m, locs in MARKETS.items() for loc in locs}
CANONICAL = {loc for locs in MARKETS.values() for loc in locs}
UNMAPPED = ["nl-NL", "sv-SE", "pl-PL"]
SPLIT = "test"
VENDOR = "ext-"  # the annotation vendor's judges: labels 1-4 (docs/judgments_export.md)

RIGHT = {
    "gain": "exp",  # 2^g - 1 (linear: g)
    "unjudged": "keep",  # unjudged retrieved docs stay in the ranking with gain 0 (drop)
    "ideal": "all",  # ideal DCG over every judged doc of the query (retrieved)
    "ties": "rule",  # the paper's tie rule (doc_id: score desc, doc id asc; other: the other rule)
    "dedupe": "then_cut",  # dedupe doc ids (max score), then cut at k (none | cut_then_dedupe)
    "grade": "median_low",  # median, lower middle for even counts (mean_round | median_high)
    "calibration": "exclude",  # cal- judges never count (include)
    "x_grade": "ignore",  # X = cannot judge, ignored (zero)
    "no_relevant": "exclude",  # queries without a relevant judged doc are left out (zero)
    "no_results": "zero",  # judged queries the run did not answer score 0 (skip)
    "split": True,  # only the config's split
    "normalise_locale": True,  # en_us == en-US
    "locale_min": True,  # locales with fewer than min_queries evaluated queries are dropped
    "market": "locale_mean",  # a market is the mean of its locales' means (pooled)
    "renormalise": True,  # weights renormalised over the reported markets (total)
    "vendor": "shift",  # ext- labels are on the vendor scale 1-4: grade = label - 1 (clip)
    "pilot": "exclude",  # the dashed market of the diagram is reported but not in overall (include)
}


_DISC = [0.0] + [1.0 / math.log2(r + 1) for r in range(1, 400)]


def _disc(rank):
    return _DISC[rank] if rank < 400 else 1.0 / math.log2(rank + 1)


def _gain(grade, mode):
    return (2**grade - 1) if mode == "exp" else grade


def aggregate(judgments, f):
    """(query, doc) -> aggregated grade, from the rows [query, doc, judge, grade]."""
    pool = {}
    for q, d, judge, grade in judgments:
        if f["calibration"] == "exclude" and judge.startswith("cal-"):
            continue
        if grade == "X":
            if f["x_grade"] == "ignore":
                pool.setdefault((q, d), [])
                continue
            value = 0
        else:
            value = int(grade)
            if judge.startswith(VENDOR):
                value = value - 1 if f["vendor"] == "shift" else min(3, value)
        pool.setdefault((q, d), []).append(value)
    out = {}
    for key, values in pool.items():
        if not values:
            continue
        values.sort()
        n = len(values)
        if f["grade"] == "median_low":
            out[key] = values[(n - 1) // 2]
        elif f["grade"] == "median_high":
            out[key] = values[n // 2]
        else:
            out[key] = math.floor(sum(values) / n + 0.5)
    return out


def _ranking(rows, f):
    """The query's run rows [doc, score] after the de-duplication quirk."""
    if f["dedupe"] == "none":
        return list(rows)
    best = {}
    for doc, score in rows:
        if doc not in best or score > best[doc]:
            best[doc] = score
    return list(best.items())


def _groups(ranked):
    """Tie groups of a list sorted by score descending: [(first_rank, [docs])]."""
    out, rank = [], 1
    for _score, items in itertools.groupby(ranked, key=lambda r: r[1]):
        docs = [doc for doc, _ in items]
        out.append((rank, docs))
        rank += len(docs)
    return out


def _dcg(rows, grades, k, tie_rule, f):
    gain = {doc: _gain(g, f["gain"]) for doc, g in grades.items()}
    ranked = _ranking(rows, f)
    if f["unjudged"] == "drop":
        ranked = [r for r in ranked if r[0] in grades]
    if f["ties"] == "doc_id":
        ranked.sort(key=lambda r: (-r[1], r[0]))
        ranked = ranked[:k]
        if f["dedupe"] == "cut_then_dedupe":
            ranked = _ranking(ranked, {"dedupe": "then_cut"})
            ranked.sort(key=lambda r: (-r[1], r[0]))
        return sum(gain.get(doc, 0) * _disc(i + 1) for i, (doc, _) in enumerate(ranked))
    ranked.sort(key=lambda r: -r[1])
    if f["dedupe"] == "cut_then_dedupe":
        cut = ranked[:k]
        ranked = _ranking(cut, {"dedupe": "then_cut"})
        ranked.sort(key=lambda r: -r[1])
    rule = (
        tie_rule if f["ties"] == "rule" else ("pessimistic" if tie_rule == "average" else "average")
    )
    total = 0.0
    for first, docs in _groups(ranked):
        if first > k:
            break
        gains = [gain.get(doc, 0) for doc in docs]
        if rule == "average":
            mean = sum(gains) / len(gains)
            total += mean * sum(_disc(r) for r in range(first, min(first + len(docs) - 1, k) + 1))
        else:
            for offset, g in enumerate(sorted(gains)):
                if first + offset <= k:
                    total += g * _disc(first + offset)
    return total


def _dcg_enumerated(rows, grades, k, tie_rule):
    """Brute force of the paper's rule: every ordering of the tied docs (average) or the worst
    one (pessimistic), after dedupe-then-cut, unjudged docs kept with gain 0."""
    gain = {doc: 2**g - 1 for doc, g in grades.items()}
    best = {}
    for doc, score in rows:
        best[doc] = max(score, best.get(doc, score))
    groups = {}
    for doc, score in best.items():
        groups.setdefault(score, []).append(doc)
    ordered = [groups[s] for s in sorted(groups, reverse=True)]
    if math.prod(math.factorial(len(g)) for g in ordered) > 5000:
        return None
    values = []
    for combo in itertools.product(*(itertools.permutations(g) for g in ordered)):
        ranking = [doc for group in combo for doc in group][:k]
        values.append(sum(gain.get(doc, 0) * _disc(i + 1) for i, doc in enumerate(ranking)))
    return sum(values) / len(values) if tie_rule == "average" else min(values)


def _ideal(grades, k, f, retrieved=None):
    pool = [g for d, g in grades.items() if retrieved is None or d in retrieved]
    top = sorted(pool, reverse=True)[:k]
    return sum(_gain(g, f["gain"]) * _disc(i + 1) for i, g in enumerate(top))


def _norm(locale):
    return locale.replace("_", "-").lower()


def report(case, params, weights, check=False, **switches):
    f = {**RIGHT, **switches}
    k, tie_rule, min_q = params["k"], params["tie_rule"], params["min_locale_queries"]
    runs, judgments, queries = case
    grades = aggregate(judgments, f)
    by_query = {}
    for (q, d), g in grades.items():
        by_query.setdefault(q, {})[d] = g
    rows_of = {}
    for q, d, s in runs:
        rows_of.setdefault(q, []).append((d, s))
    per_locale = {}
    for q, locale, split in queries:
        if f["split"] and split != SPLIT:
            continue
        if f["normalise_locale"]:
            key = _norm(locale)
        else:
            key = locale.lower() if locale in CANONICAL else None
        if key not in LOCALE_MARKET:
            continue
        judged = by_query.get(q, {})
        rows = rows_of.get(q, [])
        if not rows and f["no_results"] == "skip":
            continue
        retrieved = {d for d, _ in rows} if f["ideal"] == "retrieved" else None
        ideal = _ideal(judged, k, f, retrieved)
        if ideal == 0:
            if f["no_relevant"] == "exclude":
                continue
            per_locale.setdefault(key, []).append(0.0)
            continue
        dcg = _dcg(rows, judged, k, tie_rule, f)
        if check:
            brute = _dcg_enumerated(rows, judged, k, tie_rule)
            if brute is not None and abs(brute - dcg) > 1e-9:
                raise AssertionError(f"tie-aware DCG disagrees with enumeration on query {q}")
        per_locale.setdefault(key, []).append(dcg / ideal)
    markets = {}
    for key, values in per_locale.items():
        if f["locale_min"] and len(values) < min_q:
            continue
        markets.setdefault(LOCALE_MARKET[key], []).append(values)
    out = {}
    for market, lists in markets.items():
        if f["market"] == "locale_mean":
            out[market] = sum(sum(v) / len(v) for v in lists) / len(lists)
        else:
            flat = [x for v in lists for x in v]
            out[market] = sum(flat) / len(flat)
    counted = {
        m: v for m, v in out.items() if f["pilot"] == "include" or m != params["pilot_market"]
    }
    if counted:
        if f["renormalise"]:
            denominator = sum(weights[m] for m in counted)
        else:  # every market with an input arrow, reported or not
            denominator = sum(
                w
                for m, w in weights.items()
                if f["pilot"] == "include" or m != params["pilot_market"]
            )
        overall = sum(weights[m] * v for m, v in counted.items()) / denominator
    else:
        overall = None
    return {"overall": overall, "markets": dict(sorted(out.items()))}


# --------------------------------------------------------------------------- data


def _mess(rng, locale):
    style = rng.random()
    if style < 0.25:
        return locale.replace("-", "_")
    if style < 0.4:
        return locale.lower()
    if style < 0.5:
        return locale.upper().replace("-", "_")
    return locale


def _world(
    rng,
    n_queries,
    first_qid,
    locales=None,
    results=(4, 22),
    tie_scale=40,
    perf=False,
    pool_size=(6, 26),
    judged=0.65,
    vendor_only=False,
):
    runs, judgments, queries = [], [], []
    all_locales = [loc for locs in MARKETS.values() for loc in locs]
    judges = (
        [f"j-{i:03d}" for i in range(1, 40)]
        + [f"cal-{i:03d}" for i in range(1, 6)]
        + [f"{VENDOR}{i:03d}" for i in range(1, 13)]
    )
    if vendor_only:
        judges = [f"{VENDOR}{i:03d}" for i in range(1, 13)]
    panel = [1, 2, 2] if perf else [1, 1, 2, 3, 4]
    latent_of = [0, 0, 0, 1, 1, 2, 3]
    noise = [-1, 0, 0, 0, 1]
    random = rng.random
    for index in range(n_queries):
        q = first_qid + index
        roll = random()
        if locales:
            locale = rng.choice(locales)
        elif roll < 0.06:
            locale = rng.choice(UNMAPPED)
        else:
            locale = rng.choice(all_locales)
        split = "dev" if random() < 0.12 else SPLIT
        queries.append([q, _mess(rng, locale), split])
        stem = rng.randrange(10000, 99999)
        pool = [f"D{stem}{j:02d}" for j in range(rng.randint(*pool_size))]
        flat = random() < 0.1
        latent = {doc: 0 if flat else latent_of[int(random() * 7)] for doc in pool}
        n_results = 0 if random() < 0.05 else min(len(pool), rng.randint(*results))
        shown = rng.sample(pool, n_results)

        def score(doc, latent=latent):  # the model is decent: relevance shifts the score up
            value = 0.18 * latent[doc] + 0.5 * random()
            return round(min(tie_scale, int(value * tie_scale)) / tie_scale, 4)

        for doc in shown:
            runs.append([q, doc, score(doc)])
            if random() < 0.06:  # the second retrieval shard returned it again
                runs.append([q, doc, score(doc)])
        for doc in pool:
            if random() > judged:
                continue
            base = latent[doc]
            count = panel[int(random() * len(panel))]
            first = int(random() * len(judges))
            for step in range(count):
                judge = judges[(first + 7 * step) % len(judges)]
                if random() < 0.06:
                    grade = "X"
                else:
                    value = max(0, min(3, base + noise[int(random() * 5)]))
                    grade = str(value + 1 if judge.startswith(VENDOR) else value)
                judgments.append([q, doc, judge, grade])
    rng.shuffle(runs)
    rng.shuffle(judgments)
    rng.shuffle(queries)
    return runs, judgments, queries


def _quiet(rng, params, weights):
    """A visible example: one locale per market, clean locale tags, one judge per pair with
    grades 0/1, every retrieved doc judged and every judged doc retrieved, no ties, no
    duplicates, every query in the test split. Every market gets the same query patterns (in
    another order, with other ids), so every market has the same score and no weighting
    choice shows in the overall."""
    markets = sorted(MARKETS)
    for _ in range(300):
        runs, judgments, queries = [], [], []
        q = rng.randint(100, 800)
        chosen = {m: rng.choice(MARKETS[m]) for m in markets}
        n_per = max(params["min_locale_queries"], 3)
        patterns = []
        for _i in range(n_per):
            n_docs = rng.randint(4, 7)
            scores = rng.sample(range(100, 1000), n_docs)
            grades = [rng.choice("01") for _ in range(n_docs)]
            grades[rng.randrange(n_docs)] = "1"
            patterns.append(list(zip(scores, grades, strict=True)))
        for m in markets:
            for pattern in rng.sample(patterns, len(patterns)):
                q += 1
                queries.append([q, chosen[m], SPLIT])
                stem = rng.randint(10000, 99999)
                for j, (s, g) in enumerate(pattern):
                    doc = f"D{stem}{j:02d}"
                    runs.append([q, doc, s / 1000])
                    judgments.append([q, doc, f"j-{rng.randint(1, 39):03d}", g])
        case = (runs, judgments, queries)
        expected = report(case, params, weights)
        if expected["overall"] is None or len(expected["markets"]) != len(markets):
            continue
        if all(
            _same(report(case, params, weights, **{key: value}), expected)
            for _, sw in RULE_CASES
            for key, value in sw.items()
        ):
            return case, expected
    raise AssertionError("no quiet visible example found")


def _same(a, b):
    if (a["overall"] is None) != (b["overall"] is None):
        return False
    if a["overall"] is not None and abs(a["overall"] - b["overall"]) > 1e-9:
        return False
    return a["markets"].keys() == b["markets"].keys() and all(
        abs(a["markets"][m] - b["markets"][m]) <= 1e-9 for m in a["markets"]
    )


RULE_CASES = [
    ("rule_exponential_gain", {"gain": "linear"}),
    ("rule_unjudged_docs_stay_ranked", {"unjudged": "drop"}),
    ("rule_ideal_over_all_judged_docs", {"ideal": "retrieved"}),
    ("rule_tie_aware_dcg", {"ties": "doc_id"}),
    ("rule_tie_rule_of_the_paper", {"ties": "other"}),
    ("rule_dedupe_keeps_best_score", {"dedupe": "none"}),
    ("rule_cutoff_after_dedupe", {"dedupe": "cut_then_dedupe"}),
    ("rule_judge_median_lower", {"grade": "median_high"}),
    ("rule_judge_median_not_mean", {"grade": "mean_round"}),
    ("rule_calibration_judges_ignored", {"calibration": "include"}),
    ("rule_cannot_judge_ignored", {"x_grade": "zero"}),
    ("rule_queries_without_relevant_excluded", {"no_relevant": "zero"}),
    ("rule_unanswered_queries_score_zero", {"no_results": "skip"}),
    ("rule_test_split_only", {"split": False}),
    ("rule_locale_tags_normalised", {"normalise_locale": False}),
    ("rule_small_locales_dropped", {"locale_min": False}),
    ("rule_market_is_mean_of_locales", {"market": "pooled"}),
    ("rule_weights_renormalised", {"renormalise": False}),
    ("rule_vendor_label_scale", {"vendor": "clip"}),
    ("rule_dashed_market_not_in_overall", {"pilot": "include"}),
]


def encode(case):
    runs, judgments, queries = case
    return [
        {
            "query_id": [r[0] for r in runs],
            "doc_id": [r[1] for r in runs],
            "score": [r[2] for r in runs],
        },
        {
            "query_id": [j[0] for j in judgments],
            "doc_id": [j[1] for j in judgments],
            "judge_id": [j[2] for j in judgments],
            "grade": [j[3] for j in judgments],
        },
        {
            "query_id": [q[0] for q in queries],
            "locale": [q[1] for q in queries],
            "split": [q[2] for q in queries],
        },
    ]


def weights_of(params):
    return {m: params[f"traffic_{m.lower()}"] for m in MARKETS}


def generate(params, names, rng, perf_rng):
    weights = weights_of(params)
    cases = []
    example = None
    for index in range(2):
        case, expected = _quiet(rng, params, weights)
        cases.append(
            {
                "name": f"visible_example_{index + 1}",
                "kind": "functional",
                "category": "example",
                "args": encode(case),
                "expected": expected,
                "visible": True,
            }
        )
        example = example or (case, expected)

    def small(n=None):
        return _world(rng, n or rng.randint(25, 45), rng.randint(1000, 5000))

    def where_rule_matters(name, category, switch, draw):
        """A case drawn until turning the rule off (``switch``) changes the report."""
        for _attempt in range(80):
            case = draw()
            expected = report(case, params, weights, check=True)
            if not _same(report(case, params, weights, **switch), expected):
                break
        else:
            raise AssertionError(f"{name}: no case where the rule matters")
        return {
            "name": name,
            "kind": "functional",
            "category": category,
            "args": encode(case),
            "expected": expected,
        }

    for name, switch in RULE_CASES:
        cases.append(where_rule_matters(name, "rule", switch, small))
    # Edges: nothing evaluable; a single market; heavy ties everywhere.
    case = small(6)
    case = (case[0], [[q, d, j, "0"] for q, d, j, _ in case[1]], case[2])
    cases.append(
        {
            "name": "edge_nothing_relevant",
            "kind": "functional",
            "category": "edge",
            "args": encode(case),
            "expected": report(case, params, weights, check=True),
        }
    )
    case = _world(rng, 12, 9000, locales=MARKETS["DACH"])
    cases.append(
        {
            "name": "edge_one_market",
            "kind": "functional",
            "category": "edge",
            "args": encode(case),
            "expected": report(case, params, weights, check=True),
        }
    )
    case = _world(rng, 30, 7000, tie_scale=4, results=(3, 7))
    cases.append(
        {
            "name": "edge_heavy_ties",
            "kind": "functional",
            "category": "edge",
            "args": encode(case),
            "expected": report(case, params, weights, check=True),
        }
    )
    # Edges: every judgment from the vendor's judges; the dashed market and one other market.
    edges = [
        ("edge_outside_panel", {"vendor": "clip"}, lambda: _world(rng, 20, 8000, vendor_only=True)),
        (
            "edge_two_markets",
            {"pilot": "include"},
            lambda: _world(rng, 24, 9500, locales=MARKETS[params["pilot_market"]] + MARKETS["NA"]),
        ),
    ]
    for name, switch, draw in edges:
        cases.append(where_rule_matters(name, "edge", switch, draw))
    for index in range(3):
        case = small()
        cases.append(
            {
                "name": f"random_run_{index + 1}",
                "kind": "functional",
                "category": "random",
                "args": encode(case),
                "expected": report(case, params, weights, check=True),
            }
        )
    perf = _world(
        perf_rng,
        params["perf_queries"],
        100000,
        results=(16, 24),
        tie_scale=400,
        perf=True,
        pool_size=(20, 28),
        judged=0.3,
    )
    cases.append(
        {
            "name": "scale_full_run",
            "kind": "performance",
            "category": "scale",
            "args": encode(perf),
            "expected": report(perf, params, weights),
        }
    )
    runs, judgments, queries = encode(example[0])
    return {
        "task_data": {
            "input": {
                names["runs_arg"]: runs,
                names["judgments_arg"]: judgments,
                names["queries_arg"]: queries,
            },
            "expected_output": example[1],
        },
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, dict) or set(actual) != {"overall", "markets"}:
        return False, "returned something other than a dict with the keys overall and markets"
    markets = actual["markets"]
    if not isinstance(markets, dict) or set(markets) != set(expected["markets"]):
        return False, "reported a different set of markets"
    for market, value in expected["markets"].items():
        got = markets[market]
        if isinstance(got, bool) or not isinstance(got, int | float) or abs(got - value) > 1e-9:
            return False, f"the NDCG of market {market} differs from the expected value"
    want, got = expected["overall"], actual["overall"]
    if want is None or got is None:
        if want is not got:
            return False, "overall is missing or present when it should not be"
        return True, ""
    if isinstance(got, bool) or not isinstance(got, int | float) or abs(got - want) > 1e-9:
        return False, "the overall NDCG differs from the expected value"
    return True, ""
