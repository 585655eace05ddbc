"""Comparison messages, PAR-60 and the participant's view of a report."""

from __future__ import annotations

from typing import Any

import pytest

from evaluation.grading import completion_time_par
from evaluation.instances import get_instance
from evaluation.report import participant_view
from evaluation.submissions import BadSubmission, check_files
from evaluation.verdicts import default_compare


def test_equal_values_pass_and_messages_never_show_the_expected_value() -> None:
    assert default_compare([1, 2], [1, 2]) == (True, "")
    ok, message = default_compare(123456, 654321)
    assert not ok
    assert "123456" not in message
    assert default_compare(5, "5") == (False, "returned a string, expected a number")
    assert default_compare([1, 2, 3], [1]) == (
        False,
        "returned 1 items; the expected list has a different length",
    )
    assert default_compare(True, 1)[0] is False  # a boolean is not a count
    assert default_compare(0.1 + 0.2, 0.3)[0] is True


def test_par60_caps_successes_and_penalises_failures() -> None:
    assert completion_time_par(1200, True) == 1200
    assert completion_time_par(5000, True) == 3600
    assert completion_time_par(600, False) == 3600
    assert completion_time_par(None, True) is None


def test_submitted_files_are_refused_when_oversize_binary_non_utf8_or_not_editable() -> None:
    instance = get_instance("sde-binary-palindromes", 1)
    assert check_files(instance, {"solution.py": b"x = 1\n"}) == {"solution.py": "x = 1\n"}
    assert check_files(instance, {}) == instance.starter_files()  # missing: the starter
    refused: dict[str, dict[str, str | bytes]] = {
        "larger than": {"solution.py": b"#" * (300 * 1024)},
        "NUL": {"solution.py": b"a\x00b"},
        "not UTF-8": {"solution.py": "x = 'é'".encode("latin-1")},
        "read-only": {"README.md": "# mine"},
        "not a file of this task": {"../etc/passwd": "x"},
    }
    for message, files in refused.items():
        with pytest.raises(BadSubmission, match=message):
            check_files(instance, files)


def test_participant_view_summarises_hidden_tests() -> None:
    report: dict[str, Any] = {
        "tests": [
            {
                "name": "example-1",
                "kind": "functional",
                "category": "example",
                "visible": True,
                "verdict": "OK",
                "message": "",
            },
            {
                "name": "secret-edge-7",
                "kind": "functional",
                "category": "edge",
                "visible": False,
                "verdict": "WA",
                "message": "returned a different result than expected",
            },
            {
                "name": "secret-edge-8",
                "kind": "functional",
                "category": "edge",
                "visible": False,
                "verdict": "WA",
                "message": "returned a different result than expected",
            },
        ],
        "calibration": {"host": "abc"},
        "sandbox": {"backend": "bwrap"},
    }
    view = participant_view(report)
    assert [t["name"] for t in view["tests"]] == ["example-1"]
    assert view["hidden_summary"] == [
        {"kind": "functional", "category": "edge", "verdict": "WA", "count": 2}
    ]
    assert "secret-edge-7" not in str(view)
    assert "calibration" not in view
    assert report["tests"][1]["name"] == "secret-edge-7"  # the original is untouched
