"""Grading one solution (an instance's editable files): the same for a participant, a bot or an
LLM.

Functional tests run once each (one fresh sandboxed process per test). Performance tests run in
rounds, each interleaved with the efficient reference as a canary on the same worker; the
efficiency verdict compares the submission's net CPU to the canary's (a ratio), which is stable
on a noisy host where raw seconds are not. See docs/report-schema.md for the report.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from evaluation.calibration import CalibrationResult
from evaluation.runs import Files, accounting_of, case_spec, run_with_retries, workspace_of
from evaluation.sandbox.base import RunResult, RunStatus, Sandbox
from evaluation.spec import Instance, TestCase
from evaluation.submissions import BadSubmission, Submitted, check_files, files_sha256
from evaluation.verdicts import CaseOutcome, Verdict, judge

SCHEMA_VERSION = "1.2"
PERF_ROUNDS = 3
EXTRA_ROUNDS_IF_BORDERLINE = 2
CANARY_DRIFT_LIMIT = 0.25
FUNCTIONAL_CHUNK = 8  # tests per sandbox batch, so progress moves
# Functional inputs are small: a correct solution needs milliseconds. A tight limit keeps an
# endless loop from costing the template's full performance budget on every test.
FUNCTIONAL_CPU_S = 2.0
PAR_CAP_S = 3600.0

Progress = Callable[[int, int], None]


class CanaryDrift(Exception):
    """The efficient canary ran >25 % away from its calibrated cost: recalibrate first."""


def completion_time_par(
    duration_s: float | None, passed: bool, cap_s: float = PAR_CAP_S
) -> float | None:
    """Penalised average runtime (PAR-N): the duration capped at the trial's time limit of N
    minutes (``cap_s``; an hour when none is known); a failed or timed-out trial counts as the
    whole limit."""
    if duration_s is None:
        return None
    return min(max(duration_s, 0.0), cap_s) if passed else cap_s


def par_label(limits_min: Iterable[int]) -> str:
    """The label of completion time: "PAR-60" when every trial had 60 minutes (or none is
    known: the default cap is an hour), "PAR (each arm's limit)" when the limits differ."""
    distinct = sorted(set(limits_min)) or [int(PAR_CAP_S // 60)]
    return f"PAR-{distinct[0]}" if len(distinct) == 1 else "PAR (each arm's limit)"


def grade(
    instance: Instance,
    submitted: Submitted,
    *,
    sandbox: Sandbox,
    calibration: CalibrationResult,
    duration_s: float | None = None,
    tokens: int | None = None,
    progress: Progress | None = None,
    perf_rounds: int = PERF_ROUNDS,
    tolerate_drift: bool = False,
    time_limit_s: float | None = None,
) -> dict[str, Any]:
    """Grade the editable ``files`` (path -> text; missing ones are the starter's). Raises
    CanaryDrift when the host no longer matches the calibration, unless ``tolerate_drift``
    (used after a fresh calibration drifted again: the verdict then rests on the canary ratio
    alone and the report says ``canary_drift``)."""
    functional = [c for c in instance.cases if c.kind == "functional"]
    perf = [c for c in instance.cases if c.kind == "performance"]
    total = len(functional) + len(perf)
    rejected = ""
    try:
        files = check_files(instance, submitted)
    except BadSubmission as exc:
        rejected = str(exc)
        pairs = submitted.items() if isinstance(submitted, Mapping) else []
        files = {path: text for path, text in pairs if isinstance(text, str)}
    report = _skeleton(instance, files, calibration)
    report["par_limit_s"] = float(time_limit_s) if time_limit_s else PAR_CAP_S
    workspace = workspace_of(instance, files) if not rejected else {}
    if rejected:
        report["error"] = rejected
        report["tests"] = [_row(c, CaseOutcome(Verdict.RE, rejected), None) for c in instance.cases]
        memory_ok = False if instance.template.memory_check else None
        report["efficiency"].update(time_ok=False, memory_ok=memory_ok)
        return _aggregate(report, duration_s, tokens)

    accounting: set[str] = set()
    rows, retries = grade_functional(
        instance, workspace, sandbox=sandbox, progress=progress, total=total, accounting=accounting
    )
    report["tests"].extend(rows)
    perf_rows, efficiency, n = _grade_performance(
        instance, workspace, sandbox, calibration, perf_rounds, tolerate_drift, accounting
    )
    retries += n
    report["tests"].extend(perf_rows)
    report["efficiency"].update(efficiency)
    report["sandbox"]["retries"] = retries
    report["sandbox"]["accounting"] = ", ".join(sorted(accounting))
    if progress:
        progress(total, total)
    if any(t["verdict"] == Verdict.SE for t in report["tests"]):
        report["error"] = "The grading sandbox failed repeatedly; this run must be repeated."
    return _aggregate(report, duration_s, tokens)


def grade_functional(
    instance: Instance,
    workspace: dict[str, bytes],
    *,
    sandbox: Sandbox,
    progress: Progress | None = None,
    total: int | None = None,
    accounting: set[str] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Run every functional test once in ``workspace`` (``workspace_of``); returns report rows
    and the number of sandbox retries."""
    functional = [c for c in instance.cases if c.kind == "functional"]
    total = total or len(functional)
    rows: list[dict[str, Any]] = []
    retries = 0
    cpu, mem = min(instance.template.cpu_s, FUNCTIONAL_CPU_S), instance.template.mem_mib
    for start in range(0, len(functional), FUNCTIONAL_CHUNK):
        chunk = functional[start : start + FUNCTIONAL_CHUNK]
        specs = [case_spec(instance, workspace, c, cpu_s=cpu, mem_mib=mem) for c in chunk]
        results, n = run_with_retries(sandbox, specs)
        retries += n
        if accounting is not None:
            accounting.update(accounting_of(results))
        for case, spec, run in zip(chunk, specs, results, strict=True):
            rows.append(_row(case, judge(case, spec, run, instance.compare), run))
        if progress:
            progress(len(rows), total)
    return rows, retries


def _grade_performance(
    instance: Instance,
    workspace: dict[str, bytes],
    sandbox: Sandbox,
    calibration: CalibrationResult,
    rounds: int,
    tolerate_drift: bool = False,
    accounting: set[str] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    perf = [c for c in instance.cases if c.kind == "performance"]
    canary = workspace_of(instance, instance.references["efficient"])
    mem = instance.template.mem_mib
    subs: dict[str, list[RunResult]] = {c.name: [] for c in perf}
    canaries: dict[str, list[RunResult]] = {c.name: [] for c in perf}
    outcomes: dict[str, list[CaseOutcome]] = {c.name: [] for c in perf}
    retries = 0

    def measure(n_rounds: int, offset: int) -> None:
        nonlocal retries
        for r in range(n_rounds):
            specs, keys = [], []
            for case in perf:
                hard = calibration.test(case.name)["hard_cpu_s"]
                pair = [("canary", canary), ("sub", workspace)]
                if (r + offset) % 2:
                    pair.reverse()  # alternate who goes first, so drift hits both alike
                for label, code in pair:
                    specs.append(case_spec(instance, code, case, cpu_s=hard, mem_mib=mem))
                    keys.append((label, case))
            results, n = run_with_retries(sandbox, specs)
            retries += n
            if accounting is not None:
                accounting.update(accounting_of(results))
            for (label, case), spec, run in zip(keys, specs, results, strict=True):
                if label == "canary":
                    canaries[case.name].append(run)
                else:
                    subs[case.name].append(run)
                    outcomes[case.name].append(judge(case, spec, run, instance.compare))

    measure(1, 0)
    timed_out = any(o.verdict is Verdict.TLE for v in outcomes.values() for o in v)
    if not timed_out:  # a run at the hard limit settles time_ok; more rounds would only cost
        measure(rounds - 1, 1)
    canary_net = _net_medians(canaries, calibration)
    if any(run.status is not RunStatus.OK for runs in canaries.values() for run in runs):
        raise CanaryDrift("the efficient canary itself failed; the calibration is not usable here")
    canary_total = sum(canary_net.values())
    drift = abs(canary_total / calibration.efficient_s - 1) if calibration.efficient_s > 0 else 0
    if not timed_out and drift > CANARY_DRIFT_LIMIT and not tolerate_drift:
        raise CanaryDrift(
            f"canary took {canary_total:.3f}s net vs calibrated {calibration.efficient_s:.3f}s"
        )
    memory_check = instance.template.memory_check
    efficiency = _efficiency(perf, subs, canaries, outcomes, calibration, memory_check)
    efficiency["canary_drift"] = round(drift, 3)
    if efficiency["borderline"]:
        measure(EXTRA_ROUNDS_IF_BORDERLINE, rounds)
        efficiency = _efficiency(perf, subs, canaries, outcomes, calibration, memory_check)
        efficiency["remeasured"] = True
    rows = []
    for case in perf:
        worst = _worst(outcomes[case.name])
        rows.append(_row(case, worst, _median_run(subs[case.name])))
    return rows, efficiency, retries


def _efficiency(
    perf: list[TestCase],
    subs: dict[str, list[RunResult]],
    canaries: dict[str, list[RunResult]],
    outcomes: dict[str, list[CaseOutcome]],
    calibration: CalibrationResult,
    memory_check: bool = True,
) -> dict[str, Any]:
    n_rounds = min(len(v) for v in subs.values())
    timed_out = any(o.verdict is Verdict.TLE for v in outcomes.values() for o in v)
    ratios = []
    for r in range(n_rounds):
        sub_total = sum(_net(subs[c.name][r], calibration, c.name) for c in perf)
        canary_total = sum(_net(canaries[c.name][r], calibration, c.name) for c in perf)
        ratios.append(sub_total / max(canary_total, 1e-3))
    rho = statistics.median(ratios)
    rho_star = calibration.threshold_ratio
    # Speed and memory only count for correct answers: a solution that fails (or skips) the
    # performance tests earns neither check, however quickly it fails.
    outputs_ok = all(o.verdict is Verdict.OK for v in outcomes.values() for o in v)
    time_ok = outputs_ok and (not timed_out) and rho <= rho_star
    sigma = max(calibration.sigma_log, 0.02)
    borderline = (not timed_out) and abs(math.log(max(rho, 1e-6)) - math.log(rho_star)) < 3 * sigma
    memory_net = max(
        max(statistics.median(r.peak_rss_kib for r in subs[c.name]) - calibration.empty_peak_kib, 0)
        for c in perf
    )
    memory_exceeded = any(o.verdict is Verdict.MLE for v in outcomes.values() for o in v)
    memory_ok: bool | None = (
        outputs_ok and (not memory_exceeded) and memory_net <= calibration.memory_threshold_kib
    )
    if not memory_check:
        memory_ok = None  # the template declares no memory check: reported, not scored
    return {
        "memory_check": "on" if memory_check else "off",
        "outputs_ok": outputs_ok,
        "time_ratio": None if timed_out else round(rho, 3),
        "time_threshold_ratio": round(rho_star, 3),
        "time_ok": time_ok,
        "memory_net_kib": int(memory_net),
        "memory_threshold_kib": calibration.memory_threshold_kib,
        "memory_ok": memory_ok,
        "borderline": borderline,
        "rounds": n_rounds,
        "round_ratios": [round(x, 3) for x in ratios],
    }


def _net(run: RunResult, calibration: CalibrationResult, name: str) -> float:
    return max(run.cpu_s - calibration.test(name)["empty_cpu_s"], 0.0)


def _net_medians(
    runs: dict[str, list[RunResult]], calibration: CalibrationResult
) -> dict[str, float]:
    return {
        name: statistics.median(_net(r, calibration, name) for r in rs) for name, rs in runs.items()
    }


def _median_run(runs: list[RunResult]) -> RunResult:
    return sorted(runs, key=lambda r: r.cpu_s)[len(runs) // 2]


SEVERITY = [Verdict.SE, Verdict.TLE, Verdict.MLE, Verdict.OLE, Verdict.RE, Verdict.WA, Verdict.OK]


def _worst(outcomes: list[CaseOutcome]) -> CaseOutcome:
    return min(outcomes, key=lambda o: SEVERITY.index(o.verdict))


def _row(case: TestCase, outcome: CaseOutcome, run: RunResult | None) -> dict[str, Any]:
    return {
        "name": case.name,
        "kind": case.kind,
        "category": case.category,
        "visible": case.visible,
        "verdict": str(outcome.verdict),
        "cpu_s": round(run.cpu_s, 4) if run else None,
        "wall_s": round(run.wall_s, 4) if run else None,
        "peak_rss_kib": run.peak_rss_kib if run else None,
        "message": outcome.message,
    }


def _skeleton(instance: Instance, files: Files, calibration: CalibrationResult) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "template": {
            "slug": instance.template.slug,
            "version": instance.template.version,
            "content_hash": instance.template.content_hash,
        },
        "instance": {"seed": instance.seed, "content_hash": instance.content_hash},
        "solution_sha256": files_sha256(files),
        "files": sorted(files),
        "overall_pass": False,
        "partial_pass": 0.0,
        "checks": {"passed": 0, "total": 0},
        "visible_checks": {"passed": 0, "total": 0},
        "tests": [],
        "efficiency": {
            "time_ok": False,
            "memory_ok": False if instance.template.memory_check else None,
            "memory_check": "on" if instance.template.memory_check else "off",
            "borderline": False,
        },
        "calibration": {
            "host": calibration.host_fingerprint,
            "backend": calibration.backend,
            "efficient_s": round(calibration.efficient_s, 4),
            "naive_s": round(calibration.naive_s, 4),
            "naive_capped": calibration.naive_capped,
            "ratio": round(calibration.ratio, 3),
            # Where the threshold ratio comes from: both references measured to completion, or
            # the naive one counted as naive_cap_factor x efficient (a lower bound). Never an
            # absolute number of seconds, so it does not move with host speed.
            "threshold_source": calibration.threshold_source,
            "naive_cap_factor": calibration.naive_cap_factor,
        },
        "sandbox": {
            "backend": calibration.backend,
            "retries": 0,
            "accounting": "",
            "processes": instance.template.processes,
        },
        "completion_time_s": None,
        "par_limit_s": PAR_CAP_S,
        "tokens": None,
        "error": None,
    }


def _aggregate(
    report: dict[str, Any], duration_s: float | None, tokens: int | None
) -> dict[str, Any]:
    # Hidden tests decide: the visible ones are the participant's, shown but not scored.
    checks = [t["verdict"] == Verdict.OK for t in report["tests"] if not t["visible"]]
    checks.append(bool(report["efficiency"]["time_ok"]))
    if report["efficiency"].get("memory_check", "on") == "on":
        checks.append(bool(report["efficiency"]["memory_ok"]))
    visible = [t["verdict"] == Verdict.OK for t in report["tests"] if t["visible"]]
    report["visible_checks"] = {"passed": sum(visible), "total": len(visible)}
    passed = sum(checks)
    report["checks"] = {"passed": passed, "total": len(checks)}
    report["partial_pass"] = round(passed / len(checks), 4) if checks else 0.0
    report["overall_pass"] = bool(checks) and all(checks)
    report["completion_time_s"] = completion_time_par(
        duration_s, report["overall_pass"], report["par_limit_s"]
    )
    report["tokens"] = tokens
    return report
