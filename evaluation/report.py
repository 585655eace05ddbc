"""Views of a grading report for different readers.

Researchers see the full report. Participants see visible tests in full and hidden tests only
summarised by kind, category and verdict: never a hidden test's name, input or expected output.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any


def participant_view(report: dict[str, Any]) -> dict[str, Any]:
    view = copy.deepcopy(report)
    visible = [t for t in view["tests"] if t.get("visible")]
    hidden = [t for t in view["tests"] if not t.get("visible")]
    counts = Counter((t["kind"], t["category"], t["verdict"]) for t in hidden)
    view["tests"] = visible
    view["hidden_summary"] = [
        {"kind": kind, "category": category, "verdict": verdict, "count": count}
        for (kind, category, verdict), count in sorted(counts.items())
    ]
    view.pop("calibration", None)
    view.pop("sandbox", None)
    return view
