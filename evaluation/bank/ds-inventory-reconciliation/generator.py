"""Hidden-test generator for ds-inventory-reconciliation (trusted bank code, plain stdlib).

The reference tables (data/sites.csv, data/pack_master.csv, data/substitutions.csv) and the
performance extract come from ``perf_rng`` (seeded by the [performance] parameters only), so
every instance that agrees on them shares one calibration; the functional cases come from the
seed's ``rng``. The instance's rules (warehouse-day start, hold zone, part-unit conversion)
never change an input, only the expected table.

Expected tables come from the generator's own facts (``_fast``: one pass that groups movements
by (site, sku), sorts each group and replays it). Every functional case is cross-checked
against ``_brute``, which parses the rendered texts and scans every record for every
(site, sku). ``_brute`` takes switches that each turn one rule off (the "switch" pattern):
every per-rule case asserts that its switch changes the answer, so each rule is tested on
every seed, and the literal readings under references/literal/ model the same switches.

Time is integer seconds since 2025-01-01 00:00:00 (UTC for ``utc``, site time for local
values); days are those seconds // 86400.
"""

from __future__ import annotations

import datetime as dt
import json

DAY = 86400
EPOCH = dt.datetime(2025, 1, 1)  # noqa: DTZ001 (naive on purpose: site time and UTC are both kept as offsets)
RUNBOOK_DAY_START = 6  # the runbook's (superseded) warehouse-day start
NORMAL_ZONES = "ABCDEFGKMNRST"
HOLD_CANDIDATES = "QHX"  # every instance's hold zone is one of these; the others are ordinary
SITE_GROUPS = [
    [("USME", "Memphis Lamar Ave", -360), ("USNJ", "Edison Raritan Center", -300)],
    [("UKLV", "Liverpool Seaforth", 0)],
    [("NLRT", "Rotterdam Waalhaven", 60), ("BEAN", "Antwerp Noorderlaan", 60)],
    [("GRPI", "Piraeus Schisto", 120), ("AEDX", "Jebel Ali South", 240),
     ("INPN", "Pune Chakan", 330)],
]
FAMILIES = ["BV", "HC", "PC", "FD", "KT"]
CHAIN_KINDS = [("EA",), ("EA", "CS"), ("EA", "IN", "CS"), ("EA", "IN", "CS", "PL")]
RECEIPT_HEADER = "receipt_id,site,sku,uom,qty,received_at,source"
COUNTERS = ["AKR", "BMO", "CLT", "DPS", "EVH", "FNA", "GRW", "HJS", "IOK", "JTB"]
CARRIERS = ["DHL", "DSV", "GXO", "UPS", "KN", None]
MONTH_ENDS = [dt.date(2025, m + 1, 1) - dt.timedelta(days=1) for m in range(2, 12)]

RIGHT = {
    "chain": True,  # pack factors multiply down the ref_uom chain (diagram)
    "rtv": True,  # negative receipts (returns to vendor) reduce stock
    "edi_utc": True,  # EDI receipt stamps are UTC
    "ship_utc": True,  # shipment stamps are UTC
    "day_start": None,  # None: the instance's hour; else an hour (6: runbook, 0: midnight)
    "subst": "dated",  # dated | none | one-hop | undated
    "subst_day": "business",  # business | utc-date: the day a substitution is resolved at
    "subst_pack": "resolved",  # resolved | ordered: whose pack master converts a shipment
    "vt_exclusive": True,  # valid_to is the first day a substitution no longer holds
    "tie": "absorbed",  # absorbed | after: movements stamped in the count minute
    "lines": "sum",  # sum | last: the lines of a count sheet
    "hold": True,  # hold-zone lines are not on hand
    "part": None,  # None: the instance's rule; else "truncate" | "half-up"
    "counts": True,  # a count replaces the book balance
}


# ----------------------------------------------------------------------------- formatting


_DATES: dict[int, dt.datetime] = {}


def _at(secs: int) -> dt.datetime:
    day, rest = divmod(secs, DAY)
    base = _DATES.get(day)
    if base is None:
        base = _DATES[day] = EPOCH + dt.timedelta(days=day)
    return base + dt.timedelta(seconds=rest)


def fmt_wms(local: int) -> str:
    return _at(local).strftime("%Y-%m-%d %H:%M")


def fmt_edi(utc: int) -> str:
    return _at(utc).strftime("%m/%d/%Y %H:%M")


