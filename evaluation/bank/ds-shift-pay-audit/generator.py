"""Hidden-test generator for ds-shift-pay-audit (trusted bank code, plain stdlib).

Every data file (roster, payroll calendar, the export batches of every case) comes from
``perf_rng`` (seeded by the [performance] parameters only), so instances that agree on them share
one calibration; the pay rules (overtime threshold, night premium) are per-seed parameters and only
change the expected values. Expected pay comes from an interval computation; every functional case
is cross-checked against a minute-by-minute brute force.
"""

from __future__ import annotations

import datetime as _dt
import json

EPOCH = _dt.datetime(2027, 1, 1)  # local plant time; minutes are counted from here
EPOCH_UTC_S = int((EPOCH - _dt.datetime(1970, 1, 1)).total_seconds())
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
CW_KIND = {"K": "in", "G": "out", "PB": "break_start", "PE": "break_end"}
TEMPO_KIND = {"clock_in": "in", "clock_out": "out", "break_start": "break_start", "break_end": "break_end"}
CW_CODE = {v: k for k, v in CW_KIND.items()}
TEMPO_CODE = {v: k for k, v in TEMPO_KIND.items()}
ORDER = {"in": 0, "break_start": 1, "break_end": 2, "out": 3}
DOUBLE_TAP = 3  # minutes
AUTO_BREAK, AUTO_AFTER = 30, 360
WEEKS = 14  # the payroll calendar covers 14 pay weeks
DAYS = 7 * WEEKS


_DAY_TEXT = {}


def _stamp(minute):
    day, rest = divmod(minute, 1440)
    text = _DAY_TEXT.get(day)
    if text is None:
        text = _DAY_TEXT[day] = (EPOCH + _dt.timedelta(days=day)).strftime("%d.%m.%Y")
    return f"{text} {rest // 60:02d}:{rest % 60:02d}"


_DAY_OF = {}


def _local_minute(stamp):
    """'DD.MM.YYYY HH:MM' -> minutes from EPOCH."""
    key = stamp[:10]
    day = _DAY_OF.get(key)
    if day is None:
        day = _DAY_OF[key] = (_dt.date(int(stamp[6:10]), int(stamp[3:5]), int(stamp[0:2])) - EPOCH.date()).days
    return day * 1440 + int(stamp[11:13]) * 60 + int(stamp[14:16])


def _date(day):
    return (EPOCH.date() + _dt.timedelta(days=day)).isoformat()


# ---------------------------------------------------------------- ground truth

def round_punch(minute):
    """The 7-minute rule: to the nearest quarter hour, 7 minutes past or less down, 8 or more up."""
    rest = minute % 15
    return minute - rest if rest <= 7 else minute + 15 - rest


def night_overlap(a, b):
    """Minutes of [a, b) between 22:00 and 06:00 (local)."""
    if b <= a:
        return 0
    total = 0
    day = a // 1440 - 1
    while day * 1440 + 22 * 60 < b:
        lo, hi = day * 1440 + 22 * 60, day * 1440 + 30 * 60
        total += max(0, min(b, hi) - max(a, lo))
        day += 1
    return total


