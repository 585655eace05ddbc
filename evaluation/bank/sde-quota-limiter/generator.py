"""Hidden-test generator for sde-quota-limiter (trusted bank code, plain stdlib).

Every case passes a quotas.conf text and a request stream. Expected decisions come from the
efficient reference (references/efficient/, rendered with this instance's names and executed
in-process); every functional case is cross-checked against an independent brute force written
here: it re-parses nothing (it works from the structured spec the config text was rendered
from), scans every route pattern and every override per request, and keeps the retry log as a
list filtered on every request.

The performance case (config and stream) comes from ``perf_rng`` only.
"""

from __future__ import annotations

import string
import sys
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = 1_717_200_000_000  # 2024-06-01T00:00:00Z
UNITS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
HEALTH = ["/healthz", "/readyz", "/livez", "/ping", "/_health/db", "/_health/cache"]
ROUTES = [
    ("/v1/*", "default"),
    ("/v1/search*", "search"),
    ("/v1/search/suggest", "default"),
    ("/v1/orders*", "write"),
    ("/v1/orders/export*", "export"),
    ("/v1/reports/export", "export"),
    ("/v1/auth/*", "auth"),
    ("/v1/auth/token", "auth"),
    ("/v2/*", "default"),
    ("/v2/search*", "search"),
]
PATHS = [
    "/v1/items", "/v1/items/42", "/v1/search", "/v1/search?q=boots", "/v1/search/suggest",
    "/v1/search/suggest?q=bo", "/v1/orders", "/v1/orders/991", "/v1/orders/export",
    "/v1/orders/export/2024-05", "/v1/reports/export", "/v1/reports/daily", "/v1/auth/token",
    "/v1/auth/refresh", "/v2/search", "/v2/catalog", "/v3/legacy",
]
TENANT_WORDS = ["acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wonka",
                "tyrell", "cyberdyne", "soylent", "oscorp", "pied", "wayne", "nakatomi", "aperture"]


