"""Per-trial score reports: what a participant or a researcher reads about one trial.

``trial_report`` builds the report from the engine's grading report (docs/report-schema.md).
Participants get ``evaluation.report.participant_view`` (visible tests in full, hidden tests
only summarised by kind, category and verdict; no calibration or sandbox details); researchers
get everything. Whether a participant may see it at all is ``report_released``.

``efficiency_figure`` turns the efficiency block into a plotly figure (a pure function).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evaluation.grading import PAR_CAP_S, completion_time_par, par_label
from evaluation.report import participant_view
from study.metrics import trial_metrics
from study.models import Trial
from study.trials.services import arm_config

SCHEMA = "trial-report/1"
RHO = "\u03c1"  # the threshold ratio rho* of docs/calibration.md
LOG_TICKS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)
COLOURS = {"ok": "#198754", "fail": "#dc3545", "reference": "#6c757d", "threshold": "#fd7e14"}


def par_completion_s(
    *,
    status: str,
    graded: bool,
    overall_pass: bool | None,
    reported_s: float | None,
    duration_s: float | None,
    limit_s: float | None = None,
) -> float | None:
    """PAR-N completion time of a trial whose arm gave it N minutes (``limit_s``).

    A trial whose time ran out counts as the whole limit, and so does an ended trial without a
    gradable submission; a graded one uses the engine's ``completion_time_s`` (the duration
    capped at the limit, the whole limit when it failed), computed from the trial's own clock
    when the engine was not given a duration. Open or not yet graded trials have no value.
    """
    cap = float(limit_s) if limit_s else PAR_CAP_S
    if status == Trial.Status.EXPIRED:
        return cap
    if not graded:
        return None
    if reported_s is not None:
        return float(reported_s)
    return completion_time_par(duration_s, bool(overall_pass), cap)


def peak_memory_kib(report: dict[str, Any]) -> int | None:
    peaks = [t["peak_rss_kib"] for t in report.get("tests", []) if t.get("peak_rss_kib")]
    return max(peaks) if peaks else None


def naive_ratio(report: dict[str, Any]) -> float | None:
    """N/E of the calibration; participants' reports lack it, but rho* = sqrt(N/E)."""
    ratio = (report.get("calibration") or {}).get("ratio")
    if ratio:
        return float(ratio)
    threshold = (report.get("efficiency") or {}).get("time_threshold_ratio")
    return round(float(threshold) ** 2, 3) if threshold else None


def _trial_block(trial: Trial, arm: dict[str, Any]) -> dict[str, Any]:
    template = getattr(trial.instance, "template", None)
    return {
        "id": trial.pk,
        "period": trial.period,
        "session": trial.session_index,
        "condition": trial.arm.condition,
        "arm": arm.get("name", trial.arm.name),
        "ai_mode": arm.get("ai_mode", trial.arm.ai_mode),
        "template": trial.template_slug,
        "difficulty": template.difficulty if template is not None else None,
        "status": trial.status,
        "started_at": trial.started_at.isoformat() if trial.started_at else None,
        "ended_at": trial.ended_at.isoformat() if trial.ended_at else None,
        "duration_s": trial.duration_s,
    }


