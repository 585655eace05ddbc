"""Score reports (participants and researchers), the live monitor and the results dashboard.

Participants reach only their own trials (``get_trial_for_participant``: someone else's trial
is a 404) and only once the study's release policy allows (``report_released``; before that a
friendly 403 page). Researchers reach only the studies they are on (``study.access``); other
signed-in users get a 403.

Two views answer HTML fragments for htmx, rendered from the same partial templates as their
pages, so that the browser never rebuilds them: ``trial_report_fragment`` (the report body,
loaded by the workspace and the upload page once grading is done) and ``monitor_rows`` (the
monitor's rows with the summary cards out of band, polled and pushed by ``monitor.js``).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from evaluation.grading import par_label
from study.access import (
    get_own_trial,
    get_study_for_researcher,
    get_trial_for_researcher,
    researcher_only,
)
from study.models import Participant, Study, Trial
from study.results import dashboard as results_data
from study.results import monitor as monitor_data
from study.results.release import report_released
from study.results.reports import efficiency_figure, trial_report

NOT_RELEASED = {
    Study.ReleasePolicy.IMMEDIATELY: "Your report appears here as soon as grading has finished.",
    Study.ReleasePolicy.AFTER_SESSION: "Reports are shown once you have finished this session.",
    Study.ReleasePolicy.STUDY_END: "Reports are shown when the study has closed for everyone.",
    Study.ReleasePolicy.NEVER: "This study does not show score reports to participants.",
}


def _minutes(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 60:.1f} min"


def _report_context(
    trial: Trial, *, for_participant: bool, with_figure: bool = True
) -> dict[str, Any]:
    """The context of ``_report_body.html``. ``with_figure=False`` for pages without plotly
    (the fragment): the efficiency section then keeps its sentence but has no plot."""
    data = trial_report(trial, for_participant=for_participant)
    efficiency = data["report"] is not None and bool(data["report"].get("efficiency"))
    figure = None
    if efficiency and with_figure:
        label = "Your solution" if for_participant else "Submission"
        figure = json.loads(efficiency_figure(data["report"], label=label).to_json())
    summary = data["summary"]
    return {
        "trial": trial,
        "data": data,
        "summary": summary,
        "tests": (data["report"] or {}).get("tests", []),
        "hidden_summary": (data["report"] or {}).get("hidden_summary", []),
        "completion": _minutes(summary["completion_time_s"]),
        "partial_percent": (
            None if summary["partial_pass"] is None else round(100 * summary["partial_pass"])
        ),
        "peak_memory_mib": (
            None if summary["peak_memory_kib"] is None else summary["peak_memory_kib"] / 1024
        ),
        "efficiency": efficiency,
        "figure": figure,
        "for_participant": for_participant,
    }


def _participant_trial(request: HttpRequest, trial_id: int) -> tuple[Trial, str]:
    """The participant's own trial and, when its report is not released, why not."""
    trial = get_own_trial(request.user, trial_id)
    participant = trial.participant
    if report_released(trial, timezone.now()):
        return trial, ""
    policy = Study.ReleasePolicy(participant.study.report_release)
    evaluation = trial.evaluation
    if policy == Study.ReleasePolicy.NEVER:
        return trial, NOT_RELEASED[policy]
    if evaluation is None:
        return trial, "There is no graded submission for this task."
    if evaluation.status != "done":
        later = "" if policy == Study.ReleasePolicy.IMMEDIATELY else " " + NOT_RELEASED[policy]
        return trial, "Your solution is still being graded." + later
    return trial, NOT_RELEASED[policy]


@login_required(login_url="/")
def trial_report_page(request: HttpRequest, trial_id: int) -> HttpResponse:
    trial, reason = _participant_trial(request, trial_id)
    if reason:
        context = {"trial": trial, "reason": reason, "participant": trial.participant}
        return render(request, "study/results/report_unavailable.html", context, status=403)
    context = _report_context(trial, for_participant=True)
    context["participant"] = trial.participant
    return render(request, "study/results/participant_report.html", context)


@login_required(login_url="/")
@require_GET
def trial_report_fragment(request: HttpRequest, trial_id: int) -> HttpResponse:
    """The report body alone (no plot), for htmx; the same checks and 403 as the page."""
    trial, reason = _participant_trial(request, trial_id)
    if reason:
        context = {"reason": reason}
        return render(request, "study/results/_report_unavailable.html", context, status=403)
    context = _report_context(trial, for_participant=True, with_figure=False)
    return render(request, "study/results/_report_fragment.html", context)


