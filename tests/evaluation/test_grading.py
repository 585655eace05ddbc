"""Grading through the real sandbox: references, starters and every kind of bad solution get
the right verdict and a one-line message; hidden details never reach the participant view."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

import pytest

from evaluation.report import participant_view
from evaluation.sandbox.base import Sandbox
from tests.evaluation.grading_fixtures import (
    calibration_for,
    grade_like_the_service,
    instance,
    sandbox_or_skip,
)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return sandbox_or_skip()


def grade_source(sandbox: Sandbox, source: str | bytes, **kwargs: Any) -> dict[str, Any]:
    data = source.encode() if isinstance(source, str) else source
    return grade_like_the_service(instance(), data, **kwargs)


def verdicts(report: dict[str, Any]) -> set[str]:
    return {t["verdict"] for t in report["tests"]}


def test_calibration_separates_the_references(sandbox: Sandbox) -> None:
    calibration = calibration_for(instance().template.slug)
    assert calibration.valid, calibration.message
    assert calibration.ratio >= 3
    assert calibration.threshold_ratio == pytest.approx(calibration.ratio**0.5)


def test_efficient_reference_passes_everything(sandbox: Sandbox) -> None:
    report = grade_source(
        sandbox, instance().references["efficient"]["solution.py"], duration_s=1500, tokens=42
    )
    assert report["overall_pass"], json.dumps(report["efficiency"])
    assert report["partial_pass"] == 1.0
    assert report["completion_time_s"] == 1500
    assert report["par_limit_s"] == 3600  # no limit given: an hour
    assert report["tokens"] == 42
    assert report["schema_version"] == "1.2"
    assert {t["kind"] for t in report["tests"]} == {"functional", "performance"}
    assert all(t["peak_rss_kib"] > 1000 for t in report["tests"])


def test_naive_reference_is_correct_but_fails_efficiency(sandbox: Sandbox) -> None:
    report = grade_source(sandbox, instance().references["naive"]["solution.py"], duration_s=1500)
    functional = [t for t in report["tests"] if t["kind"] == "functional"]
    assert all(t["verdict"] == "OK" for t in functional)
    assert report["efficiency"]["time_ok"] is False
    assert report["overall_pass"] is False
    assert 0 < report["partial_pass"] < 1
    assert report["completion_time_s"] == 3600  # failed: PAR-60 counts the full hour


def test_starter_fails_and_scores_zero(sandbox: Sandbox) -> None:
    # The starter raises NotImplementedError: failing fast earns no efficiency check. A failed
    # task counts as the whole time the solver had (PAR-45 here).
    report = grade_source(
        sandbox, instance().participant_files["solution.py"], duration_s=600, time_limit_s=2700
    )
    assert report["par_limit_s"] == 2700
    assert report["completion_time_s"] == 2700
    assert report["overall_pass"] is False
    assert verdicts(report) - {"OK"}
    assert report["efficiency"]["outputs_ok"] is False
    assert report["efficiency"]["time_ok"] is False
    assert report["efficiency"]["memory_ok"] is None  # this template scores no memory check
    assert report["partial_pass"] == 0.0


def test_hard_coding_the_visible_examples_earns_nothing_for_them(sandbox: Sandbox) -> None:
    inst = instance()
    known = {
        json.dumps([case.args, case.kwargs], sort_keys=True): case.expected
        for case in inst.cases
        if case.visible
    }
    assert known
    cheat = (
        "import json\n"
        f"KNOWN = json.loads({json.dumps(json.dumps(known))})\n"
        f"def {inst.entry_point}(*args, **kwargs):\n"
        "    return KNOWN.get(json.dumps([list(args), kwargs], sort_keys=True))\n"
    )
    report = grade_source(sandbox, cheat)
    assert report["visible_checks"] == {"passed": len(known), "total": len(known)}
    hidden = [t for t in report["tests"] if not t["visible"]]
    assert report["checks"]["total"] == len(hidden) + 1  # visible tests are not scored
    assert report["efficiency"]["time_ok"] is False
    hidden_ok = sum(t["verdict"] == "OK" for t in hidden)
    assert report["checks"]["passed"] == hidden_ok
    assert report["partial_pass"] < 0.1, report["partial_pass"]


def test_a_memory_check_is_scored_only_where_the_template_has_one(sandbox: Sandbox) -> None:
    inst = instance()
    assert inst.template.memory_check is False  # [checks] memory = "off"
    source = inst.references["efficient"]["solution.py"].encode()
    off = grade_like_the_service(inst, source)
    hidden = [t for t in off["tests"] if not t["visible"]]
    assert off["efficiency"]["memory_check"] == "off"
    assert off["efficiency"]["memory_ok"] is None
    assert off["efficiency"]["memory_net_kib"] >= 0  # still reported
    assert off["checks"] == {"passed": len(hidden) + 1, "total": len(hidden) + 1}
    with_check = dataclasses.replace(
        inst, template=dataclasses.replace(inst.template, memory_check=True)
    )
    on = grade_like_the_service(with_check, source)
    assert on["efficiency"]["memory_check"] == "on"
    assert on["efficiency"]["memory_ok"] is True
    assert on["checks"] == {"passed": len(hidden) + 2, "total": len(hidden) + 2}


def test_syntax_error_is_a_runtime_error_with_the_line(sandbox: Sandbox) -> None:
    report = grade_source(sandbox, "def broken(:\n    pass\n")
    assert verdicts(report) == {"RE"}
    assert "SyntaxError" in report["tests"][0]["message"]


def test_missing_entry_point_names_the_function(sandbox: Sandbox) -> None:
    report = grade_source(sandbox, "def something_else():\n    return 1\n")
    assert verdicts(report) == {"RE"}
    assert instance().entry_point in report["tests"][0]["message"]


def test_wrong_return_type_is_a_wrong_answer(sandbox: Sandbox) -> None:
    entry = instance().entry_point
    report = grade_source(sandbox, f"def {entry}(*args, **kwargs):\n    return 'many'\n")
    assert verdicts(report) == {"WA"}
    message = report["tests"][0]["message"]
    assert message.startswith("returned")
    assert "str" in message  # names what came back, not what was expected


def test_non_utf8_and_oversize_sources_are_refused_with_a_sentence(sandbox: Sandbox) -> None:
    report = grade_source(sandbox, "x = 'caf\xe9'\n".encode("latin-1"))
    assert report["error"].startswith("solution.py is not UTF-8")
    assert verdicts(report) == {"RE"}
    big = grade_source(sandbox, "#" * (300 * 1024))
    assert "larger than" in big["error"]


def test_recursion_bomb_gets_a_clean_error(sandbox: Sandbox) -> None:
    entry = instance().entry_point
    source = f"def {entry}(*args, **kwargs):\n    return {entry}(*args, **kwargs)\n"
    report = grade_source(sandbox, source)
    assert verdicts(report) <= {"RE", "MLE"}
    assert "Recursion" in report["tests"][0]["message"] or report["tests"][0]["verdict"] == "MLE"


@pytest.mark.timeout(300)  # every case runs into its time limit, one after another (~75 s)
def test_endless_loop_times_out_and_leaves_no_process(sandbox: Sandbox) -> None:
    entry = instance().entry_point
    report = grade_source(
        sandbox, f"def {entry}(*args, **kwargs):\n    while True:\n        pass\n"
    )
    assert verdicts(report) == {"TLE"}
    # Other suites on the machine may be running sandboxes right now: a process counts as left
    # behind only if it is still there after every run of theirs would have ended.
    leftovers = _sandboxed()
    deadline = time.monotonic() + 30
    while leftovers and time.monotonic() < deadline:
        time.sleep(1)
        leftovers &= _sandboxed()
    assert leftovers == set()


def _sandboxed() -> set[str]:
    return {p for p in os.listdir("/proc") if p.isdigit() and _is_sandboxed(p)}


def _is_sandboxed(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.startswith("Uid:") and "65534" in line for line in status)
    except OSError:
        return False


def test_participant_view_never_contains_hidden_inputs_or_outputs(sandbox: Sandbox) -> None:
    inst = instance()
    report = grade_source(sandbox, inst.participant_files["solution.py"])
    view = json.dumps(participant_view(report))
    for case in inst.hidden_cases:
        assert case.name not in view
        for value in (case.expected, *case.args):
            text = json.dumps(value)
            if len(text) >= 4:  # short numbers could appear by coincidence (counts, sizes)
                assert text not in view