def trial_report(
    trial: Trial,
    *,
    for_participant: bool,
    metrics: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The score report of one trial as plain JSON. ``metrics`` (tokens, AI requests) come
    from the ``study.metrics`` registry unless given."""
    evaluation = trial.evaluation
    graded = evaluation is not None and evaluation.status == "done" and bool(evaluation.report)
    full: dict[str, Any] | None = evaluation.report if graded and evaluation else None
    report = None
    if full is not None:
        report = participant_view(full) if for_participant else copy.deepcopy(full)
    arm = arm_config(trial)
    ai = arm.get("ai_mode", trial.arm.ai_mode) != "none"
    if metrics is None and ai:
        metrics = trial_metrics([trial.pk]).get(trial.pk, {})
    efficiency = (report or {}).get("efficiency") or {}
    overall = bool(report["overall_pass"]) if report is not None else None
    if report is None and trial.status == Trial.Status.EXPIRED and evaluation is None:
        overall = False  # time ran out with nothing to submit
    summary = {
        "overall_pass": overall,
        "partial_pass": report.get("partial_pass")
        if report
        else (0.0 if overall is False else None),
        "checks": report.get("checks") if report else None,
        "completion_time_s": par_completion_s(
            status=trial.status,
            graded=graded or overall is False,
            overall_pass=overall,
            reported_s=report.get("completion_time_s") if report else None,
            duration_s=trial.duration_s,
            limit_s=int(arm["time_limit_min"]) * 60,
        ),
        "par_label": par_label([int(arm["time_limit_min"])]),
        "time_limit_min": int(arm["time_limit_min"]),
        "peak_memory_kib": peak_memory_kib(full) if full else None,
        "time_ratio": efficiency.get("time_ratio"),
        "time_threshold_ratio": efficiency.get("time_threshold_ratio"),
        "time_ok": efficiency.get("time_ok"),
        "naive_ratio": naive_ratio(report) if report else None,
        "memory_net_kib": efficiency.get("memory_net_kib"),
        "memory_threshold_kib": efficiency.get("memory_threshold_kib"),
        "memory_ok": efficiency.get("memory_ok"),
        "error": report.get("error") if report else None,
    }
    return {
        "schema": SCHEMA,
        "audience": "participant" if for_participant else "researcher",
        "trial": _trial_block(trial, arm),
        "grading": (
            {
                "status": evaluation.status,
                "done": evaluation.tests_done,
                "total": evaluation.tests_total,
            }
            if evaluation is not None
            else None
        ),
        "summary": summary,
        "ai": (
            {
                "tokens": int((metrics or {}).get("tokens", 0)),
                "ai_requests": int((metrics or {}).get("ai_requests", 0)),
            }
            if ai
            else None
        ),
        "report": report,
    }


def efficiency_figure(report: dict[str, Any], *, label: str = "Submission") -> go.Figure:
    """Two panels: the time ratio against rho* (log scale, with the efficient reference at 1
    and the naive reference at N/E), and net peak memory against its threshold (MiB).

    ``report`` is an engine report or its participant view."""
    efficiency = report.get("efficiency") or {}
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("Running time (x efficient reference)", "Extra memory (MiB)"),
        horizontal_spacing=0.15,
    )
    ratio = efficiency.get("time_ratio")
    threshold = efficiency.get("time_threshold_ratio")
    naive = naive_ratio(report)
    time_ok = bool(efficiency.get("time_ok"))
    references = [("Efficient reference", 1.0, "circle-open")]
    if naive:
        references.append(("Naive reference", naive, "square-open"))
    for name, x, symbol in references:
        fig.add_trace(
            go.Scatter(
                name=name,
                x=[x],
                y=[0],
                mode="markers+text",
                text=[name.split()[0].lower()],
                textposition="top center",
                marker={"symbol": symbol, "size": 14, "color": COLOURS["reference"]},
                hovertemplate=f"{name}: %{{x:.2f}}x<extra></extra>",
            ),
            row=1,
            col=1,
        )
    if threshold:
        fig.add_trace(
            go.Scatter(
                name=f"Threshold {RHO}*",
                x=[threshold, threshold],
                y=[-1, 1],
                mode="lines",
                line={"color": COLOURS["threshold"], "dash": "dash", "width": 2},
                hovertemplate=f"threshold {RHO}* = {threshold:.2f}x<extra></extra>",
            ),
            row=1,
            col=1,
        )
    if ratio is not None:
        fig.add_trace(
            go.Scatter(
                name=label,
                x=[ratio],
                y=[0],
                mode="markers",
                marker={
                    "symbol": "diamond",
                    "size": 18,
                    "color": COLOURS["ok" if time_ok else "fail"],
                },
                hovertemplate="submission: %{x:.2f}x<extra></extra>",
            ),
            row=1,
            col=1,
        )
    else:
        fig.add_annotation(
            text="time limit reached: no ratio",
            x=0.2,
            y=0.1,
            xref="paper",
            yref="paper",
            showarrow=False,
        )
    memory = efficiency.get("memory_net_kib")
    memory_threshold = efficiency.get("memory_threshold_kib")
    if memory is not None:
        fig.add_trace(
            go.Bar(
                name="Extra memory",
                x=[0],
                y=[round(memory / 1024, 2)],
                width=[0.4],
                marker_color=COLOURS["ok" if efficiency.get("memory_ok") is not False else "fail"],
                hovertemplate="%{y:.2f} MiB<extra></extra>",
            ),
            row=1,
            col=2,
        )
    if memory_threshold is not None:
        fig.add_trace(
            go.Scatter(
                name="Memory threshold",
                x=[-0.5, 0.5],
                y=[round(memory_threshold / 1024, 2)] * 2,
                mode="lines",
                line={"color": COLOURS["threshold"], "dash": "dash", "width": 2},
                hovertemplate="threshold %{y:.2f} MiB<extra></extra>",
            ),
            row=1,
            col=2,
        )
    highest = max(x for x in (1.0, naive, threshold, ratio) if x)
    fig.update_xaxes(
        type="log",
        title_text="ratio (log scale)",
        range=[math.log10(0.7), math.log10(highest * 1.5)],
        tickvals=[v for v in LOG_TICKS if v <= highest * 1.5],
        row=1,
        col=1,
    )
    fig.update_xaxes(range=[-0.6, 0.6], tickvals=[0], ticktext=[label.lower()], row=1, col=2)
    fig.update_yaxes(visible=False, range=[-1, 1], row=1, col=1)
    fig.update_yaxes(title_text="MiB", rangemode="tozero", row=1, col=2)
    fig.update_layout(
        height=320,
        margin={"l": 40, "r": 20, "t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.25},
        template="plotly_white",
    )
    return fig
