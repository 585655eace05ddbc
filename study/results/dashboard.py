"""The results dashboard: a trial-level table (bounded queries), the paper's Table 2, figures
and a CSV for analysts. Statistics are in ``study.results.stats``.

``trial_table`` has one row per *ended* trial (submitted or timed out) of every participant
who was not excluded. Outcomes:

- ``overall_pass`` (0/1) and ``partial_pass`` (0-1) from the grading report; a trial that timed
  out with nothing to submit failed (0, 0.0); a trial whose grading is not finished (or failed
  for reasons that are never the solution's) has no value (empty).
- ``completion_time_s``: PAR-N, capped at the trial's arm limit of N minutes
  (``study.results.reports.par_completion_s``); ``time_limit_min`` is that N.
- ``tokens`` / ``ai_requests``: for AI arms only, from the ``study.metrics`` registry.
- ``confidence`` and ``nasa_tlx``: the post-trial questionnaire's scale scores (mean of the
  scale's items, reverse-scored items flipped; see ``study.questionnaires.forms.scale_scores``).

Participants are identified by their random ``internal_id`` (not the login pseudonym).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.cache import cache

from study.configuration.snapshots import arm_settings
from study.metrics import trial_metrics
from study.models import Answer, ConfigSnapshot, Item, Participant, Study, Trial
from study.questionnaires.forms import LIKERT_POINTS
from study.results.figures import all_figures
from study.results.plan import analysis_plan, deviations, plan_digest
from study.results.reports import par_completion_s
from study.results.stats import paired_stats
from study.results.table2 import Row, table2

if TYPE_CHECKING:
    import plotly.graph_objects as go

COLUMNS = (
    "trial_id",
    "participant",
    "participant_stage",
    "track",
    "condition",
    "arm",
    "ai_mode",
    "ai",
    "template",
    "difficulty",
    "session",
    "period",
    "status",
    "grading_status",
    "overall_pass",
    "partial_pass",
    "completion_time_s",
    "time_limit_min",
    "tokens",
    "ai_requests",
    "confidence",
    "nasa_tlx",
    "analysis_plan",  # digest of the analysis plan in the participant's configuration snapshot
)
SCALES = ("confidence", "nasa_tlx")
ENDED = (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)
CACHE_SECONDS = 600


def _scale_scores(study: Study) -> dict[int, dict[str, float]]:
    """Post-trial scale scores per trial, from one query over every scored answer."""
    answers = (
        Answer.objects.filter(response__participant__study=study, response__trial__isnull=False)
        .exclude(item__scale="")
        .values_list(
            "response__trial_id",
            "item__scale",
            "item__type",
            "item__min_value",
            "item__max_value",
            "value",
        )
    )
    values: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for trial_id, scale, kind, low, high, value in answers:
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        name, _, flag = scale.partition(":")
        if kind in LIKERT_POINTS:
            low, high = 1.0, float(LIKERT_POINTS[Item.Type(kind)])
        if flag == "r" and low is not None and high is not None:
            value = low + high - value
        values[trial_id][name].append(float(value))
    return {
        trial_id: {name: math.fsum(v) / len(v) for name, v in scales.items()}
        for trial_id, scales in values.items()
    }


def trial_table(study: Study) -> list[Row]:
    """One row per ended trial; four queries plus one per registered metrics provider."""
    trials = list(
        Trial.objects.filter(participant__study=study, status__in=ENDED)
        .exclude(participant__stage=Participant.Stage.EXCLUDED)
        .order_by("participant__created_at", "participant_id", "period")
        .values(
            "pk",
            "participant__internal_id",
            "participant__stage",
            "participant__snapshot_id",
            "participant__track__code",
            "arm__condition",
            "arm__name",
            "arm__ai_mode",
            "template_slug",
            "instance__template__difficulty",
            "session_index",
            "period",
            "status",
            "started_at",
            "ended_at",
            "evaluation_id",
            "evaluation__status",
            "evaluation__report__overall_pass",
            "evaluation__report__partial_pass",
            "evaluation__report__completion_time_s",
            "arm__time_limit_min",
        )
    )
    snapshots = dict(ConfigSnapshot.objects.filter(study=study).values_list("pk", "content"))
    metrics = trial_metrics(t["pk"] for t in trials)
    scales = _scale_scores(study)
    rows = []
    for t in trials:
        arm = arm_settings(
            snapshots.get(t["participant__snapshot_id"]),
            t["arm__condition"],
            {
                "name": t["arm__name"],
                "ai_mode": t["arm__ai_mode"],
                "time_limit_min": t["arm__time_limit_min"],
            },
        )
        limit = int(arm["time_limit_min"])
        row = _row(t, arm["name"], arm["ai_mode"], limit, metrics, scales)
        plan = (snapshots.get(t["participant__snapshot_id"]) or {}).get("analysis_plan")
        row["analysis_plan"] = plan_digest(plan) if plan else None
        rows.append(row)
    return rows


def _row(
    t: Mapping[str, Any],
    arm_name: str,
    ai_mode: str,
    limit_min: int,
    metrics: dict[int, dict[str, float]],
    scales: dict[int, dict[str, float]],
) -> Row:
    graded = t["evaluation__status"] == "done" and t["evaluation__report__overall_pass"] is not None
    overall: int | None = int(bool(t["evaluation__report__overall_pass"])) if graded else None
    partial = t["evaluation__report__partial_pass"] if graded else None
    if t["status"] == Trial.Status.EXPIRED and t["evaluation_id"] is None:
        overall, partial = 0, 0.0  # the time ran out with nothing to grade
    duration = (
        (t["ended_at"] - t["started_at"]).total_seconds()
        if t["started_at"] and t["ended_at"]
        else None
    )
    ai = ai_mode != "none"
    trial_metrics_ = metrics.get(t["pk"], {})
    trial_scales = scales.get(t["pk"], {})
    return {
        "trial_id": t["pk"],
        "participant": t["participant__internal_id"],
        "participant_stage": t["participant__stage"],
        "track": t["participant__track__code"],
        "condition": t["arm__condition"],
        "arm": arm_name,
        "ai_mode": ai_mode,
        "ai": ai,
        "template": t["template_slug"],
        "difficulty": t["instance__template__difficulty"],
        "session": t["session_index"],
        "period": t["period"],
        "status": t["status"],
        "grading_status": t["evaluation__status"] or "",
        "overall_pass": overall,
        "partial_pass": float(partial) if partial is not None else None,
        "completion_time_s": par_completion_s(
            status=t["status"],
            graded=graded or overall == 0,
            overall_pass=bool(overall),
            reported_s=t["evaluation__report__completion_time_s"] if graded else None,
            duration_s=duration,
            limit_s=limit_min * 60,
        ),
        "time_limit_min": limit_min,
        "tokens": int(trial_metrics_.get("tokens", 0)) if ai else None,
        "ai_requests": int(trial_metrics_.get("ai_requests", 0)) if ai else None,
        "confidence": trial_scales.get("confidence"),
        "nasa_tlx": trial_scales.get("nasa_tlx"),
    }


def ai_role_counts(study: Study) -> list[tuple[str, int]]:
    """How often each AI role was ticked in the post-study questionnaire (one query)."""
    answers = (
        Answer.objects.filter(
            response__participant__study=study,
            response__trial__isnull=True,
            item__key="ai_roles",
        )
        .exclude(response__participant__stage=Participant.Stage.EXCLUDED)
        .values_list("value", "item__choices")
    )
    counts: Counter[str] = Counter()
    labels: dict[str, str] = {}
    for value, choices in answers:
        for choice in choices or []:
            if isinstance(choice, dict) and "value" in choice:
                labels[str(choice["value"])] = str(choice.get("label", choice["value"]))
        for role in value if isinstance(value, list) else [value]:
            counts[str(role)] += 1
    return [(labels.get(role, role), n) for role, n in counts.most_common()]


# --- Table 2 ------------------------------------------------------------------------------
def figures(
    rows: Sequence[Row], *, ai_roles: Sequence[tuple[str, int]] = ()
) -> dict[str, go.Figure]:
    """The dashboard's plotly figures (``study.results.figures``), by name."""

    return all_figures(rows, ai_roles=ai_roles)


