"""Hidden-test generator for sde-maintenance-scheduler (trusted bank code, plain stdlib).

The change calendar (data/change_calendar.txt) and the performance job file come from
``perf_rng`` only; functional cases from ``rng``. Expected plans come from a day-wise planner and
are cross-checked against a minute-by-minute brute force on every functional case.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import re

EPOCH = _dt.datetime(2027, 1, 1)
FIELD_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
MONTH_NAMES = {n: i + 1 for i, n in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
DAY_NAMES = {n: i for i, n in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
ALIASES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
JOB_KEYS = {"schedule", "class", "priority", "group", "state", "owner", "description",
            "paused_until", "retire_on"}
DEFAULT_KEYS = {"class", "priority", "group", "owner"}
CLASSES = {"standard", "batch", "critical"}
STATES = {"active", "paused", "draining", "retired"}
JOB_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")
DRAINING_PRIORITY = 10


def to_minute(text):
    return int((_dt.datetime.strptime(text, "%Y-%m-%d %H:%M") - EPOCH).total_seconds()) // 60


def to_day(text):
    return (_dt.date.fromisoformat(text) - EPOCH.date()).days


def stamp(minute):
    return (EPOCH + _dt.timedelta(minutes=minute)).strftime("%Y-%m-%d %H:%M")


def _value(token, index):
    low, high = FIELD_RANGES[index]
    if token.isdigit():
        value = int(token)
        return value if low <= value <= high else None
    names = MONTH_NAMES if index == 3 else DAY_NAMES if index == 4 else {}
    return names.get(token.lower())


def parse_field(text, index):
    """(set of values, None) or (None, error code)."""
    low, high = FIELD_RANGES[index]
    values = set()
    for item in text.split(","):
        base, slash, step_text = item.partition("/")
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                return None, "CFG007"
            step = int(step_text)
        else:
            step = 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = _value(a, index), _value(b, index)
            if first is None or last is None:
                return None, "CFG006"
            if first > last:
                return None, "CFG008"
        else:
            first = _value(base, index)
            if first is None:
                return None, "CFG006"
            if slash:
                return None, "CFG007"
            last = first
        values.update(range(first, last + 1, step))
    if index == 4 and 7 in values:
        values.discard(7)
        values.add(0)
    return values, None


def parse_schedule(text):
    """(spec, None) or (None, [codes]). spec = (minutes, hours, doms, months, dows, dom_star, dow_star)."""
    text = text.strip()
    if text.startswith("@"):
        alias = text.lower()
        if alias == "@reboot":
            return None, ["CFG013"]
        if alias not in ALIASES:
            return None, ["CFG005"]
        text = ALIASES[alias]
    fields = text.split()
    if len(fields) != 5:
        return None, ["CFG005"]
    sets, codes = [], []
    for index, field in enumerate(fields):
        values, code = parse_field(field, index)
        if code:
            codes.append(code)
        sets.append(values)
    if codes:
        return None, sorted(set(codes))
    return (*sets, fields[2].startswith("*"), fields[4].startswith("*")), None


def parse_jobs(text):
    """Return (jobs, errors): jobs = list of dicts in file order (valid and not retired),
    errors = list of [owner, code]."""
    errors = []
    sections = []  # [kind, name, {key: value}, dup_keys, bad_lines]
    defaults = {}
    default_dups, default_bad = [], []
    seen_ids = set()
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inner = line[1:-1].strip()
            if inner == "defaults":
                current = ["defaults", "defaults", defaults, default_dups, default_bad]
            elif inner.startswith("job ") or inner == "job":
                job_id = inner[4:].strip()
                if not JOB_ID.match(job_id):
                    errors.append([job_id, "CFG002"])
                    current = None
                elif job_id in seen_ids:
                    errors.append([job_id, "CFG001"])
                    current = None
                else:
                    seen_ids.add(job_id)
                    current = ["job", job_id, {}, [], []]
                    sections.append(current)
            else:
                errors.append([inner, "CFG016"])
                current = None
            current = current if current is not None else ["ignored", None, {}, [], []]
            continue
        if current is None:
            errors.append(["-", "CFG014"])
            continue
        if current[0] == "ignored":
            continue
        for marker in (" #", " ;", "\t#", "\t;"):
            cut = line.find(marker)
            if cut >= 0:
                line = line[:cut].rstrip()
        if "=" not in line:
            current[4].append("CFG014")
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key in current[2]:
            current[3].append(key)
        current[2][key] = value
    # defaults
    base = {"class": "standard", "priority": "5", "group": "", "owner": ""}
    derr = []
    for key, value in defaults.items():
        if key not in DEFAULT_KEYS:
            derr.append("CFG003")
            continue
        if key == "class" and value not in CLASSES:
            derr.append("CFG009")
            continue
        if key == "priority" and not _priority_ok(value):
            derr.append("CFG010")
            continue
        base[key] = value
    if default_dups:
        derr.append("CFG015")
    derr.extend(default_bad)
    jobs = []
    for index, (_kind, job_id, values, dups, bad) in enumerate(sections):
        state = values.get("state", "active")
        if state not in STATES:
            errors.append([job_id, "CFG011"])
            continue
        if state == "retired":
            continue
        codes = list(bad)
        if dups:
            codes.append("CFG015")
        for key in values:
            if key not in JOB_KEYS:
                codes.append("CFG003")
        merged = dict(base)
        merged.update({k: v for k, v in values.items() if k in JOB_KEYS})
        spec = None
        if "schedule" not in values:
            codes.append("CFG004")
        else:
            spec, sched_codes = parse_schedule(values["schedule"])
            codes.extend(sched_codes or [])
        if merged["class"] not in CLASSES:
            codes.append("CFG009")
        if not _priority_ok(merged["priority"]):
            codes.append("CFG010")
        dates = {}
        for key in ("paused_until", "retire_on"):
            if key in values:
                day = _date_ok(values[key])
                if day is None:
                    codes.append("CFG012")
                dates[key] = day
        if codes:
            errors.extend([job_id, c] for c in sorted(set(codes)))
            continue
        jobs.append({
            "id": job_id, "order": index, "spec": spec, "class": merged["class"],
            "priority": int(merged["priority"]), "group": merged["group"], "state": state,
            "paused_until": dates.get("paused_until"), "retire_on": dates.get("retire_on"),
        })
    errors.extend(["defaults", c] for c in sorted(set(derr)))
    return jobs, errors


def _priority_ok(value):
    return value.isdigit() and len(value) == 1 and 1 <= int(value) <= 9


def _date_ok(value):
    if not DATE.match(value):
        return None
    try:
        return to_day(value)
    except ValueError:
        return None


def parse_calendar(text):
    """(holidays: set of day numbers, freezes: list of (from_minute, until_minute))."""
    entries, current = [], None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("- "):
            current = {}
            entries.append(current)
            line = line[2:].strip()
        key, _, value = line.partition(":")
        current[key.strip()] = value.strip()
    holidays, freezes = set(), []
    for entry in entries:
        if entry.get("kind") == "holiday":
            holidays.add(to_day(entry["date"]))
        elif entry.get("kind") == "freeze" and entry.get("status") == "approved":
            freezes.append((to_minute(entry["from"]), to_minute(entry["until"])))
    return holidays, sorted(freezes)


def _weekday(day):
    """cron day of week (0 = Sunday) of a day number (2027-01-01 is a Friday)."""
    return (day + 5) % 7


def _month_dom(day):
    date = EPOCH.date() + _dt.timedelta(days=day)
    return date.month, date.day


def nominal_runs(spec, start, end):
    """Every minute in [start, end) the schedule matches: walk the days, then the hours and
    minutes of a matching day."""
    minutes, hours, doms, months, dows, dom_star, dow_star = spec
    hours_sorted, minutes_sorted = sorted(hours), sorted(minutes)
    out = []
    for day in range(start // 1440, (end - 1) // 1440 + 1):
        month, dom = _month_dom(day)
        if month not in months:
            continue
        in_dom, in_dow = dom in doms, _weekday(day) in dows
        if not ((in_dom and in_dow) if (dom_star or dow_star) else (in_dom or in_dow)):
            continue
        base = day * 1440
        for hour in hours_sorted:
            for minute in minutes_sorted:
                at = base + hour * 60 + minute
                if start <= at < end:
                    out.append(at)
    return out


def next_business_day(day, holidays):
    day += 1
    while _weekday(day) in (0, 6) or day in holidays:
        day += 1
    return day


def lifecycle_allows(job, day):
    retire = job["retire_on"]
    if retire is not None and day >= retire:
        return False
    state = job["state"]
    if state == "active":
        return True
    if state == "paused":
        return job["paused_until"] is not None and day > job["paused_until"]
    if state == "draining":
        return job["class"] == "critical"
    return False


def _stop_minute(job):
    """00:00 of retire_on as a minute, (infinity without one): nothing of the job starts from then."""
    return job["retire_on"] * 1440 if job["retire_on"] is not None else float("inf")


def in_freeze(minute, freezes):
    return any(a <= minute < b for a, b in freezes)


def plan(jobs, holidays, freezes, start, end, slot):
    """jobs from parse_jobs; returns {job id: [minutes]} after every rule."""
    due = {}  # job id -> sorted minutes after lifecycle, holiday move, freeze
    for job in jobs:
        kept = set()
        for at in nominal_runs(job["spec"], start, end):
            day = at // 1440
            if not lifecycle_allows(job, day):
                continue
            if job["class"] == "batch" and day in holidays:
                at = next_business_day(day, holidays) * 1440 + slot
            if job["class"] != "critical" and in_freeze(at, freezes):
                continue
            kept.add(at)
        due[job["id"]] = sorted(kept)
    final = {job["id"]: [] for job in jobs}
    # Retirement is judged at the minute a run would really start (the chart's dashed
    # edges): a moved or held-back run of a retired job does not start, nor take its minute.
    stop = {job["id"]: _stop_minute(job) for job in jobs}
    groups = {}
    for job in jobs:
        if job["group"]:
            groups.setdefault(job["group"], []).append(job)
        else:
            final[job["id"]] = [m for m in due[job["id"]] if m < end and m < stop[job["id"]]]
    for members in groups.values():
        runs = []
        for job in members:
            rank = DRAINING_PRIORITY if job["state"] == "draining" else job["priority"]
            runs.extend((at, rank, job["order"], job["id"]) for at in due[job["id"]])
        runs.sort()
        heap, i, now = [], 0, None
        while i < len(runs) or heap:
            if not heap:
                now = runs[i][0]
            while i < len(runs) and runs[i][0] == now:
                at, rank, order, job_id = runs[i]
                heapq.heappush(heap, (rank, at, order, job_id))
                i += 1
            job_id = None
            while heap:
                candidate = heapq.heappop(heap)[3]
                if now < stop[candidate]:
                    job_id = candidate
                    break
            if job_id is None:
                continue
            if now < end:
                final[job_id].append(now)
            now += 1
    return {job_id: sorted(ms) for job_id, ms in final.items()}


def solve(config_text, calendar_text, window_start, window_end, slot):
    jobs, errors = parse_jobs(config_text)
    holidays, freezes = parse_calendar(calendar_text)
    start, end = to_minute(window_start), to_minute(window_end)
    runs = plan(jobs, holidays, freezes, start, end, slot)
    return {"runs": {k: [stamp(m) for m in v] for k, v in runs.items()}, "errors": errors}


# ---------------------------------------------------------------- brute force (cross-check)

_DAY_FACTS = {}


def brute_matches(spec, minute):
    minutes, hours, doms, months, dows, dom_star, dow_star = spec
    day, rest = divmod(minute, 1440)
    facts = _DAY_FACTS.get(day)
    if facts is None:
        moment = EPOCH + _dt.timedelta(days=day)
        facts = _DAY_FACTS[day] = (moment.month, moment.day, moment.isoweekday() % 7)
    if rest % 60 not in minutes or rest // 60 not in hours or facts[0] not in months:
        return False
    in_dom = facts[1] in doms
    in_dow = facts[2] in dows
    return (in_dom and in_dow) if (dom_star or dow_star) else (in_dom or in_dow)


def brute_plan(jobs, holidays, freezes, start, end, slot):
    """Minute by minute: every job checked every minute; collisions as a per-minute contest."""
    wanted = {}  # minute -> list of (job, due)
    for job in jobs:
        kept = set()
        for at in range(start, end):
            if not brute_matches(job["spec"], at):
                continue
            day = at // 1440
            if not lifecycle_allows(job, day):
                continue
            if job["class"] == "batch" and day in holidays:
                nxt = day + 1
                while (EPOCH.date() + _dt.timedelta(days=nxt)).isoweekday() >= 6 or nxt in holidays:
                    nxt += 1
                at = nxt * 1440 + slot
            if job["class"] != "critical" and any(a <= at < b for a, b in freezes):
                continue
            kept.add(at)
        for at in kept:
            wanted.setdefault(at, []).append(job)
    final = {job["id"]: [] for job in jobs}
    waiting = {}
    horizon = max(list(wanted) + [end]) + 2000
    minute = start
    while minute < horizon:
        for job in wanted.get(minute, []):
            if not job["group"]:
                if minute < end and minute < _stop_minute(job):
                    final[job["id"]].append(minute)
            else:
                waiting.setdefault(job["group"], []).append((job, minute))
        for group, queue in waiting.items():
            queue[:] = [jd for jd in queue if minute < _stop_minute(jd[0])]
            if queue:
                queue.sort(key=lambda jd: (DRAINING_PRIORITY if jd[0]["state"] == "draining"
                                           else jd[0]["priority"], jd[1], jd[0]["order"]))
                job, _due = queue.pop(0)
                if minute < end:
                    final[job["id"]].append(minute)
        minute += 1
    return {job_id: sorted(ms) for job_id, ms in final.items()}


# ---------------------------------------------------------------- the change calendar

FIXED_HOLIDAYS = [
    ("2027-01-01", "New Year's Day"),
    ("2027-03-26", "Good Friday"),
    ("2027-03-29", "Easter Monday"),
    ("2027-05-03", "Early May bank holiday"),
    ("2027-05-31", "Spring bank holiday"),
    ("2027-08-30", "Summer bank holiday"),
    ("2027-12-27", "Christmas Day (substitute)"),
    ("2027-12-28", "Boxing Day (substitute)"),
]


def _date(day):
    return (EPOCH.date() + _dt.timedelta(days=day)).isoformat()


def build_calendar(perf_rng):
    """The CAB export: holidays and freeze windows; returns (text, facts)."""
    company_day = to_day(perf_rng.choice(["2027-02-10", "2027-02-17", "2027-02-24"]))  # a Wednesday
    holidays = [(to_day(d), n) for d, n in FIXED_HOLIDAYS] + [(company_day, "Company founders' day")]
    holidays.sort()
    freezes = []  # (id, status, from minute, until minute, reason)
    # The day after founders' day: the payroll cut-over holds the morning.
    cut_from = (company_day + 1) * 1440
    cut_until = cut_from + perf_rng.choice([8, 9, 10]) * 60
    freezes.append(("payroll cut-over", "approved", cut_from, cut_until))
    # Quarter close: Friday evening to Monday morning in March, before Easter.
    friday = to_day(perf_rng.choice(["2027-03-05", "2027-03-12", "2027-03-19"]))
    q_from = friday * 1440 + perf_rng.choice([17, 18, 19]) * 60
    q_until = (friday + 3) * 1440 + perf_rng.choice([6, 7]) * 60
    freezes.append(("Q1 financial close", "approved", q_from, q_until))
    # A January change freeze that was only proposed, and one in April that was withdrawn.
    jan = to_day("2027-01-11") + perf_rng.randint(0, 7)
    freezes.append(("January release train", "proposed", jan * 1440 + 8 * 60, (jan + 2) * 1440 + 8 * 60))
    apr = to_day("2027-04-12") + perf_rng.randint(0, 3)
    freezes.append(("data-centre power test", "withdrawn", apr * 1440 + 20 * 60, (apr + 1) * 1440 + 4 * 60))
    # Approved windows spread over the rest of the half year (the performance windows).
    for month_start, label in (("2027-01-25", "core network upgrade"), ("2027-04-19", "storage array migration"),
                               ("2027-05-10", "ERP upgrade weekend"), ("2027-05-24", "annual DR exercise")):
        day = to_day(month_start) + perf_rng.randint(0, 4)
        start = day * 1440 + perf_rng.choice([0, 6, 12, 20, 22]) * 60 + perf_rng.choice([0, 30])
        freezes.append((label, "approved", start, start + perf_rng.randint(6, 40) * 60))
    freezes.sort(key=lambda f: f[2])
    lines = [
        "# Change calendar export (CAB tool, scheduling view). All times are UTC.",
        "# Generated nightly; do not edit by hand: raise a change in the CAB tool instead.",
        "",
    ]
    entries = [("holiday", d, n) for d, n in holidays] + [("freeze", f[2] // 1440, f) for f in freezes]
    entries.sort(key=lambda e: (e[1], e[0]))
    number = 0
    for kind, day, item in entries:
        if kind == "holiday":
            lines += ["- kind: holiday", f"  date: {_date(day)}", f"  name: {item}", ""]
        else:
            number += 1
            label, status, start, until = item
            lines += [
                "- kind: freeze",
                f"  id: CHG-FRZ-{27000 + 17 * number}",
                f"  status: {status}",
                f"  from: {stamp(start)}",
                f"  until: {stamp(until)}",
                f"  reason: {label}",
                "",
            ]
    facts = {
        "company_day": company_day,
        "cutover": (cut_from, cut_until),
        "quarter": (q_from, q_until),
        "proposed": (jan * 1440 + 8 * 60, (jan + 2) * 1440 + 8 * 60),
        "withdrawn": (apr * 1440 + 20 * 60, (apr + 1) * 1440 + 4 * 60),
    }
    return "\n".join(lines), facts


# ---------------------------------------------------------------- job files

def job_file(jobs, defaults=None, header=True, defaults_last=False):
    """jobs: list of (id, {key: value}) or raw strings."""
    out = []
    if header:
        out += ["; maintenance jobs (platform operations)", ""]
    block = []
    if defaults:
        block = ["[defaults]"] + [f"{k} = {v}" for k, v in defaults.items()] + [""]
    if block and not defaults_last:
        out += block
    for job in jobs:
        if isinstance(job, str):
            out += [job, ""]
            continue
        job_id, values = job
        out.append(f"[job {job_id}]")
        out += [f"{k} = {v}" for k, v in values.items()]
        out.append("")
    if block and defaults_last:
        out += block
    return "\n".join(out)


WORDS = ["vacuum", "reindex", "rotate-logs", "backup", "compact", "purge-tmp", "refresh-mv",
         "sync-ldap", "renew-certs", "snapshot", "gc-artifacts", "archive-audit", "rebalance",
         "prune-images", "check-replicas", "export-metrics", "trim-queues", "scrub-disks"]
SYSTEMS = ["orders-db", "billing-db", "kafka", "ci-runners", "search", "ledger", "wiki",
           "crm", "warehouse", "edge-proxy", "mail", "vault", "registry", "auth", "payroll"]


def random_schedule(rng, dense=False):
    minute = rng.randint(0, 59)
    hour = rng.randint(0, 23)
    kind = rng.randint(0, 11)
    if kind == 0:
        months = rng.choice(["*/2", "3,5", "jan-jun", "4"])
        return f"{minute} {hour} * {months} {rng.choice(['mon', 'Tue', 'wed', 'THU', 'fri', 'sat', 'sun', '1', '5', '7'])}"
    if kind == 1:
        a, b = sorted(rng.sample(range(1, 29), 2))
        return f"{minute} {hour} {a},{b} * *"
    if kind == 2:
        return f"{minute} {hour} {rng.randint(1, 28)} {rng.choice(['*', '*/2', '3-6'])} {rng.choice(['1', '5', 'mon', 'fri', '0', '6'])}"
    if kind == 3:
        return f"{minute} {hour} */{rng.randint(7, 12)} * {rng.choice(['1', 'wed', '5'])}"
    if kind == 4:
        return rng.choice(["@monthly", "@daily" if dense else "@weekly"])
    if kind == 5:
        lo = rng.randint(0, 20)
        return f"{lo}-{lo + rng.randint(20, 39)}/{rng.randint(13, 25)} {hour} {rng.randint(1, 28)} * *"
    if kind == 6:
        return f"{minute} {hour} {rng.randint(1, 28)}-{rng.randint(28, 31)} {rng.choice(['2-12/2', '*/3', '4'])} *"
    if kind == 7:
        if dense:
            return f"{minute} {rng.randint(0, 5)}-{rng.randint(18, 23)}/{rng.randint(7, 11)} * * {rng.choice(['sun', 'mon-fri', '2-4'])}"
        return f"{minute} {hour} 1-7 * {rng.choice(['1', 'sun', '*/7', '*/7', '*/7'])}"
    if kind == 8:
        return f"{minute} {hour} * {rng.choice(['jan-mar', 'feb,apr', '*/4', '2-12/3', '5'])} {rng.choice(['mon', '6', '0'])}"
    if kind == 9:
        return f"{minute} {hour} {rng.choice(['1', '15', '28', '10-20/5', '*/10', '31'])} * *"
    if kind == 10:
        return f"{minute},{(minute + 30) % 60} {hour} {rng.randint(1, 28)} * *"
    return f"{minute} {hour} {rng.choice(['*/3', '*/5', '2-30/4'])} * *" if dense else f"{minute} {hour} */14 * *"


def random_jobs(rng, count, groups, dense=False, bad_share=0.03, start_day=0, span=90):
    jobs = []
    used = set()
    for index in range(count):
        while True:
            job_id = f"{rng.choice(WORDS)}-{rng.choice(SYSTEMS)}"
            if rng.random() < 0.7:
                job_id += f"-{rng.randint(1, 99)}"
            if job_id not in used:
                used.add(job_id)
                break
        values = {"schedule": random_schedule(rng, dense)}
        roll = rng.random()
        if roll < 0.3:
            values["class"] = "batch"
        elif roll < 0.4:
            values["class"] = "critical"
        elif roll < 0.5:
            values["class"] = "standard"
        if groups and rng.random() < 0.65:
            values["group"] = rng.choice(groups)
        if rng.random() < 0.6:
            values["priority"] = str(rng.randint(1, 9))
        if rng.random() < 0.4:
            values["owner"] = rng.choice(["dba", "sre", "netops", "build", "security"])
        roll = rng.random()
        if roll < 0.06:
            values["state"] = "paused"
            if rng.random() < 0.8:
                values["paused_until"] = _date(start_day + rng.randint(0, span))
        elif roll < 0.10:
            values["state"] = "draining"
        elif roll < 0.13:
            values["state"] = "retired"
            if rng.random() < 0.5:
                values["schedule"] = rng.choice(["61 * * * *", "every day", "@reboot", "0 0 * *"])
        elif roll < 0.17:
            values["retire_on"] = _date(start_day + rng.randint(0, span))
        if rng.random() < bad_share:
            broken = rng.randint(0, 7)
            if broken == 0:
                values["schedule"] = values["schedule"].replace(" ", "  ", 1) + " *"
            elif broken == 1:
                values["schedule"] = "0 25 * * *"
            elif broken == 2:
                values["priority"] = "high"
            elif broken == 3:
                values["class"] = "urgent"
            elif broken == 4:
                values["retry"] = "3"
            elif broken == 5:
                values["schedule"] = "*/0 * * * *"
            elif broken == 6:
                values["retire_on"] = "2027-02-30"
            else:
                values["schedule"] = "0 3 20-10 * *"
        if rng.random() < 0.1:
            values["description"] = rng.choice(["nightly housekeeping", "see runbook RB-12", "owned by on-call"])
        jobs.append((job_id, values))
    return jobs


# ---------------------------------------------------------------- cases

SLOTS = {"05:30": 330, "06:15": 375, "07:00": 420}


def _hm(minute_of_day):
    return f"{minute_of_day // 60:02d}:{minute_of_day % 60:02d}"


def _cron_at(minute, dom_month=True):
    """'M H D Mo *' for an absolute minute."""
    moment = EPOCH + _dt.timedelta(minutes=minute)
    return f"{moment.minute} {moment.hour} {moment.day} {moment.month} *"


def hand_cases(facts, slot, rng):
    cases = {}
    ids = rng.sample(SYSTEMS, 8)
    # dom/dow: both restricted means EITHER; a field starting with * counts as unrestricted.
    cases["rule_day_of_month_or_weekday"] = (job_file([
        (f"reindex-{ids[0]}", {"schedule": "30 4 13 * fri"}),
        (f"snapshot-{ids[1]}", {"schedule": "0 22 1-7 * 1", "owner": "dba"}),
        (f"purge-tmp-{ids[2]}", {"schedule": "5 5 * * 3"}),
    ]), "2027-01-04 00:00", "2027-03-01 00:00")
    cases["rule_star_step_day_field"] = (job_file([
        (f"compact-{ids[3]}", {"schedule": "0 6 */10 * 1"}),
        (f"vacuum-{ids[4]}", {"schedule": "20 1 15 * */2"}),
        (f"rotate-logs-{ids[5]}", {"schedule": "45 2 1,20 * sun"}),
    ]), "2027-01-04 00:00", "2027-03-01 00:00")
    cases["rule_range_steps"] = (job_file([
        (f"export-metrics-{ids[0]}", {"schedule": "10-50/20 3 * * *"}),
        (f"trim-queues-{ids[1]}", {"schedule": "0 9 */2 * *"}),
        (f"gc-artifacts-{ids[2]}", {"schedule": "0 12 1 2-12/3 *"}),
        (f"scrub-disks-{ids[3]}", {"schedule": "15 1-23/6 3-9/3 * *"}),
    ]), "2027-01-04 00:00", "2027-02-01 00:00")
    cases["rule_names_and_sunday"] = (job_file([
        (f"backup-{ids[4]}", {"schedule": "0 8 * jan-MAR Sun"}),
        (f"rebalance-{ids[5]}", {"schedule": "45 23 * * 5-7"}),
        (f"sync-ldap-{ids[6]}", {"schedule": "0 0 * Feb 7"}),
        (f"renew-certs-{ids[7]}", {"schedule": "30 3 * * Mon,wed-FRI"}),
    ]), "2027-01-25 00:00", "2027-02-15 00:00")
    cases["rule_schedule_aliases"] = (job_file([
        (f"backup-{ids[0]}", {"schedule": "@weekly"}),
        (f"archive-audit-{ids[1]}", {"schedule": "@monthly"}),
        (f"check-replicas-{ids[2]}", {"schedule": "@daily", "class": "critical"}),
        (f"warm-cache-{ids[3]}", {"schedule": "@reboot"}),
        (f"rotate-logs-{ids[4]}", {"schedule": "@fortnightly"}),
        (f"snapshot-{ids[5]}", {"schedule": "@Hourly", "group": "dev"}),
    ]), "2027-02-26 00:00", "2027-03-03 00:00")
    cd = facts["company_day"]
    # Holidays: batch runs move to the next business day at the slot; others stay.
    cases["rule_holiday_next_business_day"] = (job_file([
        (f"vacuum-{ids[0]}", {"schedule": "0 2 * * *", "class": "batch"}),
        (f"reindex-{ids[1]}", {"schedule": "0 2 * * *"}),
        (f"backup-{ids[2]}", {"schedule": "40 21 * * 5", "class": "batch", "group": "nightly"}),
        (f"snapshot-{ids[3]}", {"schedule": "0 23 * * *", "class": "critical"}),
    ]), "2027-03-22 00:00", "2027-04-03 00:00")
    cases["rule_holiday_moved_run_merges"] = (job_file([
        (f"export-metrics-{ids[4]}", {"schedule": f"{slot % 60} {slot // 60},13 * * *", "class": "batch"}),
        (f"purge-tmp-{ids[5]}", {"schedule": "0 */8 * * *", "class": "batch"}),
    ]), "2027-03-25 00:00", "2027-04-01 00:00")
    cases["rule_holiday_move_lands_in_freeze"] = (job_file([
        (f"compact-{ids[6]}", {"schedule": "30 3 * * *", "class": "batch"}),
        (f"trim-queues-{ids[7]}", {"schedule": "30 3 * * *", "class": "critical"}),
        (f"gc-artifacts-{ids[0]}", {"schedule": "0 12 * * *"}),
    ]), _date(cd - 2) + " 00:00", _date(cd + 3) + " 00:00")
    # Freezes: [from, until), critical exempt, only approved windows.
    q_from, q_until = facts["quarter"]
    cases["rule_freeze_window_edges"] = (job_file([
        (f"rebalance-{ids[1]}", {"schedule": "0,30 * * * *"}),
        (f"backup-{ids[2]}", {"schedule": "0 */6 * * *", "class": "critical"}),
        (f"sync-ldap-{ids[3]}", {"schedule": "15 9 * * *", "class": "batch"}),
    ]), _date(q_from // 1440 - 1) + " 00:00", _date(q_until // 1440 + 2) + " 00:00")
    p_from, p_until = facts["proposed"]
    w_from, w_until = facts["withdrawn"]
    cases["rule_freeze_status"] = (job_file([
        (f"renew-certs-{ids[4]}", {"schedule": "0 */4 * * *"}),
        (f"scrub-disks-{ids[5]}", {"schedule": "20 22 * * *", "class": "batch"}),
    ]), _date(p_from // 1440) + " 00:00", _date(p_until // 1440 + 1) + " 00:00")
    cases["rule_freeze_status_withdrawn"] = (job_file([
        (f"check-replicas-{ids[6]}", {"schedule": "0 * * * *"}),
    ]), _date(w_from // 1440) + " 12:00", _date(w_until // 1440) + " 12:00")
    # Collisions.
    cases["rule_collision_priority"] = (job_file([
        (f"vacuum-{ids[0]}", {"schedule": "0 3 * * *", "group": "pg-main", "priority": "6"}),
        (f"reindex-{ids[1]}", {"schedule": "0 3 * * *", "group": "pg-main", "priority": "2"}),
        (f"backup-{ids[2]}", {"schedule": "0,1 3 * * *", "group": "pg-main", "priority": "4"}),
        (f"snapshot-{ids[3]}", {"schedule": "0 3 * * *", "group": "pg-replica", "priority": "9"}),
    ]), "2027-02-01 00:00", "2027-02-04 00:00")
    cases["rule_collision_tie_file_order"] = (job_file([
        (f"zz-purge-{ids[4]}", {"schedule": "10 4 * * *", "group": "ci"}),
        (f"mm-rotate-{ids[5]}", {"schedule": "10 4 * * *", "group": "ci"}),
        (f"aa-prune-{ids[6]}", {"schedule": "10 4 * * *", "group": "ci", "priority": "5"}),
    ]), "2027-02-08 00:00", "2027-02-10 00:00")
    cases["rule_collision_waiting_run_first"] = (job_file([
        (f"aa-compact-{ids[7]}", {"schedule": "1 5 * * *", "group": "kafka", "priority": "5"}),
        (f"mm-trim-{ids[0]}", {"schedule": "0 5 * * *", "group": "kafka", "priority": "3"}),
        (f"zz-rebalance-{ids[1]}", {"schedule": "0 5 * * *", "group": "kafka", "priority": "5"}),
    ]), "2027-02-08 00:00", "2027-02-10 00:00")
    cases["rule_collision_needs_a_group"] = (job_file([
        (f"gc-artifacts-{ids[2]}", {"schedule": "0 6 * * *"}),
        (f"prune-images-{ids[3]}", {"schedule": "0 6 * * *", "priority": "1"}),
        (f"export-metrics-{ids[4]}", {"schedule": "0 6 * * *", "group": "obs"}),
        (f"trim-queues-{ids[5]}", {"schedule": "0 6 * * *", "group": "obs", "priority": "1"}),
    ], defaults={"priority": "4"}), "2027-02-08 00:00", "2027-02-10 00:00")
    cases["rule_pushed_run_not_rechecked"] = (job_file([
        (f"backup-{ids[6]}", {"schedule": _cron_at(q_from - 1), "group": "san", "priority": "2"}),
        (f"snapshot-{ids[7]}", {"schedule": _cron_at(q_from - 1), "group": "san", "priority": "7"}),
        (f"vacuum-{ids[0]}", {"schedule": _cron_at(q_from - 1), "group": "san", "priority": "8", "class": "critical"}),
    ]), _date(q_from // 1440) + " 00:00", _date(q_from // 1440 + 1) + " 00:00")
    # Lifecycle (the state chart).
    cases["rule_paused_until_inclusive"] = (job_file([
        (f"rotate-logs-{ids[1]}", {"schedule": "0 1 * * *", "state": "paused", "paused_until": "2027-02-17"}),
        (f"reindex-{ids[2]}", {"schedule": "0 1 * * *", "state": "paused"}),
        (f"compact-{ids[3]}", {"schedule": "0 1 * * *", "paused_until": "2027-02-17"}),
        (f"scrub-disks-{ids[4]}", {"schedule": "0 1 * * *", "state": "paused", "paused_until": "2027-01-31"}),
    ]), "2027-02-14 00:00", "2027-02-21 00:00")
    cases["rule_draining_jobs"] = (job_file([
        (f"sync-ldap-{ids[5]}", {"schedule": "0 4 * * *", "state": "draining"}),
        (f"renew-certs-{ids[6]}", {"schedule": "0 4 * * *", "state": "draining", "class": "critical", "group": "auth", "priority": "1"}),
        (f"check-replicas-{ids[7]}", {"schedule": "0 4 * * *", "group": "auth", "priority": "9"}),
        (f"archive-audit-{ids[0]}", {"schedule": "0 4 * * *", "state": "draining", "class": "batch"}),
    ]), "2027-02-01 00:00", "2027-02-04 00:00")
    cases["rule_retire_on_and_retired"] = (job_file([
        (f"backup-{ids[1]}", {"schedule": "0 2 * * *", "retire_on": "2027-02-03"}),
        (f"purge-tmp-{ids[2]}", {"schedule": "every night at two", "state": "retired", "owner": "legacy"}),
        (f"vacuum-{ids[3]}", {"schedule": "0 2 * * *", "state": "retired", "retry": "5"}),
        (f"snapshot-{ids[4]}", {"schedule": "0 2 * * *", "state": "paused", "paused_until": "2027-02-01", "retire_on": "2027-02-04"}),
        (f"compact-{ids[5]}", {"schedule": "0 2 * * *", "state": "sleeping"}),
    ]), "2027-02-01 00:00", "2027-02-06 00:00")
    # 2.0: the chart's legend. Dashed retire_on edges are judged at the real start minute (after
    # the holiday move and the resource group); the solid paused_until edge at the scheduled time.
    slot_cron = f"{slot % 60} {slot // 60} * * *"
    cases["rule_retire_on_moved_run"] = (job_file([
        (f"archive-audit-{ids[6]}", {"schedule": "0 2 * * *", "class": "batch", "retire_on": "2027-03-30"}),
        (f"vacuum-{ids[7]}", {"schedule": "0 2 * * *", "class": "batch", "retire_on": "2027-03-31"}),
        (f"rotate-logs-{ids[0]}", {"schedule": "0 2 * * *", "retire_on": "2027-03-30"}),
    ]), "2027-03-24 00:00", "2027-04-02 00:00")
    cases["rule_retire_on_held_run"] = (job_file([
        (f"backup-{ids[1]}", {"schedule": "59 23 * * *", "group": "pg-main", "priority": "1"}),
        (f"reindex-{ids[2]}", {"schedule": "59 23 * * *", "group": "pg-main", "priority": "5", "retire_on": "2027-02-10"}),
        (f"export-metrics-{ids[3]}", {"schedule": "59 23 * * *", "group": "pg-main", "priority": "9"}),
    ]), "2027-02-08 00:00", "2027-02-12 00:00")
    cases["rule_paused_judged_at_schedule"] = (job_file([
        (f"compact-{ids[4]}", {"schedule": "0 2 * * *", "class": "batch", "state": "paused", "paused_until": "2027-03-29"}),
        (f"scrub-disks-{ids[5]}", {"schedule": "0 2 * * *", "class": "batch", "state": "paused", "paused_until": "2027-03-25"}),
    ]), "2027-03-24 00:00", "2027-04-01 00:00")
    cases["rule_easter_moves_collide"] = (job_file([
        (f"snapshot-{ids[6]}", {"schedule": "0 4 26 3 *", "class": "batch", "group": "san", "retire_on": "2027-03-30"}),
        (f"reindex-{ids[7]}", {"schedule": "15 3 * * *", "class": "batch", "group": "san", "state": "paused", "paused_until": "2027-03-29"}),
        (f"compact-{ids[0]}", {"schedule": "30 23 29 3 *", "class": "batch", "group": "san"}),
        (f"scrub-disks-{ids[1]}", {"schedule": "0 2 26,29 3 *", "class": "batch", "group": "san"}),
        (f"backup-{ids[2]}", {"schedule": slot_cron, "group": "san", "priority": "2"}),
    ]), "2027-03-25 00:00", "2027-04-01 00:00")
    # 2.0: the production job file has two [defaults] blocks and validates cleanly: both apply.
    cases["rule_defaults_two_blocks"] = ("\n".join([
        "; maintenance jobs (platform operations)",
        "",
        "[defaults]",
        "class = batch",
        "priority = 6",
        "",
        f"[job vacuum-{ids[3]}]",
        "schedule = 0 2 * * *",
        "",
        f"[job reindex-{ids[4]}]",
        "schedule = 0 2 * * *",
        "priority = 3",
        "",
        f"[job backup-{ids[5]}]",
        "schedule = 0 2 * * *",
        "group =",
        "class = standard",
        "",
        "; defaults for the database team, added later (the block above still applies)",
        "[defaults]",
        "group = db",
        "owner = dba",
        "",
        f"[job trim-queues-{ids[6]}]",
        "schedule = 0 2 * * 1-5",
        "priority = 1",
        "",
    ]), "2027-02-01 00:00", "2027-02-04 00:00")
    # Validation codes.
    cases["rule_validation_codes"] = ("\n".join([
        "; jobs under review",
        "owner = nobody",
        "[job Backup-Main]",
        "schedule = 0 1 * * *",
        "",
        f"[job ok-{ids[0]}]",
        "schedule = 0 3 * * *",
        "",
        f"[job ok-{ids[0]}]",
        "schedule = 0 4 * * *",
        "",
        f"[job fields-{ids[1]}]",
        "schedule = 0 3 * *",
        "",
        f"[job range-{ids[2]}]",
        "schedule = 0 3 * 13 *",
        "",
        f"[job step-{ids[3]}]",
        "schedule = 5/10 3 * * *",
        "",
        f"[job reversed-{ids[4]}]",
        "schedule = 0 3 * * fri-mon",
        "",
        f"[job key-{ids[5]}]",
        "schedule = 0 3 * * *",
        "timeout = 30m",
        "",
        f"[job noschedule-{ids[6]}]",
        "class = batch",
        "",
        f"[job prio-{ids[7]}]",
        "schedule = 0 3 * * *",
        "priority = 10",
        "",
        f"[job date-{ids[0]}]",
        "schedule = 0 3 * * *",
        "retire_on = 2027-13-01",
        "",
        f"[job twice-{ids[1]}]",
        "schedule = 0 3 * * *",
        "schedule = 0 4 * * *",
        "",
        f"[job garbage-{ids[2]}]",
        "schedule = 0 3 * * *",
        "this line is not a setting",
        "",
        f"[task cleanup-{ids[3]}]",
        "schedule = 0 3 * * *",
        "",
        f"[job names-{ids[4]}]",
        "schedule = 0 3 * mon *",
        "",
        f"[job fine-{ids[5]}]",
        "schedule = 0 3 * * *   # nightly, after the backups",
        "",
    ]), "2027-02-01 00:00", "2027-02-03 00:00")
    cases["rule_defaults_section"] = (job_file([
        (f"vacuum-{ids[6]}", {"schedule": "0 2 * * *"}),
        (f"reindex-{ids[7]}", {"schedule": "0 2 * * *", "priority": "3"}),
        (f"backup-{ids[0]}", {"schedule": "0 2 * * *", "group": "", "class": "standard"}),
    ], defaults={"group": "db", "class": "batch", "priority": "6", "retries": "2"}, defaults_last=True),
        _date(cd - 1) + " 00:00", _date(cd + 2) + " 00:00")
    cases["edge_window_ends"] = (job_file([
        (f"export-metrics-{ids[1]}", {"schedule": "0 20 * * *", "class": "batch"}),
        (f"gc-artifacts-{ids[2]}", {"schedule": "59 23 * * *", "group": "ci"}),
        (f"prune-images-{ids[3]}", {"schedule": "59 23 * * *", "group": "ci", "priority": "1"}),
    ]), "2027-03-24 12:00", "2027-03-27 00:00")
    cases["edge_empty_file"] = ("; nothing scheduled yet\n", "2027-02-01 00:00", "2027-02-08 00:00")
    return cases


def visible_cases(rng):
    a, b = rng.sample(SYSTEMS, 2)
    return {
        "visible_ordinary_week": (job_file([
            (f"vacuum-{a}", {"schedule": "15 3 * * *", "class": "batch", "group": "pg-main", "priority": "3"}),
            (f"rotate-logs-{b}", {"schedule": "*/30 2 * * 1-5", "owner": "sre"}),
            (f"backup-{a}", {"schedule": "0 4 1,8 * *", "group": "pg-main"}),
        ]), "2027-02-01 00:00", "2027-02-08 00:00"),
        "visible_validation": (job_file([
            (f"reindex-{a}", {"schedule": "30 1 * * 2"}),
            (f"snapshot-{b}", {"class": "batch"}),
            (f"compact-{b}", {"schedule": "0 5 * * *", "class": "nightly"}),
        ]), "2027-02-01 00:00", "2027-02-15 00:00"),
    }


def random_case(rng, index):
    start_day = to_day("2027-01-04") + rng.randint(0, 150)
    span = rng.randint(4, 12)
    groups = ["g-" + w for w in rng.sample(SYSTEMS, 3)]
    jobs = random_jobs(rng, rng.randint(6, 12), groups, dense=True, bad_share=0.15,
                       start_day=start_day - 2, span=span + 4)
    return (job_file(jobs, defaults={"priority": str(rng.randint(3, 7))} if index % 2 else None),
            _date(start_day) + " 00:00", _date(start_day + span) + " 00:00")


def _check(config, calendar, start, end, slot, name, brute=True):
    result = solve(config, calendar, start, end, slot)
    if brute:
        jobs, _errors = parse_jobs(config)
        holidays, freezes = parse_calendar(calendar)
        slow = brute_plan(jobs, holidays, freezes, to_minute(start), to_minute(end), slot)
        if {k: [stamp(m) for m in v] for k, v in slow.items()} != result["runs"]:
            raise AssertionError(f"planner and brute force disagree on {name}")
    return result


def generate(params, names, rng, perf_rng):
    slot = SLOTS[params["batch_slot"]]
    calendar, facts = build_calendar(perf_rng)
    perf_start = to_day("2027-03-01")
    perf_jobs = random_jobs(perf_rng, params["perf_jobs"], [f"rg-{perf_rng.choice(SYSTEMS)}-{i}" for i in range(120)],
                            start_day=perf_start, span=params["perf_days"])
    perf_config = job_file(perf_jobs, defaults={"priority": "5", "class": "standard"})
    perf_window = (_date(perf_start) + " 00:00", _date(perf_start + params["perf_days"]) + " 00:00")
    out = []
    for name, (config, start, end) in visible_cases(rng).items():
        out.append((name, "example", config, start, end, True))
    for name, (config, start, end) in hand_cases(facts, slot, rng).items():
        out.append((name, "rule" if name.startswith("rule") else "edge", config, start, end, False))
    for index in range(4):
        config, start, end = random_case(rng, index)
        out.append((f"random_small_{index + 1}", "random", config, start, end, False))
    cases = []
    for name, category, config, start, end, shown in out:
        expected = _check(config, calendar, start, end, slot, name)
        cases.append({"name": name, "kind": "functional", "category": category,
                      "args": [config, start, end], "kwargs": {}, "expected": expected, "visible": shown})
    cases.append({"name": "scale_quarter_plan", "kind": "performance", "category": "scale",
                  "args": [perf_config, *perf_window], "kwargs": {},
                  "expected": solve(perf_config, calendar, *perf_window, slot)})
    example_config, ex_start, ex_end = cases[0]["args"]
    return {
        "task_data": {
            "input": {names["config_arg"]: example_config, "window_start": ex_start, "window_end": ex_end},
            "expected_output": cases[0]["expected"],
        },
        "files": {"data/change_calendar.txt": calendar + "\n"},
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, dict) or set(actual) != {"runs", "errors"}:
        return False, "the result must be a dict with exactly the keys 'runs' and 'errors'"
    runs, errors = actual["runs"], actual["errors"]
    if not isinstance(runs, dict) or not all(isinstance(v, list) for v in runs.values()):
        return False, "'runs' must map job ids to lists of 'YYYY-MM-DD HH:MM' strings"
    if not isinstance(errors, list) or not all(isinstance(e, list) and len(e) == 2 for e in errors):
        return False, "'errors' must be a list of [job id, code] pairs"
    want = {k: v for k, v in expected["runs"].items() if v}
    got = {k: v for k, v in runs.items() if v}
    wrong = sorted(set(want) | set(got))
    differing = [k for k in wrong if want.get(k) != got.get(k)]
    want_errors = {tuple(e) for e in expected["errors"]}
    got_errors = {tuple(e) for e in errors}
    problems = []
    if differing:
        problems.append(f"{len(differing)} job(s) have a different list of run times")
    if want_errors != got_errors:
        missing, extra = len(want_errors - got_errors), len(got_errors - want_errors)
        problems.append(f"validation errors differ ({missing} missing, {extra} unexpected)")
    if problems:
        return False, "; ".join(problems)
    return True, "plan matches"