@login_required(login_url="/")
def trial_report_json(request: HttpRequest, trial_id: int) -> JsonResponse:
    trial, reason = _participant_trial(request, trial_id)
    if reason:
        return JsonResponse({"released": False, "reason": reason}, status=403)
    return JsonResponse({"released": True, **trial_report(trial, for_participant=True)})


@researcher_only
def researcher_trial_report(request: HttpRequest, trial_id: int) -> HttpResponse:
    trial = get_trial_for_researcher(request.user, trial_id)
    context = _report_context(trial, for_participant=False)
    context["study"] = trial.participant.study
    return render(request, "study/results/researcher_report.html", context)


@researcher_only
def researcher_trial_report_json(request: HttpRequest, trial_id: int) -> JsonResponse:
    trial = get_trial_for_researcher(request.user, trial_id)
    return JsonResponse(trial_report(trial, for_participant=False))


def _monitor_context(study: Study, filters: monitor_data.Filters) -> dict[str, Any]:
    """What ``_monitor_rows.html`` and ``_monitor_summary.html`` need: one page of the monitor
    and the links that keep its filters."""
    data = monitor_data.monitor_page(study, filters, timezone.now())
    number, pages = data["page"]["number"], data["page"]["pages"]
    query = urlencode(filters.query(page=number))
    rows_url = reverse("study:monitor_rows", args=[study.slug])
    return {
        "study": study,
        "data": data,
        "filters": filters,
        "previous_url": "?" + urlencode(filters.query(page=number - 1)) if number > 1 else None,
        "next_url": "?" + urlencode(filters.query(page=number + 1)) if number < pages else None,
        "rows_url": f"{rows_url}?{query}" if query else rows_url,
    }


@researcher_only
def monitor(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    context = _monitor_context(study, monitor_data.Filters.parse(request.GET))
    context["stages"] = [("active", "Still taking part"), *Participant.Stage.choices]
    context["tracks"] = list(study.tracks.values_list("code", flat=True))
    context["ws_path"] = f"/ws/studies/{study.slug}/monitor/"
    return render(request, "study/results/monitor.html", context)


@researcher_only
@require_GET
def monitor_rows(request: HttpRequest, slug: str) -> HttpResponse:
    """The monitor's rows for htmx, with the summary cards as an out-of-band swap."""
    study = get_study_for_researcher(request.user, slug)
    context = _monitor_context(study, monitor_data.Filters.parse(request.GET))
    context["oob"] = True
    return render(request, "study/results/_monitor_rows.html", context)


@researcher_only
def monitor_json(request: HttpRequest, slug: str) -> JsonResponse:
    study = get_study_for_researcher(request.user, slug)
    filters = monitor_data.Filters.parse(request.GET)
    return JsonResponse(monitor_data.monitor_page(study, filters, timezone.now()))


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def _table2_display(table: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 2 as strings for the template (one entry per section)."""
    sections = []
    for section in table["sections"]:
        lines = []
        for line in section["rows"]:
            cells = []
            for c in line["cells"]:
                low, high = c["pass_ci"]
                cells.append(
                    {
                        "n": c["n"],
                        "n_participants": c["n_participants"],
                        "pass": _percent(c["pass_at_1"]),
                        "pass_ci": (
                            f"{100 * low:.0f} to {100 * high:.0f}" if low is not None else ""
                        ),
                        "partial": _percent(c["partial_pass"]),
                        "time": _minutes(c["completion_time_s"]),
                        "tokens": "—" if c["tokens"] is None else f"{c['tokens']:,.0f}",
                    }
                )
            lines.append({"label": line["label"], "cells": cells})
        sections.append({"title": section["title"], "rows": lines})
    return sections


@researcher_only
def results(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    data = results_data.dashboard(study)
    context = {
        "study": study,
        "data": data,
        "conditions": data["table2"]["conditions"],
        "table_columns": 1 + 5 * len(data["table2"]["conditions"]),
        "sections": _table2_display(data["table2"]),
        "n_trials": len(data["rows"]),
        "par_label": par_label(r["time_limit_min"] for r in data["rows"]),
        "n_participants": len({r["participant"] for r in data["rows"]}),
        "figure_names": [
            ("pass_rates", "Pass rates"),
            ("completion_times", "Completion times"),
            ("confidence_load", "Confidence and workload"),
            ("ai_roles", "Roles of the AI assistant"),
        ],
    }
    return render(request, "study/results/results.html", context)


@researcher_only
def results_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    body = results_data.table_csv(results_data.trial_table(study))
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-trials.csv"'
    return response
