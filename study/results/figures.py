"""Figures of the results dashboard: pure functions from trial rows to plotly figures
(tested through ``fig.to_dict()``; rendered in the page by ``static/js/figures.js``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from evaluation.grading import par_label
from study.results.table2 import DIFFICULTY_ORDER, Row, cell, conditions, ordered


def _label(c: dict[str, Any]) -> str:
    return f"{c['condition']}: {c['arm']}"


def pass_rate_figure(rows: Sequence[Row]) -> go.Figure:
    """Overall pass@1 per condition, overall and by difficulty, with Wilson 95 % intervals."""
    fig = go.Figure()
    groups = ["All", *ordered((r["difficulty"] for r in rows), DIFFICULTY_ORDER)]
    for c in conditions(rows):
        ys, lows, highs, texts = [], [], [], []
        for group in groups:
            cl = cell(
                [
                    r
                    for r in rows
                    if r["condition"] == c["condition"] and group in ("All", r["difficulty"])
                ]
            )
            rate, (low, high) = cl["pass_at_1"], cl["pass_ci"]
            ys.append(None if rate is None else round(100 * rate, 1))
            lows.append(None if rate is None else round(100 * (rate - low), 1))
            highs.append(None if rate is None else round(100 * (high - rate), 1))
            texts.append(f"n = {cl['n']}")
        fig.add_trace(
            go.Bar(
                name=_label(c),
                x=groups,
                y=ys,
                text=texts,
                textposition="outside",
                error_y={"type": "data", "symmetric": False, "array": highs, "arrayminus": lows},
            )
        )
    fig.update_layout(
        barmode="group",
        yaxis={"title": "overall pass@1 (%)", "range": [0, 105]},
        title="Overall pass rate with 95 % Wilson intervals",
    )
    return _style(fig)


def completion_time_figure(rows: Sequence[Row]) -> go.Figure:
    fig = go.Figure()
    for c in conditions(rows):
        minutes = [
            round(r["completion_time_s"] / 60, 2)
            for r in rows
            if r["condition"] == c["condition"] and r["completion_time_s"] is not None
        ]
        fig.add_trace(go.Box(name=_label(c), y=minutes, boxmean=True, boxpoints="all", jitter=0.4))
    limits = [int(r["time_limit_min"]) for r in rows if r.get("time_limit_min")]
    fig.update_layout(
        yaxis={
            "title": f"completion time, {par_label(limits)} (min)",
            "range": [0, max(limits, default=60) + 2],
        },
        title="Completion times (failed or timed-out trials count as the whole time limit)",
        showlegend=False,
    )
    return _style(fig)


def confidence_load_figure(rows: Sequence[Row]) -> go.Figure:
    fig = go.Figure()
    for c in conditions(rows):
        pairs = [
            (r["nasa_tlx"], r["confidence"], r["overall_pass"])
            for r in rows
            if r["condition"] == c["condition"]
            and r["nasa_tlx"] is not None
            and r["confidence"] is not None
        ]
        fig.add_trace(
            go.Scatter(
                name=_label(c),
                x=[p[0] for p in pairs],
                y=[p[1] for p in pairs],
                mode="markers",
                marker={"size": 10, "opacity": 0.7},
                customdata=[["passed" if p[2] else "did not pass"] for p in pairs],
                hovertemplate="TLX %{x:.0f}, confidence %{y:.0f} (%{customdata[0]})",
            )
        )
    fig.update_layout(
        xaxis={"title": "workload, raw NASA-TLX (0-100)", "range": [0, 100]},
        yaxis={"title": "confidence the solution is correct (1-7)", "range": [0.5, 7.5]},
        title="Confidence against workload, per trial (post-trial questionnaire)",
    )
    return _style(fig)


def ai_roles_figure(roles: Sequence[tuple[str, int]]) -> go.Figure:
    ordered = list(reversed(roles))  # largest on top
    fig = go.Figure(
        go.Bar(
            name="participants",
            x=[n for _, n in ordered],
            y=[label for label, _ in ordered],
            orientation="h",
        )
    )
    fig.update_layout(
        xaxis={"title": "participants who ticked it"},
        title="What the AI assistant did (post-study questionnaire)",
        height=max(300, 60 + 40 * len(roles)),
    )
    if not roles:
        fig.add_annotation(
            text="No answers yet", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
        )
    return _style(fig)


def _style(fig: go.Figure) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def all_figures(
    rows: Sequence[Row], *, ai_roles: Sequence[tuple[str, int]] = ()
) -> dict[str, go.Figure]:
    return {
        "pass_rates": pass_rate_figure(rows),
        "completion_times": completion_time_figure(rows),
        "confidence_load": confidence_load_figure(rows),
        "ai_roles": ai_roles_figure(ai_roles),
    }