# --- CSV ----------------------------------------------------------------------------------
def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    return value


def table_csv(rows: Sequence[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        writer.writerow([_csv_value(r[c]) for c in COLUMNS])
    return out.getvalue()


# --- The whole dashboard, cached by content -------------------------------------------------
def dashboard(study: Study) -> dict[str, Any]:
    """Table, Table 2, statistics and figure JSON. The statistics and figures are cached under
    a hash of the data, so a page view after a change recomputes them and others do not."""

    rows = trial_table(study)
    roles = ai_role_counts(study)
    plan = analysis_plan(study)
    digest = hashlib.sha256(
        json.dumps([rows, roles, plan], sort_keys=True, default=str).encode()
    ).hexdigest()

    def compute() -> dict[str, Any]:
        figs = figures(rows, ai_roles=roles)
        stats = paired_stats(rows)
        return {
            "stats": stats,
            "deviations": deviations(stats, plan, (r["analysis_plan"] for r in rows)),
            "figures": {name: json.loads(fig.to_json()) for name, fig in figs.items()},
        }

    key = f"results:{study.pk}:{digest}"
    heavy: dict[str, Any] | None = cache.get(key)
    if heavy is None:
        heavy = compute()
        cache.set(key, heavy, CACHE_SECONDS)
    return {
        "rows": rows,
        "table2": table2(rows),
        "ai_roles": roles,
        "plan": plan,
        **heavy,
    }