def fmt_ship(utc: int) -> str:
    return _at(utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_count(local_min: int) -> str:
    return _at(local_min * 60).strftime("%Y%m%d%H%M")


def fmt_out(local_min: int) -> str:
    return _at(local_min * 60).strftime("%Y-%m-%d %H:%M")


def day_of(date: dt.date) -> int:
    return (date - EPOCH.date()).days


def iso_day(day: int) -> str:
    return (EPOCH.date() + dt.timedelta(days=day)).isoformat()


# ----------------------------------------------------------------------------- reference data


class World:
    """The reference tables of an instance (drawn from perf_rng) and lookups over them."""

    def __init__(self, perf_rng):
        r = perf_rng
        self.sites = [r.choice(group) for group in SITE_GROUPS]
        self.offset = {code: off for code, _name, off in self.sites}
        self.items = {}  # sku -> {uom: (ref_uom, factor)}
        self.kind = {}
        used = set()
        for _ in range(420):
            kind = CHAIN_KINDS[r.choices(range(4), [12, 25, 45, 18])[0]]
            while True:
                sku = f"{r.choice(FAMILIES)}-{r.randint(10000, 99999)}"
                if sku not in used:
                    used.add(sku)
                    break
            packs = {"EA": ("", 1)}
            if kind == ("EA", "CS"):
                packs["CS"] = ("EA", r.choice([6, 8, 10, 12, 16, 20, 24, 30, 36, 48]))
            elif len(kind) >= 3:
                packs["IN"] = ("EA", r.choice([2, 3, 4, 5, 6, 8, 10, 12]))
                packs["CS"] = ("IN", r.choice([2, 3, 4, 5, 6, 8]))
                if len(kind) == 4:
                    packs["PL"] = ("CS", r.choice([20, 24, 30, 36, 40, 48, 60]))
            self.items[sku] = packs
            self.kind[sku] = kind
        self.skus = sorted(self.items)
        self.links = []  # (old, new, valid_from day, valid_to day or None)
        by_kind = {}
        for sku in self.skus:
            by_kind.setdefault(self.kind[sku], []).append(sku)
        pool = {k: r.sample(v, len(v)) for k, v in by_kind.items()}
        shapes = ["single", "chain", "chain", "temporary", "switch", "chain"]
        self.groups = []
        for index in range(42):
            kind = CHAIN_KINDS[1 + index % 3]
            shape = shapes[index % len(shapes)]
            need = 2 if shape in ("single", "temporary") else 3
            if len(pool[kind]) < need:
                continue
            members = [pool[kind].pop() for _ in range(need)]
            d1 = r.randint(40, 320)
            if shape == "single":
                links = [(members[0], members[1], d1, None)]
            elif shape == "temporary":
                links = [(members[0], members[1], d1, d1 + r.randint(4, 30))]
            elif shape == "chain":
                d2 = max(20, min(340, d1 + r.choice([-1, 1]) * r.randint(3, 40)))
                links = [(members[0], members[1], d1, None), (members[1], members[2], d2, None)]
            else:
                d3 = d1 + r.randint(5, 35)
                links = [(members[0], members[1], d1, d3), (members[0], members[2], d3, None)]
            self.links.extend(links)
            self.groups.append((shape, members, links))
        self.links.sort(key=lambda k: (k[0], k[2]))
        self.out_links = {}
        for link in self.links:
            self.out_links.setdefault(link[0], []).append(link)
        self.heads = sorted({g[1][0] for g in self.groups})
        self.in_groups = sorted({m for g in self.groups for m in g[1]})
        grouped = set(self.in_groups)
        self.plain = [s for s in self.skus if s not in grouped]
        self.factor_cache = {}

    def factor(self, sku, uom):
        key = (sku, uom)
        value = self.factor_cache.get(key)
        if value is None:
            value, unit = 1, uom
            while unit != "EA":
                ref, f = self.items[sku][unit]
                value *= f
                unit = ref
            self.factor_cache[key] = value
        return value

    def resolve(self, sku, day):
        for _hop in range(8):
            nxt = None
            for _old, new, start, end in self.out_links.get(sku, ()):
                if start <= day and (end is None or day < end):
                    nxt = new
            if nxt is None:
                return sku
            sku = nxt
        raise AssertionError("substitution cycle")

    # the three files
    def sites_csv(self):
        lines = ["site,name,utc_offset"]
        for code, name, off in self.sites:
            sign = "+" if off >= 0 else "-"
            lines.append(f"{code},{name},{sign}{abs(off) // 60:02d}:{abs(off) % 60:02d}")
        return "\n".join(lines) + "\n"

    def packs_csv(self):
        lines = ["sku,uom,ref_uom,factor"]
        for sku in self.skus:
            for uom in ("EA", "IN", "CS", "PL"):
                if uom in self.items[sku]:
                    ref, f = self.items[sku][uom]
                    lines.append(f"{sku},{uom},{ref},{f}")
        return "\n".join(lines) + "\n"

    def subst_csv(self):
        lines = ["old_sku,new_sku,valid_from,valid_to"]
        for old, new, start, end in self.links:
            lines.append(f"{old},{new},{iso_day(start)},{'' if end is None else iso_day(end)}")
        return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- facts -> texts


def receipts_csv(receipts):
    out = [RECEIPT_HEADER]
    for r in receipts:
        stamp = fmt_wms(r["local"]) if r["source"] == "WMS" else fmt_edi(r["utc"])
        out.append(f"{r['id']},{r['site']},{r['sku']},{r['uom']},{r['qty']},{stamp},{r['source']}")
    return "\n".join(out) + "\n"


def shipments_jsonl(shipments):
    out = []
    for s in shipments:
        rec = {"shipment_id": s["id"], "site": s["site"], "sku": s["sku"], "qty": s["qty"],
               "shipped_at": fmt_ship(s["utc"])}
        if s["uom"] is not None:
            rec["uom"] = s["uom"]
        if s.get("order_ref"):
            rec["order_ref"] = s["order_ref"]
        if s.get("carrier"):
            rec["carrier"] = s["carrier"]
        out.append(json.dumps(rec, separators=(",", ":")))
    return "".join(line + "\n" for line in out)


def counts_fwf(lines, export_no=1):
    out = [f"HD{export_no:08d}WMS CYCLE COUNT EXPORT      V3".ljust(60)]
    for c in lines:
        row = (f"CT{c['sheet']:08d}{c['site']:<4}{c['loc']:<8}{c['sku']:<12}{c['uom']:<2}"
               f"{c['qty_milli']:09d}{fmt_count(c['local_min'])}{c['counter']:<3}")
        assert len(row) == 60, row
        out.append(row)
    out.append(f"TR{len(lines):08d}".ljust(60))
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- expected (fast)


def part_rule(params):
    """The retired job's T-SQL ROUND(x, 0, f): f = 1 truncates, f = 0 rounds halves up."""
    return "truncate" if params["legacy_round_function"] else "half-up"


def _convert_part(milli, rule):
    return milli // 1000 if rule == "truncate" else (milli + 500) // 1000


def _fast(world, params, case):
    """One pass: group by (site, sku), sort each group, replay it."""
    receipts, shipments, lines, cutoff = case
    ds = params["day_start_hour"] * 3600
    cut = (cutoff + 1) * DAY + ds
    hold, part = params["hold_zone"], part_rule(params)
    groups = {}
    for r in receipts:
        if r["local"] < cut:
            groups.setdefault((r["site"], r["sku"]), []).append(
                (r["local"], 1, r["qty"] * world.factor(r["sku"], r["uom"])))
    for s in shipments:
        local = s["utc"] + world.offset[s["site"]] * 60
        if local < cut:
            sku = world.resolve(s["sku"], (local - ds) // DAY)
            groups.setdefault((s["site"], sku), []).append(
                (local, 1, -s["qty"] * world.factor(sku, s["uom"] or "EA")))
    sheets = {}
    for c in lines:
        if c["local_min"] * 60 < cut:
            sheet = sheets.setdefault(c["sheet"], [c["site"], c["sku"], c["local_min"], 0])
            if c["loc"][0] != hold:
                sheet[3] += _convert_part(c["qty_milli"] * world.factor(c["sku"], c["uom"]), part)
    for site, sku, minute, counted in sheets.values():
        groups.setdefault((site, sku), []).append((minute * 60 + 60, 0, counted, minute))
    rows = []
    for site, sku in sorted(groups):
        balance, last, variance = 0, None, None
        for event in sorted(groups[(site, sku)]):
            if event[1] == 0:
                variance, balance, last = event[2] - balance, event[2], event[3]
            else:
                balance += event[2]
        rows.append({"site": site, "sku": sku, "on_hand": balance,
                     "last_count_at": None if last is None else fmt_out(last),
                     "count_variance": variance})
    return rows


# ----------------------------------------------------------------------------- brute (texts)


def _parse_offset(text):
    sign = -1 if text[0] == "-" else 1
    return sign * (int(text[1:3]) * 60 + int(text[4:6]))


def _brute(tables, params, texts, **switches):
    """Parse every text, then scan every record for every (site, sku); switches turn rules off."""
    f = {**RIGHT, **switches}
    sites_text, packs_text, subst_text = tables
    receipts_text, shipments_text, counts_text, cutoff_text = texts
    offsets = {}
    for row in sites_text.strip().splitlines()[1:]:
        code, _name, off = row.split(",")
        offsets[code] = _parse_offset(off)
    packs = {}
    for row in packs_text.strip().splitlines()[1:]:
        sku, uom, ref, factor = row.split(",")
        packs[(sku, uom)] = (ref, int(factor))

    def factor(sku, uom):
        ref, value = packs[(sku, uom)]
        if not f["chain"]:
            return value
        while ref:
            ref, more = packs[(sku, ref)]
            value *= more
        return value

    links = []
    for row in subst_text.strip().splitlines()[1:]:
        old, new, start, end = row.split(",")
        links.append((old, new, dt.date.fromisoformat(start),
                      dt.date.fromisoformat(end) if end else None))

    def resolve(sku, day):
        mode = f["subst"]
        if mode == "none":
            return sku
        for _hop in range(8):
            found = None
            for old, new, start, end in links:
                if old != sku:
                    continue
                if mode in ("undated", "one-hop"):
                    if found is None or start > found[0]:
                        found = (start, new)
                    continue
                open_end = end is None or (day < end if f["vt_exclusive"] else day <= end)
                if start <= day and open_end:
                    found = (start, new)
            if found is None:
                return sku
            sku = found[1]
            if mode == "one-hop":
                return sku
        raise AssertionError("cycle")

    start_hour = params["day_start_hour"] if f["day_start"] is None else f["day_start"]
    cutoff = dt.datetime.fromisoformat(cutoff_text) + dt.timedelta(days=1, hours=start_hour)
    part = part_rule(params) if f["part"] is None else f["part"]
    moves = []  # (site, sku, local datetime, base qty)
    for row in receipts_text.strip().splitlines()[1:]:
        _rid, site, sku, uom, qty, stamp, source = row.split(",")
        if source == "WMS":
            local = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M")  # noqa: DTZ007
        else:
            local = dt.datetime.strptime(stamp, "%m/%d/%Y %H:%M")  # noqa: DTZ007
            if f["edi_utc"]:
                local += dt.timedelta(minutes=offsets[site])
        if int(qty) < 0 and not f["rtv"]:
            continue
        moves.append((site, sku, local, int(qty) * factor(sku, uom)))
    for text in shipments_text.splitlines():
        if not text.strip():
            continue
        rec = json.loads(text)
        utc = dt.datetime.strptime(rec["shipped_at"], "%Y-%m-%dT%H:%M:%SZ")  # noqa: DTZ007
        local = utc + dt.timedelta(minutes=offsets[rec["site"]]) if f["ship_utc"] else utc
        if f["subst_day"] == "business":
            day = (local - dt.timedelta(hours=start_hour)).date()
        else:
            day = utc.date()
        sku = resolve(rec["sku"], day)
        uom = rec.get("uom", "EA")
        owner = sku if f["subst_pack"] == "resolved" else rec["sku"]
        moves.append((rec["site"], sku, local, -rec["qty"] * factor(owner, uom)))
    count_lines = []
    for text in counts_text.splitlines():
        if not text.startswith("CT"):
            continue
        count_lines.append({
            "sheet": text[2:10], "site": text[10:14].strip(), "zone": text[14],
            "sku": text[22:34].strip(), "uom": text[34:36].strip(), "milli": int(text[36:45]),
            "at": dt.datetime.strptime(text[45:57], "%Y%m%d%H%M"),  # noqa: DTZ007
        })
    keys = sorted({(m[0], m[1]) for m in moves if m[2] < cutoff}
                  | {(c["site"], c["sku"]) for c in count_lines if c["at"] < cutoff})
    rows = []
    minute = dt.timedelta(minutes=1)
    for site, sku in keys:
        sheets = {}
        for c in count_lines:
            if c["site"] != site or c["sku"] != sku or c["at"] >= cutoff:
                continue
            sheet = sheets.setdefault(c["sheet"], {"at": c["at"], "qty": 0})
            if f["hold"] and c["zone"] == params["hold_zone"]:
                continue
            base = c["milli"] * factor(sku, c["uom"])
            value = base // 1000 if part == "truncate" else (base + 500) // 1000
            sheet["qty"] = sheet["qty"] + value if f["lines"] == "sum" else value
        timeline = [(m[2], 1, m[3], None) for m in moves
                    if m[0] == site and m[1] == sku and m[2] < cutoff]
        if f["counts"]:
            for sheet in sheets.values():
                edge = sheet["at"] + minute if f["tie"] == "absorbed" else sheet["at"]
                timeline.append((edge, 0, sheet["qty"], sheet["at"]))
        balance, last, variance = 0, None, None
        for _when, kind, qty, at in sorted(timeline, key=lambda e: (e[0], e[1])):
            if kind == 0:
                variance, balance, last = qty - balance, qty, at
            else:
                balance += qty
        rows.append({"site": site, "sku": sku, "on_hand": balance,
                     "last_count_at": None if last is None else last.strftime("%Y-%m-%d %H:%M"),
                     "count_variance": variance})
    return rows


# ----------------------------------------------------------------------------- drawing cases


class Draw:
    """Builds one extract: receipts, shipments and count lines, as facts."""

    def __init__(self, world, rng, prefix):
        self.w, self.rng, self.prefix = world, rng, prefix
        self.receipts, self.shipments, self.lines = [], [], []
        self.sheet_no = rng.randint(10_000, 90_000)
        self.sheet_minutes = set()

    def receipt(self, site, sku, local=None, utc=None, source="WMS", qty=None, uom=None):
        rng, off = self.rng, self.w.offset[site]
        if source == "WMS":
            local = local - local % 60
            utc = local - off * 60
        else:
            utc = (local - off * 60) if utc is None else utc
            utc -= utc % 60
            local = utc + off * 60
        uom = uom or rng.choice(sorted(self.w.items[sku]))
        if qty is None:
            qty = rng.randint(1, 40)
        self.receipts.append({"id": f"{self.prefix}R{len(self.receipts) + 1:06d}", "site": site,
                              "sku": sku, "uom": uom, "qty": qty, "source": source,
                              "local": local, "utc": utc})

    def shipment(self, site, sku, local, qty=None, uom="?"):
        rng = self.rng
        if uom == "?":
            uom = None if rng.random() < 0.25 else rng.choice(sorted(self.w.items[sku]))
        utc = local - self.w.offset[site] * 60
        self.shipments.append({
            "id": f"{self.prefix}S{len(self.shipments) + 1:06d}", "site": site, "sku": sku,
            "uom": uom, "qty": rng.randint(1, 12) if qty is None else qty, "utc": utc,
            "order_ref": f"SO{rng.randint(1_000_000, 9_999_999)}" if rng.random() < 0.7 else None,
            "carrier": rng.choice(CARRIERS),
        })

    def count(self, site, sku, local_min, n_lines=None, hold_share=0.25, fractional=0.5):
        rng = self.rng
        while (site, sku, local_min) in self.sheet_minutes:
            local_min += 1
        self.sheet_minutes.add((site, sku, local_min))
        self.sheet_no += rng.randint(1, 7)
        for _ in range(n_lines or rng.choice([1, 1, 2, 2, 3])):
            if rng.random() < hold_share:
                zone = rng.choice(HOLD_CANDIDATES)
            else:
                zone = rng.choice(NORMAL_ZONES)
            loc = f"{zone}{rng.randint(1, 40):02d}{rng.randint(1, 120):03d}{rng.randint(1, 6):02d}"
            uom = rng.choice(sorted(self.w.items[sku]))
            milli = rng.randint(0, 60) * 1000
            if rng.random() < fractional:
                milli += rng.randint(1, 999)
            self.lines.append({"sheet": self.sheet_no, "site": site, "loc": loc, "sku": sku,
                               "uom": uom, "qty_milli": milli, "local_min": local_min,
                               "counter": rng.choice(COUNTERS)})
        return local_min

    def case(self, cutoff):
        return (self.receipts, self.shipments, self.lines, cutoff)


def _texts(case):
    receipts, shipments, lines, cutoff = case
    return (receipts_csv(receipts), shipments_jsonl(shipments), counts_fwf(lines), iso_day(cutoff))


def _small(world, rng, prefix, n_keys=None):
    """A boundary-rich extract: a few (site, sku) around one close, every trap nearby."""
    w = world
    cutoff = day_of(rng.choice(MONTH_ENDS))
    d = Draw(w, rng, prefix)
    sites = [s[0] for s in w.sites]
    near = [g for g in w.groups if any(cutoff - 50 <= k[2] <= cutoff or
                                       (k[3] is not None and cutoff - 50 <= k[3] <= cutoff)
                                       for k in g[2])]
    for _ in range(n_keys or rng.randint(3, 5)):
        site = rng.choice(sites)
        if near and rng.random() < 0.6:
            group = rng.choice(near)
            sku, members = group[1][0], group[1]
        else:
            sku = rng.choice(w.plain)
            members = [sku]
        days = list(range(cutoff - 35, cutoff + 3))
        # ordinary traffic
        for _ in range(rng.randint(2, 5)):
            local = rng.choice(days) * DAY + rng.randint(0, DAY - 1)
            source = "EDI" if rng.random() < 0.45 else "WMS"
            qty = -rng.randint(1, 6) if source == "WMS" and rng.random() < 0.2 else None
            d.receipt(site, rng.choice(members), local=local, source=source, qty=qty)
        for _ in range(rng.randint(2, 5)):
            d.shipment(site, sku, rng.choice(days) * DAY + rng.randint(0, DAY - 1))
        # around the cut-off instant: midnight, the runbook's 06:00, the instance's hour
        for hour in (0, RUNBOOK_DAY_START, 5, 7):
            base = (cutoff + 1) * DAY + hour * 3600 + rng.choice([-1, 1]) * rng.randint(5, 50) * 60
            if rng.random() < 0.5:
                d.shipment(site, sku, base)
            else:
                d.receipt(site, rng.choice(members), local=base,
                          source=rng.choice(["WMS", "EDI"]))
        # around substitution dates, at the edges of the warehouse day
        for old, _new, start, end in (k for k in w.links if k[0] in members):
            for edge in (start, end):
                if edge is None or not cutoff - 40 <= edge <= cutoff:
                    continue
                for hour in (0, 2, 5, 6, 7, 12):
                    local = edge * DAY + hour * 3600 + rng.randint(-40, 40) * 60
                    d.shipment(site, old, local)
        # counts, with movements stamped inside the count minute
        for _ in range(rng.choice([0, 1, 1, 2])):
            minute = (rng.choice(days[:-4]) * DAY + rng.randint(6 * 3600, 20 * 3600)) // 60
            minute = d.count(site, rng.choice(members), minute)
            counted_sku = d.lines[-1]["sku"]
            if rng.random() < 0.5:
                d.receipt(site, counted_sku, local=minute * 60, source="WMS")
            else:
                d.shipment(site, counted_sku, minute * 60 + rng.randint(1, 59))
        if rng.random() < 0.4:  # a count just before the cut-off
            edge = (cutoff + 1) * DAY + rng.choice([0, 5, 6, 7]) * 3600
            minute = edge // 60 - rng.randint(1, 40)
            d.count(site, rng.choice(members), minute)
    return d.case(cutoff)


# Per-rule cases: the switch that turns the rule off must change the expected table.
RULE_CASES = [
    ("rule_pack_chain", {"chain": False}),
    ("rule_vendor_returns", {"rtv": False}),
    ("rule_edi_stamps_utc", {"edi_utc": False}),
    ("rule_shipment_stamps_utc", {"ship_utc": False}),
    ("rule_warehouse_day_change_notice", {"day_start": RUNBOOK_DAY_START}),
    ("rule_warehouse_day_not_midnight", {"day_start": 0}),
    ("rule_substitution_applies", {"subst": "none"}),
    ("rule_substitution_chain", {"subst": "one-hop"}),
    ("rule_substitution_in_force", {"subst": "undated"}),
    ("rule_substitution_business_day", {"subst_day": "utc-date"}),
    ("rule_substitution_end_exclusive", {"vt_exclusive": False}),
    ("rule_substitute_packs", {"subst_pack": "ordered"}),
    ("rule_count_minute_absorbed", {"tie": "after"}),
    ("rule_count_sheet_lines_add_up", {"lines": "last"}),
    ("rule_hold_zone_not_on_hand", {"hold": False}),
    ("rule_part_units_as_legacy", {"part": "flip"}),
    ("rule_count_replaces_book", {"counts": False}),
]


def _switch(params, switch):
    if switch.get("part") == "flip":
        other = "half-up" if part_rule(params) == "truncate" else "truncate"
        return {**switch, "part": other}
    return switch


def _checked(world, tables, params, case, name):
    expected = _fast(world, params, case)
    if _brute(tables, params, _texts(case)) != expected:
        raise AssertionError(f"fast path and brute force disagree on {name}")
    return expected


def _case(name, category, case, expected, visible=False):
    return {"name": name, "kind": "functional", "category": category, "args": list(_texts(case)),
            "expected": expected, "visible": visible}


def _quiet(world, tables, params, rng, prefix):
    """A visible example: WMS receipts, daytime shipments of plain articles in packs that have
    no inner, one single-line count mid-month on an ordinary zone in whole units. No hidden
    rule matters."""
    w = world
    simple = [s for s in w.plain if len(w.kind[s]) <= 2]
    for _ in range(300):
        cutoff = day_of(rng.choice(MONTH_ENDS))
        d = Draw(w, rng, prefix)
        for _k in range(3):
            site, sku = rng.choice([s[0] for s in w.sites]), rng.choice(simple)
            for _ in range(3):
                local = (cutoff - rng.randint(5, 25)) * DAY + rng.randint(9, 16) * 3600
                d.receipt(site, sku, local=local, source="WMS", qty=rng.randint(5, 30))
            for _ in range(2):
                local = (cutoff - rng.randint(1, 20)) * DAY + rng.randint(10, 15) * 3600
                uom = rng.choice(sorted(w.items[sku]))
                d.shipment(site, sku, local, qty=rng.randint(1, 4), uom=uom)
        site, sku = d.receipts[0]["site"], d.receipts[0]["sku"]
        d.count(site, sku, ((cutoff - 3) * DAY + 11 * 3600) // 60, n_lines=1, hold_share=0,
                fractional=0)
        case = d.case(cutoff)
        expected = _checked(w, tables, params, case, "visible")
        texts = _texts(case)
        if all(_brute(tables, params, texts, **_switch(params, sw)) == expected
               for name, sw in RULE_CASES if name != "rule_count_replaces_book"):
            return case, expected
    raise AssertionError("no quiet visible example found")


def _edge_cases(world, tables, params, rng):
    w = world
    sites = [s[0] for s in w.sites]
    out = []
    # nothing at all
    cutoff = day_of(MONTH_ENDS[3])
    out.append(("edge_empty_exports", ([], [], [], cutoff)))
    # everything after the cut-off (and a count in the next warehouse day)
    d = Draw(w, rng, "EA")
    site, sku = rng.choice(sites), rng.choice(w.plain)
    start = (cutoff + 1) * DAY + params["day_start_hour"] * 3600
    d.receipt(site, sku, local=start + 60, source="WMS")
    d.shipment(site, sku, start + 3600)
    d.count(site, sku, start // 60 + 1)
    d.receipt(site, rng.choice(w.plain), local=start - 3600, source="WMS", qty=4, uom="EA")
    out.append(("edge_after_cutoff", d.case(cutoff)))
    # a count sheet whose every line is in the hold zone; a key with nothing but a count
    d = Draw(w, rng, "EB")
    for _ in range(2):
        site, sku = rng.choice(sites), rng.choice(w.plain)
        d.receipt(site, sku, local=(cutoff - 9) * DAY + 40000, source="WMS", qty=12)
        d.count(site, sku, ((cutoff - 4) * DAY + 36000) // 60, n_lines=2, hold_share=1.0)
        for line in d.lines[-2:]:
            line["loc"] = params["hold_zone"] + line["loc"][1:]
    d.count(rng.choice(sites), rng.choice(w.plain), ((cutoff - 2) * DAY + 50000) // 60,
            n_lines=3, hold_share=0)
    out.append(("edge_hold_only_and_count_only", d.case(cutoff)))
    # stock driven negative by shipments; shipments without a unit of measure
    d = Draw(w, rng, "EC")
    site, sku = rng.choice(sites), rng.choice([s for s in w.plain if len(w.kind[s]) >= 3])
    d.receipt(site, sku, local=(cutoff - 20) * DAY + 30000, source="WMS", qty=2, uom="IN")
    for k in range(4):
        d.shipment(site, sku, (cutoff - 10 + k) * DAY + 45000, qty=3, uom=None)
    d.shipment(site, sku, (cutoff - 5) * DAY + 45000, qty=1, uom="CS")
    out.append(("edge_negative_book_and_default_unit", d.case(cutoff)))
    # several counts of one key: the last one before the cut-off reports
    d = Draw(w, rng, "ED")
    site, sku = rng.choice(sites), rng.choice(w.plain)
    for k in range(4):
        d.receipt(site, sku, local=(cutoff - 30 + 7 * k) * DAY + 30000, source="WMS")
        d.count(site, sku, ((cutoff - 27 + 7 * k) * DAY + 30000) // 60)
        d.shipment(site, sku, (cutoff - 26 + 7 * k) * DAY + 30000)
    out.append(("edge_repeated_counts", d.case(cutoff)))
    return out


def _random(world, rng, prefix, n_keys):
    w = world
    cutoff = day_of(rng.choice(MONTH_ENDS))
    d = Draw(w, rng, prefix)
    sites = [s[0] for s in w.sites]
    for _ in range(n_keys):
        site = rng.choice(sites)
        sku = rng.choice(w.heads if rng.random() < 0.3 else w.skus)
        for _ in range(rng.randint(3, 9)):
            local = (cutoff - rng.randint(0, 60)) * DAY + rng.randint(0, DAY - 1)
            if rng.random() < 0.5:
                source = "EDI" if rng.random() < 0.4 else "WMS"
                qty = -rng.randint(1, 5) if source == "WMS" and rng.random() < 0.12 else None
                d.receipt(site, sku, local=local, source=source, qty=qty)
            else:
                d.shipment(site, sku, local)
        if rng.random() < 0.5:
            when = (cutoff - rng.randint(0, 30)) * DAY + rng.randint(0, DAY - 1)
            d.count(site, sku, when // 60)
    return d.case(cutoff)


# ----------------------------------------------------------------------------- performance

PERF_CUTOFF = day_of(dt.date(2025, 6, 30))


def _perf_case(world, perf_rng, n_events):
    """Half a year of traffic at four sites, plus a few days after the close."""
    r, w = perf_rng, world
    d = Draw(w, r, "P")
    sites = [s[0] for s in w.sites]
    keys = [(site, sku) for site in sites for sku in w.skus if r.random() < 0.92]
    n_receipts = n_events * 45 // 100
    for _ in range(n_receipts):
        site, sku = r.choice(keys)
        local = r.randint(0, PERF_CUTOFF + 6) * DAY + r.randint(0, DAY - 1)
        source = "EDI" if r.random() < 0.35 else "WMS"
        qty = -r.randint(1, 5) if source == "WMS" and r.random() < 0.05 else None
        d.receipt(site, sku, local=local, source=source, qty=qty)
    heads = [h for h in w.heads if any(k[0] == h for k in w.links)]
    for _ in range(n_events - n_receipts):
        site, sku = r.choice(keys)
        if r.random() < 0.08:
            sku = r.choice(heads)
        d.shipment(site, sku, r.randint(0, PERF_CUTOFF + 6) * DAY + r.randint(0, DAY - 1))
    for site, sku in keys:
        for _ in range(r.choice([1, 1, 2, 2, 3])):
            minute = (r.randint(10, PERF_CUTOFF + 4) * DAY + r.randint(0, DAY - 1)) // 60
            d.count(site, sku, minute)
    return d.case(PERF_CUTOFF)


_PERF_CACHE = {}


def _performance_data(params, perf_rng):
    key = params["perf_events"]
    if key not in _PERF_CACHE:
        world = World(perf_rng)
        tables = (world.sites_csv(), world.packs_csv(), world.subst_csv())
        case = _perf_case(world, perf_rng, key)
        _PERF_CACHE.clear()
        _PERF_CACHE[key] = (world, tables, case, _texts(case))
    return _PERF_CACHE[key]


def generate(params, names, rng, perf_rng):
    world, tables, perf_case, perf_texts = _performance_data(params, perf_rng)
    cases = []
    example = None
    for index in range(2):
        case, expected = _quiet(world, tables, params, rng, f"V{index + 1}")
        cases.append(_case(f"visible_example_{index + 1}", "example", case, expected, True))
        example = example or (case, expected)
    for name, switch in RULE_CASES:
        switch = _switch(params, switch)
        for attempt in range(200):
            case = _small(world, rng, f"K{attempt % 10}")
            expected = _checked(world, tables, params, case, name)
            if _brute(tables, params, _texts(case), **switch) != expected:
                break
        else:
            raise AssertionError(f"{name}: no extract where the rule matters")
        cases.append(_case(name, "rule", case, expected))
    for name, case in _edge_cases(world, tables, params, rng):
        cases.append(_case(name, "edge", case, _checked(world, tables, params, case, name)))
    for index in range(4):
        case = _random(world, rng, f"X{index}", rng.randint(8, 16))
        name = f"random_close_{index + 1}"
        cases.append(_case(name, "random", case, _checked(world, tables, params, case, name)))
    cases.append({"name": "scale_half_year", "kind": "performance", "category": "scale",
                  "args": list(perf_texts), "expected": _fast(world, params, perf_case)})
    case, expected = example
    texts = _texts(case)
    arg_names = [names["receipts_arg"], names["shipments_arg"], names["counts_arg"],
                 names["cutoff_arg"]]
    return {
        "task_data": {"input": dict(zip(arg_names, texts, strict=True)),
                      "expected_output": expected},
        "cases": cases,
        "files": {"data/sites.csv": tables[0], "data/pack_master.csv": tables[1],
                  "data/substitutions.csv": tables[2]},
    }


ROW_KEYS = {"site", "sku", "on_hand", "last_count_at", "count_variance"}


def compare(expected, actual):
    if not isinstance(actual, list):
        return False, f"returned {type(actual).__name__}, expected a list of rows"
    if len(actual) != len(expected):
        return False, f"returned {len(actual)} rows, expected a different number"
    for index, (want, got) in enumerate(zip(expected, actual, strict=True), start=1):
        if not isinstance(got, dict) or set(got) != ROW_KEYS:
            return False, f"row {index} must be a dict with exactly the keys {sorted(ROW_KEYS)}"
        if (got["site"], got["sku"]) != (want["site"], want["sku"]):
            return False, f"row {index} ({got['site']}, {got['sku']}) is not the expected key"
        for key in ("on_hand", "count_variance"):
            value = got[key]
            if want[key] is None:
                if value is not None:
                    return False, f"row {index} ({got['site']}, {got['sku']}): {key} should be null"
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value != want[key]:
                return False, f"row {index} ({got['site']}, {got['sku']}): {key} differs"
        if got["last_count_at"] != want["last_count_at"]:
            return False, f"row {index} ({got['site']}, {got['sku']}): last_count_at differs"
    return True, "every row matches"