def punches_of(batch, roster, offset_h):
    """[(employee, raw local minute, kind)] from both exports."""
    badge_to, tempo_to = roster["badges"], roster["tempo"]
    out = []
    for line in batch["clockwise"].splitlines()[1:]:
        if not line.strip():
            continue
        badge, stamp, event = [p.strip() for p in line.split(";")]
        employee = badge_to.get(badge.zfill(7))
        if employee is None or event not in CW_KIND:
            continue
        out.append((employee, _local_minute(stamp), CW_KIND[event]))
    for line in batch["tempo"].splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        employee = tempo_to.get(record["worker"])
        if employee is None or record["kind"] not in TEMPO_KIND:
            continue
        local_s = record["at"] - EPOCH_UTC_S + offset_h * 3600
        out.append((employee, local_s // 60, TEMPO_KIND[record["kind"]]))
    return out


def shifts_of(punches):
    """{employee: [(in raw, in rounded, out rounded, [(break start, end) rounded])]}."""
    by_emp = {}
    for employee, minute, kind in punches:
        by_emp.setdefault(employee, []).append((minute, ORDER[kind], kind))
    result = {}
    for employee, items in by_emp.items():
        items.sort()
        last_of_kind = {}
        kept = []
        for minute, _o, kind in items:
            previous = last_of_kind.get(kind)
            last_of_kind[kind] = minute
            if previous is not None and minute - previous < DOUBLE_TAP:
                continue
            kept.append((minute, kind))
        shifts, open_in, breaks, brk = [], None, [], None
        for minute, kind in kept:
            if kind == "in":
                open_in, breaks, brk = minute, [], None
            elif kind == "break_start" and open_in is not None:
                brk = minute
            elif kind == "break_end" and open_in is not None and brk is not None:
                breaks.append((round_punch(brk), round_punch(minute)))
                brk = None
            elif kind == "out" and open_in is not None:
                shifts.append((open_in, round_punch(open_in), round_punch(minute), breaks))
                open_in, breaks, brk = None, [], None
        result[employee] = shifts
    return result


def rate_on(rates, day):
    best = None
    for valid_from, cents in rates:
        if valid_from <= day:
            best = cents
    return best


def gross(batch, roster, calendar_start, offset_h, threshold_h, night_pct, events=None):
    weeks = {}  # (employee, week index) -> [hundredths]
    events = punches_of(batch, roster, offset_h) if events is None else events
    for employee, shifts in shifts_of(events).items():
        worked_in_week = {}
        for raw_in, rin, rout, breaks in shifts:
            if rout <= rin:
                continue
            day = raw_in // 1440
            week = (day - calendar_start) // 7
            rate = rate_on(roster["rates"][employee], day)
            if rate is None or not 0 <= week < WEEKS:
                continue
            length = rout - rin
            punched = sum(max(0, e - s) for s, e in breaks)
            deduct = punched if breaks else (AUTO_BREAK if length > AUTO_AFTER else 0)
            worked = max(0, length - deduct)
            night = night_overlap(rin, rout) - sum(night_overlap(s, e) for s, e in breaks)
            before = worked_in_week.get(week, 0)
            worked_in_week[week] = before + worked
            overtime = max(0, before + worked - max(before, threshold_h * 60))
            key = (employee, week)
            weeks[key] = weeks.get(key, 0) + worked * rate * 100 + overtime * rate * 50 + max(0, night) * rate * night_pct
    rows = []
    for (employee, week), hundredths in sorted(weeks.items()):
        rows.append({"employee_id": employee, "week_start": _date(calendar_start + 7 * week),
                     "gross_cents": (hundredths + 3000) // 6000})
    return rows


def brute_gross(batch, roster, calendar_start, offset_h, threshold_h, night_pct):
    """Minute by minute: every paid minute of every shift priced on its own."""
    weeks = {}
    for employee, shifts in shifts_of(punches_of(batch, roster, offset_h)).items():
        counted = {}
        for raw_in, rin, rout, breaks in sorted(shifts, key=lambda s: s[1]):
            if rout <= rin:
                continue
            day = raw_in // 1440
            week = (day - calendar_start) // 7
            rate = rate_on(roster["rates"][employee], day)
            if rate is None or not 0 <= week < WEEKS:
                continue
            in_break = set()
            for s, e in breaks:
                in_break.update(range(s, e))
            minutes = [m for m in range(rin, rout) if m not in in_break]
            auto = 0 if breaks else (AUTO_BREAK if rout - rin > AUTO_AFTER else 0)
            total = 0
            for index, m in enumerate(minutes):
                night = (m % 1440) >= 22 * 60 or (m % 1440) < 6 * 60
                if night:
                    total += rate * night_pct
                if index >= len(minutes) - auto:
                    continue  # the automatic break is taken off the end of the shift's paid time
                done = counted.get((employee, week), 0)
                counted[(employee, week)] = done + 1
                total += rate * 100 + (rate * 50 if done >= threshold_h * 60 else 0)
            if breaks:
                total -= 0
            weeks[(employee, week)] = weeks.get((employee, week), 0) + total
    return [{"employee_id": e, "week_start": _date(calendar_start + 7 * w), "gross_cents": (h + 3000) // 6000}
            for (e, w), h in sorted(weeks.items())]


# ---------------------------------------------------------------- data

def build_roster(perf_rng, count):
    """Employees with both vendors' ids; ~25 % get a rate change inside the calendar."""
    used_badges, used_tempo = set(), set()
    rows, roster = [], {"badges": {}, "tempo": {}, "rates": {}}
    grades = {"A1": (1650, 1900), "A2": (1900, 2250), "B1": (2250, 2700), "B2": (2700, 3100), "C1": (3100, 3500)}
    for index in range(count):
        employee = f"E{10000 + 7 * index + perf_rng.randint(0, 6)}"
        while True:
            badge = f"{perf_rng.randint(1, 99999):07d}"
            if badge not in used_badges:
                used_badges.add(badge)
                break
        while True:
            tempo = f"TMP-{perf_rng.randint(1, 99999):05d}"
            if tempo not in used_tempo:
                used_tempo.add(tempo)
                break
        grade = perf_rng.choice(sorted(grades))
        low, high = grades[grade]
        rate = perf_rng.randint(low, high)
        rates = [(-400, rate)]
        if index < 12 or perf_rng.random() < 0.25:
            rates.append((perf_rng.randint(10, DAYS - 10), rate + perf_rng.randint(40, 260)))
        roster["badges"][badge] = employee
        roster["tempo"][tempo] = employee
        roster["rates"][employee] = rates
        for valid_from, cents in rates:
            rows.append((employee, badge, tempo, grade, cents, _date(valid_from)))
    perf_rng.shuffle(rows)
    text = "employee_id,clockwise_badge,tempo_id,grade,hourly_rate_cents,valid_from\n" + "".join(
        f"{e},{b},{t},{g},{c},{v}\n" for e, b, t, g, c, v in rows)
    return text, roster


def build_calendar(perf_rng):
    weekday = perf_rng.choice([6, 2, 5])  # Sunday, Wednesday or Saturday (Python weekday)
    start = next(d for d in range(0, 7) if (EPOCH.date() + _dt.timedelta(days=d)).weekday() == weekday)
    lines = ["pay_week,starts_on,ends_on,pay_date"]
    for week in range(DAYS // 7):
        first = start + 7 * week
        lines.append(f"2027-PW{week + 1:02d},{_date(first)},{_date(first + 6)},{_date(first + 11)}")
    return "\n".join(lines) + "\n", start


class Batch:
    """Punches of one export batch, written in both vendors' formats."""

    def __init__(self, rng, roster, offset_h):
        self.rng, self.offset_h = rng, offset_h
        self.by_emp_badge = {e: b for b, e in roster["badges"].items()}
        self.by_emp_tempo = {e: t for t, e in roster["tempo"].items()}
        self.cw, self.tempo = [], []
        self.events = []  # (employee, local minute, kind) of the punches a roster id maps
        self.kinds_at = {}  # employee -> {local minute: kinds punched in it}
        self.known_badges = set(roster["badges"]) | set(roster["tempo"])

    def punch(self, employee, minute, kind, vendor=None, seconds=None, badge=None):
        rnd = self.rng.random
        vendor = vendor or ("cw" if rnd() < 0.5 else "tempo")
        if badge is None or badge.zfill(7) in self.known_badges or badge in self.known_badges:
            # The exports order nothing within a minute and the notes give no order for two
            # kinds of punch in one minute (a clock-out and the next clock-in of a double
            # shift): such a punch goes to the next free minute, so no hidden case depends on it.
            taken = self.kinds_at.setdefault(employee, {})
            while taken.get(minute, {kind}) != {kind}:
                minute += 1
            taken.setdefault(minute, set()).add(kind)
            self.events.append((employee, minute, kind))
        if vendor == "cw":
            code = CW_CODE[kind]
            shown = badge or self.by_emp_badge[employee]
            if badge is None and rnd() < 0.5:
                shown = shown.lstrip("0") or "0"
            self.cw.append((minute, f"{shown};{_stamp(minute)};{code}"))
        else:
            code = TEMPO_CODE[kind]
            sec = int(rnd() * 60) if seconds is None else seconds
            at = EPOCH_UTC_S + minute * 60 + sec - self.offset_h * 3600
            worker = badge or self.by_emp_tempo[employee]
            self.tempo.append((minute, f'{{"worker": "{worker}", "at": {at}, "kind": "{code}", "terminal": "T{minute % 37 + 1:02d}"}}'))

    def shift(self, employee, start, end, breaks=(), vendor=None):
        self.punch(employee, start, "in", vendor)
        for s, e in breaks:
            self.punch(employee, s, "break_start", vendor)
            self.punch(employee, e, "break_end", vendor)
        self.punch(employee, end, "out", vendor)

    def files(self):
        cw = sorted(self.cw, key=lambda x: x[0])
        tempo = sorted(self.tempo, key=lambda x: x[0])
        return {"clockwise": "badge;stamp;event\n" + "".join(line + "\n" for _m, line in cw),
                "tempo": "".join(line + "\n" for _m, line in tempo), "events": list(self.events)}


LENGTHS = [360, 420, 480, 510, 540, 600]
BREAKS = [15, 30, 30, 45]


def random_week_shifts(batch, rng, employee, first_day, weeks, noise=True):
    rnd = rng.random
    for day in range(first_day, first_day + 7 * weeks):
        if rnd() < 0.3:
            continue
        kind = rnd()
        base = day * 1440 + (6 * 60 if kind < 0.45 else 14 * 60 if kind < 0.8 else 22 * 60)
        start = base + int(rnd() * 25) - 12
        length = LENGTHS[int(rnd() * 6)] + int(rnd() * 25) - 12
        end = start + length
        breaks = []
        if rnd() < 0.7:
            s = start + length // 2 + int(rnd() * 61) - 30
            breaks.append((s, s + BREAKS[int(rnd() * 4)] + int(rnd() * 11) - 5))
        batch.shift(employee, start, end, breaks)
        if noise:
            roll = rnd()
            if roll < 0.03:
                batch.punch(employee, start + int(rnd() * 3), "in")  # double tap
            elif roll < 0.04:
                batch.punch(employee, end + 60, "out")  # stray clock-out


def visible_batches(perf_rng, roster, offset_h, start, employees):
    out = {}
    b = Batch(perf_rng, roster, offset_h)
    for employee in employees[:3]:
        for day in range(start + 14, start + 19):
            s = day * 1440 + 7 * 60 + perf_rng.choice([0, 2, 5, 58 - 60])
            badge = b.by_emp_badge[employee]
            b.punch(employee, s, "in", "cw", badge=badge)
            b.punch(employee, s + 240, "break_start", "cw", badge=badge)
            b.punch(employee, s + 270, "break_end", "cw", badge=badge)
            b.punch(employee, s + 450, "out", "cw", badge=badge)
    out["visible_day_shifts"] = b.files()
    b = Batch(perf_rng, roster, offset_h)
    for employee in employees[3:5]:
        for day in range(start + 21, start + 24):
            s = day * 1440 + 8 * 60 + perf_rng.choice([0, 3, 6])
            b.punch(employee, s, "in", "tempo")
            b.punch(employee, s + 300, "out", "cw", badge=b.by_emp_badge[employee])
    out["visible_two_vendors"] = b.files()
    return out


def hand_batches(perf_rng, roster, offset_h, start):
    """Small batches aimed at one rule each (employees from the fixed part of the roster)."""
    fixed = sorted(roster["rates"])  # deterministic order
    changing = [e for e in fixed if len(roster["rates"][e]) > 1]
    steady = [e for e in fixed if len(roster["rates"][e]) == 1]
    w = start + 7 * 4  # a pay week's first day, inside the calendar
    out = {}

    def batch():
        return Batch(perf_rng, roster, offset_h)

    b = batch()
    b.shift(steady[0], w * 1440 + 6 * 60 + 7, w * 1440 + 14 * 60 + 8, [(w * 1440 + 10 * 60 + 7, w * 1440 + 10 * 60 + 38)], vendor="cw")
    b.shift(steady[1], (w + 1) * 1440 + 6 * 60 + 52, (w + 1) * 1440 + 15 * 60 + 22, [(w * 1440 + 1440 + 11 * 60 + 53, (w + 1) * 1440 + 12 * 60 + 22)], vendor="cw")
    out["rule_seven_minute_rounding"] = b.files()
    b = batch()
    b.punch(steady[2], w * 1440 + 7 * 60 + 7, "in", vendor="tempo", seconds=55)
    b.punch(steady[2], w * 1440 + 12 * 60 + 52, "out", vendor="tempo", seconds=5)
    b.punch(steady[3], (w + 1) * 1440 + 9 * 60 + 7, "in", vendor="tempo", seconds=48)
    b.punch(steady[3], (w + 1) * 1440 + 13 * 60 + 22, "out", vendor="tempo", seconds=41)
    out["rule_tempo_seconds_and_offset"] = b.files()
    b = batch()
    badge = next(bd for bd, e in roster["badges"].items() if e == steady[4])
    b.punch(steady[4], w * 1440 + 8 * 60, "in", vendor="cw", badge=badge.lstrip("0"))
    b.punch(steady[4], w * 1440 + 13 * 60, "out", vendor="cw", badge=badge.lstrip("0"))
    b.punch(steady[4], w * 1440 + 8 * 60, "in", vendor="cw", badge="9" + badge[1:] if badge[0] == "0" else "0000000")
    b.shift(steady[5], (w + 2) * 1440 + 9 * 60, (w + 2) * 1440 + 14 * 60, vendor="cw")
    b.punch(steady[5], (w + 2) * 1440 + 9 * 60 + 2, "in", vendor="tempo")  # double tap on the other hall's terminal
    b.punch(steady[5], (w + 2) * 1440 + 14 * 60 + 1, "out", vendor="cw")
    b.punch(steady[6], (w + 3) * 1440 + 10 * 60, "in", vendor="tempo", badge="TMP-99999x")
    out["rule_badges_and_double_taps"] = b.files()
    b = batch()
    d = w + 2
    b.shift(steady[7], d * 1440 + 21 * 60 + 55, (d + 1) * 1440 + 6 * 60 + 5, vendor="tempo")
    b.shift(steady[8], (d + 1) * 1440 + 21 * 60 + 30, (d + 2) * 1440 + 5 * 60 + 30,
            [((d + 2) * 1440 + 1 * 60, (d + 2) * 1440 + 1 * 60 + 30)], vendor="cw")
    b.shift(steady[9], d * 1440 + 14 * 60, d * 1440 + 22 * 60 + 30, [(d * 1440 + 18 * 60, d * 1440 + 18 * 60 + 30)])
    out["rule_night_premium"] = b.files()
    b = batch()
    b.shift(steady[10], w * 1440 + 8 * 60, w * 1440 + 14 * 60 + 7)          # 6 h after rounding: no deduction
    b.shift(steady[11], w * 1440 + 8 * 60, w * 1440 + 14 * 60 + 8)          # 6 h 15: 30 min deducted
    b.shift(steady[12], w * 1440 + 8 * 60, w * 1440 + 17 * 60, [(w * 1440 + 12 * 60, w * 1440 + 12 * 60 + 15)])
    b.punch(steady[13], w * 1440 + 6 * 60, "in", vendor="cw")
    b.punch(steady[13], w * 1440 + 10 * 60, "break_start", vendor="cw")
    b.punch(steady[13], w * 1440 + 15 * 60, "out", vendor="cw")             # break never ended: not punched
    out["rule_break_deduction"] = b.files()
    b = batch()
    for offset in range(5):
        day = w + offset
        b.shift(steady[14], day * 1440 + 6 * 60, day * 1440 + 16 * 60 + 30, [(day * 1440 + 11 * 60, day * 1440 + 11 * 60 + 30)])
    for offset in range(6):
        day = w + offset
        b.shift(steady[15], day * 1440 + 7 * 60, day * 1440 + 14 * 60, [(day * 1440 + 10 * 60, day * 1440 + 10 * 60 + 15)])
    out["rule_overtime_per_pay_week"] = b.files()
    b = batch()
    for offset in range(-3, 4):
        day = w + offset
        b.shift(steady[16], day * 1440 + 6 * 60, day * 1440 + 16 * 60, [(day * 1440 + 11 * 60, day * 1440 + 11 * 60 + 30)])
    out["rule_pay_week_from_calendar"] = b.files()
    b = batch()
    last = w + 6
    b.shift(steady[17], last * 1440 + 22 * 60, (last + 1) * 1440 + 6 * 60, vendor="cw")
    b.shift(steady[18], last * 1440 + 23 * 60 + 56, (last + 1) * 1440 + 8 * 60, vendor="tempo")
    for offset in range(4):
        day = w + 2 + offset
        b.shift(steady[17], day * 1440 + 8 * 60, day * 1440 + 18 * 60 + 30, [(day * 1440 + 12 * 60, day * 1440 + 12 * 60 + 30)])
    out["rule_shift_belongs_to_start_day"] = b.files()
    b = batch()
    for employee in changing[:3]:
        change = roster["rates"][employee][1][0]
        for day in range(change - 3, change + 4):
            b.shift(employee, day * 1440 + 7 * 60, day * 1440 + 17 * 60, [(day * 1440 + 12 * 60, day * 1440 + 12 * 60 + 30)])
    out["rule_rate_change_mid_week"] = b.files()
    b = batch()
    b.punch(steady[19], w * 1440 + 6 * 60, "in", vendor="cw")
    b.shift(steady[19], (w + 1) * 1440 + 6 * 60, (w + 1) * 1440 + 12 * 60, vendor="cw")
    b.punch(steady[20], w * 1440 + 12 * 60, "out", vendor="tempo")
    b.shift(steady[20], (w + 1) * 1440 + 12 * 60, (w + 1) * 1440 + 18 * 60 + 30, vendor="tempo")
    out["rule_orphan_punches"] = b.files()
    out["edge_empty_exports"] = {"clockwise": "badge;stamp;event\n", "tempo": "", "events": []}
    return out


def _files(name, batch):
    return {f"data/exports/{name}/clockwise.csv": batch["clockwise"],
            f"data/exports/{name}/tempo.jsonl": batch["tempo"]}


def generate(params, names, rng, perf_rng):
    offset_h = params["plant_utc_offset"]
    threshold, night_pct = params["overtime_after_hours"], params["night_premium_pct"]
    roster_text, roster = build_roster(perf_rng, params["perf_employees"])
    calendar_text, start = build_calendar(perf_rng)
    employees = sorted(roster["rates"])
    files = {"data/roster.csv": roster_text, "data/payroll_calendar.csv": calendar_text}
    batches = []
    for name, data in visible_batches(perf_rng, roster, offset_h, start, employees[-8:]).items():
        batches.append((name, "example", data, True))
    for name, data in hand_batches(perf_rng, roster, offset_h, start).items():
        batches.append((name, "rule" if name.startswith("rule") else "edge", data, False))
    for index in range(4):
        b = Batch(perf_rng, roster, offset_h)
        for employee in perf_rng.sample(employees, 6):
            random_week_shifts(b, perf_rng, employee, start + 7 * perf_rng.randint(0, 10) + perf_rng.randint(-2, 2), 2)
        batches.append((f"random_batch_{index + 1}", "random", b.files(), False))
    perf = Batch(perf_rng, roster, offset_h)
    for employee in employees:
        random_week_shifts(perf, perf_rng, employee, start, DAYS // 7 - 1)
    folders = {}
    cases = []
    for index, (name, category, data, shown) in enumerate(batches):
        folder = name if shown else f"batch-{index:02d}-{perf_rng.randint(4096, 65535):04x}"
        folders[name] = folder
        files.update(_files(folder, data))
        if sorted(punches_of(data, roster, offset_h)) != sorted(data["events"]):
            raise AssertionError(f"the exports of {name} do not parse back to their punches")
        expected = gross(data, roster, start, offset_h, threshold, night_pct)
        if expected != brute_gross(data, roster, start, offset_h, threshold, night_pct):
            raise AssertionError(f"interval and brute force disagree on {name}")
        cases.append({"name": name, "kind": "functional", "category": category,
                      "args": [f"data/exports/{folder}"], "kwargs": {}, "expected": expected, "visible": shown})
    perf_files = perf.files()
    files.update(_files("quarter-full", perf_files))
    cases.append({"name": "scale_quarter_audit", "kind": "performance", "category": "scale",
                  "args": ["data/exports/quarter-full"], "kwargs": {},
                  "expected": gross(perf_files, roster, start, offset_h, threshold, night_pct, perf.events)})
    return {
        "task_data": {"input": {names["dir_arg"]: cases[0]["args"][0]}, "expected_output": cases[0]["expected"]},
        "files": files,
        "cases": cases,
    }


def compare(expected, actual):
    if not isinstance(actual, list) or not all(isinstance(r, dict) for r in actual):
        return False, "the result must be a list of records (dicts)"
    keys = {"employee_id", "week_start", "gross_cents"}
    if any(set(r) != keys for r in actual):
        return False, "every record must have exactly the keys employee_id, week_start, gross_cents"
    if any(not isinstance(r["gross_cents"], int) or isinstance(r["gross_cents"], bool) for r in actual):
        return False, "gross_cents must be whole cents (int)"
    want = {(r["employee_id"], r["week_start"]): r["gross_cents"] for r in expected}
    got = {(r["employee_id"], r["week_start"]): r["gross_cents"] for r in actual}
    if len(got) != len(actual):
        return False, "an (employee_id, week_start) pair appears twice"
    if set(want) != set(got):
        return False, f"{len(set(want) ^ set(got))} employee-week(s) missing or unexpected"
    wrong = sum(1 for k in want if want[k] != got[k])
    if wrong:
        return False, f"{wrong} of {len(want)} employee-week(s) have a different gross pay"
    if [(r["employee_id"], r["week_start"]) for r in actual] != sorted(got):
        return False, "records must be sorted by employee_id, then week_start"
    return True, "pay matches"