# --------------------------------------------------------------------------------------
# The model: the efficient reference, rendered and executed here.
# --------------------------------------------------------------------------------------
def _model(names):
    mapping = {**names}
    conf_src = string.Template((HERE / "references/efficient/${package}/conf.py.tmpl").read_text()).substitute(mapping)
    lim_src = string.Template((HERE / "references/efficient/${package}/limiter.py.tmpl").read_text()).substitute(mapping)
    lim_src = lim_src.replace(f"from {names['package']}.conf import Limit, parse_config\n", "")
    # dataclasses look their module up in sys.modules while the class is built.
    module = types.ModuleType("_sde_quota_limiter_conf")
    sys.modules[module.__name__] = module
    try:
        exec(compile(conf_src, "conf", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    conf_ns = module.__dict__
    lim_ns: dict = {"__name__": names["package"] + ".limiter", "Limit": conf_ns["Limit"],
                    "parse_config": conf_ns["parse_config"]}
    exec(compile(lim_src, "limiter", "exec"), lim_ns)
    return lim_ns[names["entry_point"]]


# --------------------------------------------------------------------------------------
# Config specs and their text
# --------------------------------------------------------------------------------------
def _iso(ms, style):
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    if style == "z":
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    if style == "naive":
        return stamp.strftime("%Y-%m-%dT%H:%M:%S")
    if style == "offset":
        local = stamp.astimezone(timezone(timedelta(hours=2)))
        return local.isoformat(timespec="seconds")
    return stamp.isoformat(timespec="seconds")


def _rate_ms(rate):
    count, _, per = rate.partition("/")
    digits = "".join(ch for ch in per if ch.isdigit())
    unit = per[len(digits):]
    return int(count), int(digits or 1) * UNITS[unit]


def base_spec(params):
    return {
        "dedup_window": f"{params['dedup_window_s']}s",
        "dedup_ms": params["dedup_window_s"] * 1000,
        "reload": f"{params['reload_interval_min']}min",
        "reload_ms": params["reload_interval_min"] * 60_000,
        "default_tier": "free",
        "tiers": [
            ("free", None, [("default", "60/min", 10), ("search", "20/min", 4), ("write", "10/min", 2),
                            ("export", "2/h", 1), ("auth", "5/min", 5)]),
            ("standard", "free", [("default", "300/min", 30), ("search", "120/min", 12), ("write", "60/min", 10)]),
            ("pro", "standard", [("default", "20/s", 60), ("search", "7/s", 14), ("export", "30/h", 3)]),
            ("enterprise", "pro", [("default", "100/s", 200), ("write", "50/10s", 20)]),
        ],
        "routes": list(ROUTES),
        "tenants": [],
        "overrides": [],
    }


def render(spec, rng, fancy=True):
    """The spec as quotas.conf text, with cosmetic variety (comments, spacing, continuations)."""
    out = ["# quotas.conf -- per-tenant quotas of the API gateway", ""]
    out += ["[gateway]", f"dedup_window = {spec['dedup_window']}", f"reload_interval = {spec['reload']}  # ops: do not lower", ""]
    out += ["[defaults]", f"tier = {spec['default_tier']}", ""]
    for name, parent, lines in spec["tiers"]:
        out.append(f"[tier {name} : {parent}]" if parent else f"[tier {name}]")
        if fancy and rng.random() < 0.4:
            out.append("; sustained rate, then how many requests may arrive at once")
        for klass, rate, burst in lines:
            gap = " " * rng.randint(1, 4) if fancy else " "
            shown = klass.upper() if fancy and rng.random() < 0.1 else klass
            if burst == 1 and fancy and rng.random() < 0.5:
                out.append(f"{shown}{gap}= {rate}")
            elif fancy and rng.random() < 0.15:
                out.append(f"{shown} = {rate} \\")
                out.append(f"    burst {burst}")
            else:
                out.append(f"{shown}{gap}= {rate} burst {burst}")
        out.append("")
    out.append("[routes]")
    routes = list(spec["routes"])
    for pattern, klass in routes:
        out.append(f"{pattern} = {klass}")
    out.append("")
    for tenant, tier in spec["tenants"]:
        out += [f"[tenant {tenant}]", f"tier = {tier}", ""]
    for item in spec["overrides"]:
        out.append(f"[override {item['tenant']} {item['klass']}]")
        if "note" in item:
            out.append(f"# {item['note']}")
        if item.get("rate"):
            out.append(f"rate = {item['rate']}")
        if item.get("burst"):
            out.append(f"burst = {item['burst']}")
        if item.get("valid_from") is not None:
            out.append(f"valid_from = {_iso(item['valid_from'], item.get('style', 'z'))}")
        if item.get("valid_until") is not None:
            out.append(f"valid_until = {_iso(item['valid_until'], item.get('style', 'z'))}")
        out.append("")
    for tenant, tier, note in spec.get("late_tenants", []):
        # A second section for a tenant, appended later: the loader skips it (sidecar runbook).
        out += [f"# {note}", f"[tenant {tenant}]", f"tier = {tier}", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# Brute force, from the spec (not from the text)
# --------------------------------------------------------------------------------------
def brute(spec, requests):
    tiers = {}
    for name, parent, lines in spec["tiers"]:
        own = {k.lower(): (_rate_ms(r), b) for k, r, b in lines}
        tiers[name] = {**(tiers[parent] if parent else {}), **own}
    tenants = {}
    for tenant, tier, *_note in list(spec["tenants"]) + list(spec.get("late_tenants", [])):
        tenants.setdefault(tenant, tier)  # the first section of a tenant wins
    reload = spec["reload_ms"]
    slots = spec["dedup_ms"] // 1000  # idcache: one-second slots
    tat = {}
    log = {}  # tenant -> list of [first, rid, allowed]
    out = []
    for now, tenant, route, rid, retry in requests:
        path = route.split("?")[0]
        if path in ("/healthz", "/readyz", "/livez", "/ping") or path.startswith("/_health/"):
            out.append(0)
            continue
        entries = [e for e in log.get(tenant, []) if now // 1000 - e[0] // 1000 < slots]
        log[tenant] = entries
        match = None
        if retry:
            for entry in reversed(entries):
                if entry[1] == rid:
                    match = entry
                    break
        if match is not None and match[2]:
            out.append(0)
            continue
        best = None
        for order, (pattern, klass) in enumerate(spec["routes"]):
            prefix = pattern.endswith("*")
            literal = pattern[:-1] if prefix else pattern
            if path == literal or (prefix and path.startswith(literal)):
                rank = (len(literal), not prefix, order)
                if best is None or rank > best[0]:
                    best = (rank, klass)
        klass = best[1] if best else "default"
        tier = tiers[tenants.get(tenant, spec["default_tier"])]
        (count, period), burst = tier.get(klass) or tier["default"]
        chosen = None
        for order, item in enumerate(spec["overrides"]):
            if item["tenant"] != tenant or item["klass"] not in (klass, "*"):
                continue
            start = item.get("valid_from")
            end = item.get("valid_until")
            start = None if start is None else -(-start // reload) * reload
            end = None if end is None else -(-end // reload) * reload
            if (start is None or start <= now) and (end is None or now < end):
                rank = (item["klass"] != "*", order)
                if chosen is None or rank > chosen[0]:
                    chosen = (rank, item)
        if chosen is not None:
            item = chosen[1]
            if item.get("rate"):
                count, period = _rate_ms(item["rate"])
            if item.get("burst"):
                burst = item["burst"]
        interval = -(-period // count)
        tolerance = interval * (burst - 1)
        key = (tenant, klass)
        arrival = max(tat.get(key, now), now)
        if arrival - now <= tolerance:
            tat[key] = arrival + interval
            verdict = 0
        else:
            verdict = -(-(arrival - tolerance - now) // 1000)
        if match is not None:
            match[2] = verdict == 0
        else:
            entries.append([now, rid, verdict == 0])
        out.append(verdict)
    return out


# --------------------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------------------
class Stream:
    def __init__(self, rng, start):
        self.rng = rng
        self.now = start
        self.items = []
        self.serial = 0

    def rid(self):
        self.serial += 1
        return "r-%06x" % (self.rng.randrange(16**6) ^ self.serial)

    def send(self, tenant, path, rid=None, retry=0, gap=0):
        self.now += gap
        rid = rid or self.rid()
        self.items.append([self.now, tenant, path, rid, retry])
        return rid

    def burst(self, tenant, path, n, gap=0, spacing=0):
        self.now += gap
        ids = []
        for _ in range(n):
            ids.append(self.send(tenant, path))
            self.now += spacing
        return ids


def _tenants(rng, n):
    words = rng.sample(TENANT_WORDS, n)
    return [f"{w}-{rng.randint(10, 99)}" for w in words]


def random_stream(rng, spec, tenants, size, start, heavy=False):
    stream = Stream(rng, start)
    sent = []
    window = spec["dedup_ms"]
    while len(stream.items) < size:
        roll = rng.random()
        gap = rng.choice([0, 0, 1, 5, 20, 80, 250, 900, 3000] if not heavy else [0, 1, 2, 5, 10, 20, 40])
        tenant = rng.choice(tenants)
        if roll < 0.04:
            stream.send(tenant, rng.choice(HEALTH), gap=gap)
        elif roll < 0.16 and sent:
            t, ten, path, rid = rng.choice(sent[-60:])
            retry = 1 if rng.random() < 0.85 else 0
            stream.send(ten, path, rid=rid, retry=retry, gap=gap)
        elif roll < 0.2:
            ids = stream.burst(tenant, rng.choice(PATHS), rng.randint(3, 12), gap=gap)
            sent.extend((stream.now, tenant, stream.items[-1][2], r) for r in ids[-2:])
        else:
            path = rng.choice(PATHS)
            rid = stream.send(tenant, path, gap=gap)
            sent.append((stream.now, tenant, path, rid))
        if not heavy and rng.random() < 0.01:
            stream.now += rng.choice([window // 2, window + 1, spec["reload_ms"]])
    return stream.items[:size]


def late_retries(rng, items, window_ms, count, admitted=None):
    """Flagged retries that arrive in the last second of their id's dedup window (measured in
    milliseconds from the first sighting), merged into the stream in time order. About half of
    them fall after the id's one-second slot has been dropped from idcache."""
    end = items[-1][0] if items else 0
    health = set(HEALTH)
    pool = [i for i, item in enumerate(items)
            if not item[4] and item[2].split("?")[0] not in health and item[0] + window_ms < end
            and (admitted is None or admitted[i])]
    extra = []
    for index in rng.sample(pool, min(count, len(pool))):
        first, tenant, path, rid, _retry = items[index]
        part = first % 1000
        if part and rng.random() < 0.6:
            delta = rng.randint(1, part)  # lands in the second after the slot was dropped
        else:
            delta = rng.randint(1, 999)
        extra.append([first + window_ms - delta, tenant, path, rid, 1])
    return sorted(items + extra, key=lambda item: item[0])


def _random_spec(rng, params, tenants, overrides=True):
    spec = base_spec(params)
    tiers = ["free", "standard", "pro", "enterprise"]
    spec["tenants"] = [(t, rng.choice(tiers)) for t in tenants[:-1]]  # the last one: default tier
    if overrides:
        for _ in range(rng.randint(1, 3)):
            tenant = rng.choice(tenants)
            start = T0 + rng.randint(-5, 40) * 7_777
            item = {"tenant": tenant, "klass": rng.choice(["search", "default", "write", "*"]),
                    "rate": rng.choice(["5/s", "600/min", "2/s", None]), "burst": rng.choice([None, 3, 25]),
                    "valid_from": start, "valid_until": rng.choice([None, start + rng.randint(30_000, 400_000)]),
                    "style": rng.choice(["z", "naive", "offset", "plus"])}
            if not item["rate"] and not item["burst"]:
                item["burst"] = 8
            for bound in ("valid_from", "valid_until"):  # the file's timestamps are whole seconds
                if item[bound] is not None:
                    item[bound] -= item[bound] % 1000
            spec["overrides"].append(item)
    if rng.random() < 0.5:
        tenant, tier = rng.choice(spec["tenants"])
        spec["late_tenants"] = [(tenant, rng.choice([t for t in tiers if t != tier]),
                                 f"CHG-{rng.randint(4400, 4999)}: {tenant} changes tier (contract renewal)")]
    return spec


# --------------------------------------------------------------------------------------
# Rule cases
# --------------------------------------------------------------------------------------
def _scenarios(rng, params):
    window = params["dedup_window_s"] * 1000
    reload = params["reload_interval_min"] * 60_000
    out = {}

    def fresh(tenant_tier=None):
        spec = base_spec(params)
        tenants = _tenants(rng, 3)
        spec["tenants"] = [(tenants[0], tenant_tier or "free"), (tenants[1], "standard")]
        return spec, tenants

    # Fixed-window edge: a full burst just before a minute boundary and another just after.
    spec, (a, b, c) = fresh()
    edge = T0 + 3 * 60_000
    s = Stream(rng, edge - 400)
    s.burst(a, "/v1/items", 10, spacing=30)
    s.now = edge + 50
    s.burst(a, "/v1/items", 10, spacing=30)
    s.send(a, "/v1/items", gap=5_000)
    s.send(a, "/v1/items", gap=1)
    out["gcra_no_double_burst"] = (spec, s.items)

    # Denied requests consume nothing: a client hammering while limited gets in on time.
    spec, (a, b, c) = fresh()
    s = Stream(rng, T0 + 11_111)
    s.burst(a, "/v1/search", 4)
    for _ in range(12):
        s.send(a, "/v1/search", gap=250)
    s.send(a, "/v1/search", gap=3000 - 12 * 250 + 1)
    s.send(a, "/v1/search", gap=2999)
    s.send(a, "/v1/search", gap=1)
    out["gcra_rejections_free"] = (spec, s.items)

    # Emission interval rounded up to whole ms (7/s -> 143 ms), Retry-After rounded up.
    spec, (a, b, c) = fresh("pro")
    spec["tenants"][0] = (a, "pro")
    s = Stream(rng, T0 + 500)
    s.burst(a, "/v1/search?q=x", 14)
    s.send(a, "/v1/search", gap=0)
    s.burst(a, "/v1/search", 8, gap=1000)
    s.send(a, "/v1/search", gap=142)
    s.send(a, "/v1/search", gap=1)
    s.burst(a, "/v1/orders/export", 3, gap=10)
    s.send(a, "/v1/orders/export", gap=1)
    s.send(a, "/v1/orders/export", gap=119_000)
    s.send(a, "/v1/orders/export", gap=1_000)
    out["gcra_interval_rounding"] = (spec, s.items)

    # Retries: a flagged retry of an admitted request is free within the window; unflagged
    # reuse of an id is a new request; a retry after the window is a new request.
    spec, (a, b, c) = fresh()
    s = Stream(rng, T0 + 77_000)
    ids = s.burst(a, "/v1/orders", 2)
    s.send(a, "/v1/orders", rid=ids[0], retry=1, gap=10)
    s.send(a, "/v1/orders", rid=ids[1], retry=1, gap=10)
    s.send(a, "/v1/orders", rid=ids[0], retry=0, gap=10)
    s.send(a, "/v1/orders", rid=ids[1], retry=1, gap=window - 40)
    s.send(a, "/v1/orders", rid=ids[1], retry=1, gap=30)
    s.send(b, "/v1/orders", rid=ids[0], retry=1, gap=5)
    out["retry_dedup_window"] = (spec, s.items)

    # The window counts from the FIRST sighting of the id, not from the latest retry.
    spec, (a, b, c) = fresh()
    s = Stream(rng, T0 + 123_000)
    first = s.send(a, "/v1/auth/token")
    s.burst(a, "/v1/auth/token", 4, gap=1)
    s.send(a, "/v1/auth/token", rid=first, retry=1, gap=window * 6 // 10)
    s.burst(a, "/v1/auth/token", 6, gap=window * 6 // 10 - 1)
    s.send(a, "/v1/auth/token", rid=first, retry=1, gap=1)
    s.send(a, "/v1/auth/token", rid=first, retry=1, gap=1)
    out["retry_window_from_first"] = (spec, s.items)

    # A retry of a denied request is a fresh attempt; once admitted, its retries are free.
    spec, (a, b, c) = fresh()
    s = Stream(rng, T0 + 200_000)
    s.burst(a, "/v1/orders/7", 2)
    late = s.send(a, "/v1/orders/7", gap=1)
    s.send(a, "/v1/orders/7", rid=late, retry=1, gap=1000)
    s.send(a, "/v1/orders/7", rid=late, retry=1, gap=5000)
    s.send(a, "/v1/orders/7", rid=late, retry=1, gap=1)
    s.send(a, "/v1/orders/7", gap=1)
    out["retry_of_denied"] = (spec, s.items)

    # idcache keeps ids in one-second slots: an id first seen at second f is forgotten from
    # second f + dedup_window on, so a retry in the last second of the millisecond window is a
    # new attempt when the first sighting was late in its second.
    spec, (a, b, c) = fresh()
    s = Stream(rng, T0 + 250_000 + rng.randint(600, 899))
    late = s.send(a, "/v1/orders")  # the write line: 10/min burst 2
    s.send(a, "/v1/orders", rid=late, retry=1, gap=window - rng.randint(100, 500))
    s.burst(a, "/v1/orders", 2, gap=1)
    s.now = T0 + 400_000 + rng.randint(50, 250)
    kept = s.send(b, "/v1/reports/export")  # export: 2/h, burst 1
    s.send(b, "/v1/reports/export", rid=kept, retry=1, gap=window - 300)  # same slot still
    s.send(b, "/v1/reports/export", gap=1)
    s.now = T0 + 500_000 + 999
    edge = s.send(c, "/v1/auth/token")  # auth: 5/min burst 5
    s.burst(c, "/v1/auth/token", 3, gap=1)
    s.send(c, "/v1/auth/token", rid=edge, retry=1, gap=window - 2)  # enters the dropped second
    s.burst(c, "/v1/auth/token", 5, gap=1)
    out["retry_idcache_seconds"] = (spec, s.items)

    # A tenant listed twice: the loader keeps the first section of a name.
    spec, (a, b, c) = fresh()
    spec["late_tenants"] = [
        (a, "enterprise", f"CHG-{rng.randint(4400, 4999)}: {a} upgraded to enterprise"),
        (b, "standard", "re-confirmed after the contract review"),
        (c, "pro", f"CHG-{rng.randint(4400, 4999)}: {c} signed for pro"),
    ]
    s = Stream(rng, T0 + 700_000 + rng.randint(0, 999))
    s.burst(a, "/v1/items", 15)
    s.burst(c, "/v1/items", 24, gap=3)
    s.burst(b, "/v1/search", 14, gap=3)
    s.burst(a, "/v1/orders", 4, gap=3)
    out["tenant_section_twice"] = (spec, s.items)

    # Health checks: never limited, never counted.
    spec, (a, b, c) = fresh()
    s = Stream(rng, T0 + 300_000)
    s.burst(a, "/v1/items", 3)
    for path in HEALTH + ["/readyz?verbose=1"]:
        s.send(a, path, gap=1)
    s.burst(a, "/v1/items", 7, gap=1)
    s.send(a, "/v1/items", gap=1)
    s.send(a, "/v1/healthz", gap=1)
    s.burst(a, "/v1/auth/refresh", 5, gap=1)
    s.send(a, "/livez", gap=1)
    s.send(a, "/v1/auth/refresh", gap=1)
    out["health_checks_exempt"] = (spec, s.items)

    # Route classes: the most specific pattern wins, exact over prefix, query ignored.
    spec, (a, b, c) = fresh()
    routes = list(spec["routes"])
    rng.shuffle(routes)
    spec["routes"] = routes
    s = Stream(rng, T0 + 400_000)
    for path in ["/v1/search/suggest", "/v1/search?q=a", "/v1/search/suggest?q=b", "/v1/orders/export/2",
                 "/v1/reports/export", "/v1/reports/export/x", "/v1/auth/token", "/v3/nothing", "/v2/search"]:
        s.burst(a, path, 5, gap=1)
    out["routes_most_specific"] = (spec, s.items)

    # Tenants: unknown tenants get the default tier; tiers inherit from their parents.
    spec, (a, b, c) = fresh("enterprise")
    s = Stream(rng, T0 + 500_000)
    for tenant in (a, b, c):
        s.burst(tenant, "/v1/orders", 25, gap=1)
        s.burst(tenant, "/v1/reports/export", 4, gap=1)
        s.burst(tenant, "/v1/auth/token", 7, gap=1)
    out["tiers_default_and_inheritance"] = (spec, s.items)

    # Override: valid_from between two reloads applies only from the next reload; it ends at
    # the first reload at or after valid_until.
    spec, (a, b, c) = fresh()
    boundary = T0 + 7 * reload
    start = boundary - reload // 3
    end = boundary + 2 * reload + reload // 4
    spec["overrides"].append({"tenant": a, "klass": "search", "rate": "600/min", "burst": 30,
                              "valid_from": start, "valid_until": end, "style": "z"})
    s = Stream(rng, start + 1000)
    s.burst(a, "/v1/search", 8)
    s.now = boundary
    s.burst(a, "/v1/search", 26)
    s.now = end + 10
    s.burst(a, "/v1/search", 40)
    s.now = -(-end // reload) * reload + 100
    s.burst(a, "/v1/search", 40)
    out["override_from_next_reload"] = (spec, s.items)

    # Overrides: class-specific beats '*'; a later section beats an earlier one; an override
    # may set only the burst; timestamps with an offset or without a zone.
    spec, (a, b, c) = fresh()
    spec["overrides"] += [
        {"tenant": a, "klass": "*", "burst": 20, "valid_from": T0 - 86_400_000, "style": "offset"},
        {"tenant": a, "klass": "write", "rate": "1/min", "valid_from": T0 - 86_400_000, "style": "naive"},
        {"tenant": b, "klass": "default", "rate": "1/min", "burst": 2, "valid_from": T0 - 86_400_000, "style": "plus"},
        {"tenant": b, "klass": "default", "rate": "6000/min", "burst": 40, "valid_from": T0 - 86_400_000, "style": "z"},
    ]
    s = Stream(rng, T0 + 600_000)
    s.burst(a, "/v1/items", 22, gap=1)
    s.burst(a, "/v1/orders", 4, gap=1)
    s.burst(b, "/v1/items", 45, gap=1)
    out["override_precedence"] = (spec, s.items)
    return out


def _syntax_case(rng, params):
    """The same quotas written with every feature of the format."""
    window, reload = params["dedup_window_s"], params["reload_interval_min"]
    tenants = _tenants(rng, 3)
    text = f"""; quotas.conf, hand-edited by ops
# ---------------------------------------------------------------
[gateway]
  dedup_window   = {window * 1000}ms      # same as {window}s
  reload_interval = {reload * 60}s
  owner = traffic-team ; ignored key

[defaults]
tier=basic

[ tier basic ]
DEFAULT = 30/30s burst 3
search  = 4/8s \\
          burst 2
export  = 1/d

[tier plus: basic]
default = 120 / min burst 12   ; spaces around the slash are fine
write   = 1/500ms burst 4

[routes]
/v1/*            = default
/v1/search*      = SEARCH
/v1/orders*      = write
/v1/orders/export* = export

[tenant {tenants[0]}]
tier = plus

[override {tenants[0]} Search]
rate        = 3/s
valid_from  = 2024-06-01T00:00:00+02:00   # i.e. 2024-05-31T22:00:00Z
"""
    spec = {
        "dedup_window": None, "dedup_ms": window * 1000, "reload": None, "reload_ms": reload * 60_000,
        "default_tier": "basic",
        "tiers": [("basic", None, [("default", "30/30s", 3), ("search", "4/8s", 2), ("export", "1/d", 1)]),
                  ("plus", "basic", [("default", "120/min", 12), ("write", "1/500ms", 4)])],
        "routes": [("/v1/*", "default"), ("/v1/search*", "search"), ("/v1/orders*", "write"),
                   ("/v1/orders/export*", "export")],
        "tenants": [(tenants[0], "plus")],
        "overrides": [{"tenant": tenants[0], "klass": "search", "rate": "3/s",
                       "valid_from": T0 - 2 * 3_600_000}],
    }
    s = Stream(rng, T0 + 900_000)
    for tenant in tenants[:2]:
        s.burst(tenant, "/v1/items", 14, gap=1, spacing=40)
        s.burst(tenant, "/v1/search", 5, gap=1, spacing=100)
        s.burst(tenant, "/v1/orders", 6, gap=1, spacing=100)
        s.burst(tenant, "/v1/orders/export", 2, gap=1)
        s.burst(tenant, "/v2/items", 2, gap=1)
    return text, spec, s.items


def _visible(rng, params, conf_text, conf_spec, tenants):
    s = Stream(rng, T0 + 1_000_000)
    for _ in range(6):
        s.send(tenants[0], rng.choice(["/v1/items", "/v1/search?q=lamp", "/v1/orders"]), gap=rng.randint(4000, 9000))
    first = list(s.items)
    s = Stream(rng, T0 + 2_000_000)
    s.burst(tenants[1], "/v1/items", 11, spacing=0)
    return [first, s.items]


def workspace_spec(params, names, context_tenants):
    spec = base_spec(params)
    spec["tenants"] = [(context_tenants[0], "standard"), (context_tenants[1], "free"),
                       (context_tenants[2], "pro"), (context_tenants[3], "enterprise")]
    spec["overrides"] = [{"tenant": context_tenants[0], "klass": "search", "rate": "600/min", "burst": 40,
                          "valid_from": T0 + 42 * 60_000 + 10_000, "valid_until": T0 + 90 * 60_000}]
    return spec


WORKSPACE_TENANTS = ["northwind", "contoso", "fabrikam", "tailspin"]


def generate(params, names, rng, perf_rng):
    decide = _model(names)
    cases = []

    # The workspace config (config/quotas.conf.tmpl renders the same quotas).
    conf_text = string.Template((HERE / "files/config/quotas.conf.tmpl").read_text()).substitute(
        {k: str(v) for k, v in params.items()})
    ws_spec = workspace_spec(params, names, WORKSPACE_TENANTS)
    for index, items in enumerate(_visible(rng, params, conf_text, ws_spec, WORKSPACE_TENANTS)):
        cases.append((f"visible_example_{index + 1}", "example", conf_text, ws_spec, items, True))

    for name, (spec, items) in _scenarios(rng, params).items():
        cases.append((name, "rule", render(spec, rng), spec, items, False))
    text, spec, items = _syntax_case(rng, params)
    cases.append(("config_syntax_features", "parsing", text, spec, items, False))
    for index in range(6):
        tenants = _tenants(rng, rng.randint(2, 4))
        spec = _random_spec(rng, params, tenants)
        items = random_stream(rng, spec, tenants, rng.randint(60, 160), T0 + rng.randint(-30, 60) * 7_777)
        items = late_retries(rng, items, spec["dedup_ms"], rng.randint(2, 5))
        cases.append((f"random_mixed_{index + 1}", "random", render(spec, rng), spec, items, False))
    items = random_stream(rng, ws_spec, WORKSPACE_TENANTS + ["wingtip-77"], 150, T0 + 3_000_000)
    cases.append(("random_workspace_config", "random", conf_text, ws_spec, items, False))

    out = []
    for name, category, text, spec, items, shown in cases:
        expected = decide(text, items)
        if expected != brute(spec, items):
            raise AssertionError(f"model and brute force disagree on {name}")
        out.append({"name": name, "kind": "functional", "category": category,
                    "args": [text, items], "kwargs": {}, "expected": expected, "visible": shown})

    out.append(_performance(params["perf_requests"], perf_rng, decide))
    example = out[0]
    return {
        "task_data": {"input": {names["requests_arg"]: example["args"][1]}, "config": "config/quotas.conf",
                      "expected_output": example["expected"]},
        "cases": out,
    }


PERF_LATE_RETRIES = 600
_PERF_CACHE: dict = {}  # deterministic: keyed by perf_rng's state (the version and perf_requests)


def _performance(size, perf_rng, decide):
    """A dozen busy tenants, a few minutes of traffic (depends on perf_rng and size only)."""
    key = (size, hash(perf_rng.getstate()))
    if key in _PERF_CACHE:
        return _PERF_CACHE[key]
    perf_params = {"dedup_window_s": 60, "reload_interval_min": 1}
    tenants = _tenants(perf_rng, 12)
    spec = _random_spec(perf_rng, perf_params, tenants)
    spec["routes"] += [(f"/v1/partner/{i:02d}/*", perf_rng.choice(["default", "search", "write"])) for i in range(40)]
    # Contract changes appended as second tenant sections: the loader keeps the first one.
    listed = [tenant for tenant, _tier in spec["tenants"]]
    tiers = ["free", "standard", "pro", "enterprise"]
    spec["late_tenants"] = []
    for tenant in perf_rng.sample(listed, 4):
        tier = dict(spec["tenants"])[tenant]
        spec["late_tenants"].append((tenant, perf_rng.choice([t for t in tiers if t != tier]),
                                     f"CHG-{perf_rng.randint(4400, 4999)}: {tenant} moves tier from June"))
    text = render(spec, perf_rng)
    stream = random_stream(perf_rng, spec, tenants, size - PERF_LATE_RETRIES, T0, heavy=True)
    for item in stream:
        roll = perf_rng.random()
        if roll < 0.25:
            item[2] = f"/v1/partner/{perf_rng.randrange(40):02d}/items/{perf_rng.randrange(10**6)}"
        elif roll < 0.7 and item[2].count("/") == 2 and not item[2].startswith(("/_", "/h", "/r", "/l", "/p")):
            item[2] = f"{item[2]}/{perf_rng.randrange(10**5)}"
    admitted = [verdict == 0 for verdict in decide(text, stream)]
    stream = late_retries(perf_rng, stream, perf_params["dedup_window_s"] * 1000, PERF_LATE_RETRIES, admitted)
    assert len(stream) == size, "the performance stream lost requests"
    case = {"name": "scale_busy_gateway", "kind": "performance", "category": "scale",
            "args": [text, stream], "kwargs": {}, "expected": decide(text, stream)}
    if len(_PERF_CACHE) >= 4:
        _PERF_CACHE.clear()
    _PERF_CACHE[key] = case
    return case


def compare(expected, actual):
    if not isinstance(actual, list):
        return False, "the decisions must be a list of integers"
    if len(actual) != len(expected):
        return False, f"returned {len(actual)} decisions, expected a different number"
    for index, (want, got) in enumerate(zip(expected, actual)):
        if isinstance(got, bool) or not isinstance(got, int):
            return False, f"decision {index} is not an integer"
        if got != want:
            return False, f"decision {index} is wrong"
    return True, "ok"
