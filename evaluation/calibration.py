"""Auto-calibrated efficiency thresholds (docs/calibration.md; notes/sandbox.md §9).

The efficient and naive references and an empty solution run interleaved on this host and
backend: one warm-up round, then ``rounds`` measured rounds in shuffled order. Net CPU is raw CPU
minus the empty solution's median. With E and N the summed medians of efficient and naive net CPU,
the time threshold is the geometric mean T* = sqrt(E*N), i.e. a ratio rho* = sqrt(N/E) against an
efficient canary. A calibration whose N/E is under 3 is rejected: the inputs do not separate the
two references well enough to judge anyone.

The threshold never comes from an absolute cap (which would make it scale with host speed). A
naive run is stopped at ``NAIVE_CAP_FACTOR`` times the efficient reference's CPU on the same test
and host (never at a fixed number of seconds); a naive reference slower than that counts as
exactly that factor slower (``threshold_source = "ratio-bound"``, a lower bound of the true
ratio), one that finishes sooner counts as measured (``"measured"``). Either way N/E is a ratio
of two runs on the same host, so a slower or faster host moves E and N together.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evaluation.runs import case_spec, empty_workspace, run_with_retries, workspace_of
from evaluation.runtimes import DEFAULT_RUNTIME, get_runtime
from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox
from evaluation.spec import Instance, TestCase
from evaluation.verdicts import Verdict, judge

MIN_RATIO = 3.0
MIN_EFFICIENT_NET_S = 0.05  # below this a CPU measurement is mostly noise
RECOMMENDED_EFFICIENT_NET_S = 0.1
MEMORY_FLOOR_KIB = 1024
# Naive runs stop at this multiple of the efficient reference's CPU time on the same test (a
# lower bound then): enough to prove a ratio of 3 with margin, without waiting for exponential
# code to finish. A ratio, not seconds, so the threshold does not move with host speed.
NAIVE_CAP_FACTOR = 8
NAIVE_CAP_SLACK = 1.25  # the naive runs' CPU limit, over the factor, for the warm-up's noise
MEMORY_SLACK_KIB = 32 * 1024


class CalibrationError(Exception):
    """The calibration could not be made valid; the message is for the template author."""


@dataclass
class CalibrationResult:
    valid: bool
    message: str
    perf_fingerprint: str
    host_fingerprint: str
    backend: str
    rounds: int
    tests: list[dict[str, Any]] = field(default_factory=list)  # per performance test
    efficient_s: float = 0.0  # E
    naive_s: float = 0.0  # N (a lower bound when naive_capped)
    naive_capped: bool = False
    # "measured": N/E from both references run to completion; "ratio-bound": the naive
    # reference was slower than NAIVE_CAP_FACTOR x efficient on some test, which then counts
    # as exactly that factor (never a fixed number of seconds).
    threshold_source: str = "measured"
    naive_cap_factor: float = NAIVE_CAP_FACTOR
    ratio: float = 0.0  # N / E
    threshold_ratio: float = 0.0  # rho* = sqrt(N / E)
    sigma_log: float = 0.0  # spread of log(efficient) per round, for borderline flags
    memory_efficient_kib: int = 0
    memory_naive_kib: int = 0
    memory_threshold_kib: int = 0  # net peak RSS a solution may use
    empty_peak_kib: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CalibrationResult:
        return cls(**data)

    def test(self, name: str) -> dict[str, Any]:
        return next(t for t in self.tests if t["name"] == name)


def perf_fingerprint(instance: Instance) -> str:
    """Identifies the performance inputs: instances that share them share a calibration.
    The task runtime and its lock file are part of it (other packages, other timings), and so
    are the data files the generator made (a solution reads them on every run)."""
    payload: list[Any] = [
        [c.name, c.args, c.kwargs] for c in instance.cases if c.kind == "performance"
    ]
    if instance.data_files:
        payload.append(
            {
                path: hashlib.sha256(instance.participant_files[path].encode()).hexdigest()
                for path in instance.data_files
            }
        )
    runtime = instance.template.runtime
    if runtime == DEFAULT_RUNTIME:  # the value calibrations before task runtimes carry
        blob = json.dumps([instance.template.content_hash, payload], sort_keys=True)
    else:
        lock = get_runtime(runtime).lock_sha256
        blob = json.dumps([instance.template.content_hash, payload, runtime, lock], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def robust_sigma_log(samples: Sequence[float]) -> float:
    """1.4826 * MAD of log(samples) / sqrt(k): the spread of a median of k timings."""
    logs = [math.log(max(s, 1e-6)) for s in samples]
    center = statistics.median(logs)
    mad = statistics.median(abs(x - center) for x in logs)
    return 1.4826 * mad / math.sqrt(len(logs))


def calibrate(
    instance: Instance, sandbox: Sandbox, *, rounds: int = 5, warmup: int = 1, seed: int = 0
) -> CalibrationResult:
    perf = [c for c in instance.cases if c.kind == "performance"]
    if not perf:
        raise CalibrationError(f"{instance.template.slug} has no performance tests to calibrate")
    sources = {
        **{f"empty:{e.id}": empty_workspace(instance, e) for e in instance.entry_points},
        "efficient": workspace_of(instance, instance.references["efficient"]),
        "naive": workspace_of(instance, instance.references["naive"]),
    }
    cap = instance.template.cpu_s
    naive_limit = instance.template.naive_cpu_s
    mem = instance.template.mem_mib
    # Warm-up round (the naive reference is not run yet): how long the efficient reference
    # takes on each test, to stop naive runs at a multiple of it.
    warm = _round(
        instance,
        sandbox,
        perf,
        sources,
        {c.name: {"empty": cap, "efficient": cap} for c in perf},
        mem,
        random.Random(seed),
    )
    caps: dict[str, dict[str, float]] = {}
    for case in perf:
        _require_correct(instance, case, warm[("efficient", case.name)], "efficient")
        empty_s = warm[("empty", case.name)].cpu_s
        warm_net = max(warm[("efficient", case.name)].cpu_s - empty_s, 0.0)
        naive_cap = empty_s + NAIVE_CAP_SLACK * NAIVE_CAP_FACTOR * max(warm_net, 0.01)
        if naive_cap > naive_limit:
            raise CalibrationError(
                f"the naive reference may need {naive_cap:.1f} s of CPU on {case.name} "
                f"({NAIVE_CAP_FACTOR:g}x the efficient reference), more than limits.naive_cpu_s "
                f"= {naive_limit:g} s; raise that limit or make the performance inputs smaller"
            )
        caps[case.name] = {"empty": cap, "efficient": cap, "naive": naive_cap}

    samples: dict[tuple[str, str], list[RunResult]] = {}
    rng = random.Random(seed + 1)
    for _ in range(max(0, warmup - 1)):
        _round(instance, sandbox, perf, sources, caps, mem, rng)
    for _ in range(rounds):
        for key, result in _round(instance, sandbox, perf, sources, caps, mem, rng).items():
            samples.setdefault(key, []).append(result)

    first = next(iter(samples.values()))[0]
    outcome = CalibrationResult(
        valid=False,
        message="",
        perf_fingerprint=perf_fingerprint(instance),
        host_fingerprint=first.host_fingerprint,
        backend=first.backend,
        rounds=rounds,
    )
    eff_per_round = [0.0] * rounds
    naive_per_round = [0.0] * rounds
    for case in perf:
        empty_cpu = statistics.median(r.cpu_s for r in samples[("empty", case.name)])
        empty_rss = statistics.median(r.peak_rss_kib for r in samples[("empty", case.name)])
        for run in samples[("efficient", case.name)]:
            _require_correct(instance, case, run, "efficient")
        eff_net = [max(r.cpu_s - empty_cpu, 0.0) for r in samples[("efficient", case.name)]]
        naive_runs = samples[("naive", case.name)]
        # Slower than the factor (stopped, or finished above it): exactly the factor.
        bound = NAIVE_CAP_FACTOR * max(statistics.median(eff_net), 1e-6)
        for run in naive_runs:
            if run.status is RunStatus.TLE_WALL and run.cpu_s - empty_cpu < bound:
                raise CalibrationError(
                    f"the wall clock stopped the naive reference on {case.name} after "
                    f"{run.cpu_s:.1f} s of CPU, before it reached the factor's bound: the "
                    "host is too loaded to measure it; calibrate again when it is quieter"
                )
            if run.status not in (RunStatus.TLE_CPU, RunStatus.TLE_WALL):
                _require_correct(instance, case, run, "naive")
        measured = [max(r.cpu_s - empty_cpu, 0.0) for r in naive_runs]
        capped = any(r.status in (RunStatus.TLE_CPU, RunStatus.TLE_WALL) for r in naive_runs) or (
            statistics.median(measured) > bound
        )
        naive_net = [bound] * len(naive_runs) if capped else measured
        for i in range(rounds):
            eff_per_round[i] += eff_net[i]
            naive_per_round[i] += naive_net[i]
        eff_rss = statistics.median(r.peak_rss_kib for r in samples[("efficient", case.name)])
        naive_rss = statistics.median(r.peak_rss_kib for r in naive_runs)
        outcome.naive_capped = outcome.naive_capped or capped
        outcome.empty_peak_kib = max(outcome.empty_peak_kib, int(empty_rss))
        outcome.tests.append(
            {
                "name": case.name,
                "empty_cpu_s": empty_cpu,
                "efficient_net_s": statistics.median(eff_net),
                "naive_net_s": statistics.median(naive_net),
                "naive_capped": capped,
                "efficient_net_kib": max(int(eff_rss - empty_rss), 0),
                "naive_net_kib": max(int(naive_rss - empty_rss), 0),
                "efficient_samples_s": eff_net,
                "naive_samples_s": naive_net,
            }
        )
    outcome.threshold_source = "ratio-bound" if outcome.naive_capped else "measured"
    _finish(outcome, eff_per_round, naive_per_round, cap)
    return outcome


def _finish(result: CalibrationResult, eff: list[float], naive: list[float], cap: float) -> None:
    E = sum(t["efficient_net_s"] for t in result.tests)  # the notes' symbols
    N = sum(t["naive_net_s"] for t in result.tests)
    result.efficient_s, result.naive_s = E, N
    result.ratio = N / E if E > 0 else 0.0
    result.threshold_ratio = math.sqrt(result.ratio) if result.ratio > 0 else 0.0
    result.sigma_log = robust_sigma_log(eff)
    e_m = max(max(t["efficient_net_kib"] for t in result.tests), MEMORY_FLOOR_KIB)
    n_m = max(max(t["naive_net_kib"] for t in result.tests), MEMORY_FLOOR_KIB)
    result.memory_efficient_kib, result.memory_naive_kib = e_m, n_m
    # Geometric mean as in the notes, but never tighter than 4x the efficient reference plus
    # slack: references often use similar memory, and the check is meant to catch blow-ups.
    result.memory_threshold_kib = int(max(math.sqrt(e_m * n_m), 4 * e_m, e_m + MEMORY_SLACK_KIB))
    for test in result.tests:
        # The hard limit only stops runaway runs: the template's own generous cap, never a
        # multiple of the (ratio-bound) naive time, which could sit right next to the naive
        # reference's real time and flip its verdict between hosts.
        test["hard_cpu_s"] = round(cap, 3)
    problems = []
    if E < MIN_EFFICIENT_NET_S:
        problems.append(
            f"the efficient reference spends only {E * 1000:.0f} ms net CPU on the performance "
            f"tests; make their inputs larger (aim for at least {RECOMMENDED_EFFICIENT_NET_S:g} s)"
        )
    if result.ratio < MIN_RATIO:
        problems.append(
            f"naive/efficient CPU ratio is {result.ratio:.2f}, under {MIN_RATIO:g}: the "
            "performance inputs do not separate the references; make them larger or harsher"
        )
    if result.ratio > 0:
        limit = math.log(result.ratio) / 6
        if result.sigma_log >= limit:
            problems.append(
                f"efficient timings are too noisy (sigma_log {result.sigma_log:.3f} >= "
                f"{limit:.3f}); run on a quieter host or make the inputs larger"
            )
        if not result.naive_capped and robust_sigma_log(naive) >= limit:
            problems.append("naive timings are too noisy for a stable threshold")
    result.valid = not problems
    if problems:
        result.message = "Calibration rejected: " + "; ".join(problems) + "."
    else:
        bound = (
            f" (naive slower than {NAIVE_CAP_FACTOR:g}x efficient on some test, counted as "
            f"{NAIVE_CAP_FACTOR:g}x: a lower bound)"
            if result.naive_capped
            else " (both references measured to completion)"
        )
        result.message = (
            f"Calibration valid: E={E:.3f}s, N={N:.3f}s{bound}, ratio {result.ratio:.1f}, "
            f"threshold ratio {result.threshold_ratio:.2f}."
        )


def _round(
    instance: Instance,
    sandbox: Sandbox,
    perf: list[TestCase],
    sources: dict[str, dict[str, bytes]],
    caps: dict[str, dict[str, float]],
    mem_mib: int,
    rng: random.Random,
) -> dict[tuple[str, str], RunResult]:
    """One round: every kind named in ``caps[test]`` (its CPU limit) runs once on every
    performance test, in shuffled order ("empty" is the do-nothing solution of the test's
    entry point)."""
    keys = [(kind, case) for case in perf for kind in caps[case.name]]
    rng.shuffle(keys)

    def workspace(kind: str, case: TestCase) -> dict[str, bytes]:
        return sources[f"empty:{instance.entry(case).id}" if kind == "empty" else kind]

    specs = [
        case_spec(
            instance, workspace(kind, case), case, cpu_s=caps[case.name][kind], mem_mib=mem_mib
        )
        for kind, case in keys
    ]
    results, _ = run_with_retries(sandbox, specs)
    for (kind, case), run in zip(keys, results, strict=True):
        if run.status is RunStatus.SANDBOX_ERROR:
            raise CalibrationError(
                f"the sandbox failed while running the {kind} reference on {case.name}: "
                f"{run.detail or run.stderr_tail[-200:]}"
            )
    return {(kind, case.name): run for (kind, case), run in zip(keys, results, strict=True)}


def _require_correct(instance: Instance, case: TestCase, run: RunResult, label: str) -> None:
    limits = RunSpec(
        files={}, argv=(), cpu_s=instance.template.cpu_s, mem_mib=instance.template.mem_mib
    )
    outcome = judge(case, limits, run, instance.compare)
    if outcome.verdict is not Verdict.OK:
        raise CalibrationError(
            f"the {label} reference fails performance test {case.name}: "
            f"{outcome.verdict} ({outcome.message})"
        )
