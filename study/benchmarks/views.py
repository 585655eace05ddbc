"""``/study/benchmarks/``: sweeps of the LLM arm and the leaderboard.

Researchers (and superusers) with ``evaluation.view_sweep`` see every sweep; starting one needs
``evaluation.add_sweep`` and always queues its units to the Celery workers (never inside a
request); a manual intervention on a C1 run needs ``evaluation.add_intervention``. A study's
leaderboard (its human conditions beside the models) is for that study's researchers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.llm.datasets import DatasetError, find_dataset
from evaluation.llm.interventions import InterventionRefused
from evaluation.llm.leaderboard import (
    Board,
    board_csv,
    board_markdown,
    leaderboard,
    pass_text,
    sections,
)
from evaluation.llm.results import KS, progress, progress_counts, sweep_results
from evaluation.models import AgentRun, Dataset, Intervention, Sweep
from study.access import (
    get_agent_run_for_researcher,
    get_study_for_researcher,
    get_sweep_for_researcher,
    researcher_only,
    sweeps_for_researcher,
)
from study.benchmarks.forms import SweepForm
from study.benchmarks.humans import study_board
from study.benchmarks.services import add_intervention, start_sweep

View = Callable[..., HttpResponseBase]
NEEDS = {
    "evaluation.view_sweep": "Seeing sweeps needs the permission to view sweeps.",
    "evaluation.add_sweep": "Starting a sweep needs the permission to add sweeps.",
    "evaluation.add_intervention": "Adding an intervention needs the permission to add them.",
}


def needs(permission: str) -> Callable[[View], View]:
    """Researchers only (``researcher_only``), and only with ``permission`` (403 otherwise)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not request.user.has_perm(permission):
                raise PermissionDenied(NEEDS[permission])
            return view(request, *args, **kwargs)

        return researcher_only(wrapped)

    return decorate


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


@needs("evaluation.view_sweep")
@require_GET
def sweep_list(request: HttpRequest) -> HttpResponse:
    sweeps = (
        sweeps_for_researcher(request.user)
        .select_related("endpoint", "dataset")
        .annotate(**progress_counts("runs__"))
        .order_by("-created_at")[:100]
    )
    rows = [
        {"sweep": s, "progress": {k: getattr(s, k) or 0 for k in progress_counts()}} for s in sweeps
    ]
    context = {"rows": rows, "can_start": request.user.has_perm("evaluation.add_sweep")}
    return render(request, "study/benchmarks/list.html", context)


@needs("evaluation.add_sweep")
@require_http_methods(["GET", "POST"])
def sweep_start(request: HttpRequest) -> HttpResponse:
    form = SweepForm(request.POST or None)
    if request.method == "POST":
        if not form.is_valid():
            return render(request, "study/benchmarks/start.html", {"form": form}, status=400)
        data = form.cleaned_data
        sweep, queued = start_sweep(
            user=request.user,  # type: ignore[arg-type]
            endpoint=data["endpoint"],
            condition=data["condition"],
            dataset=data["dataset_row"],
            instances=data["pairs"],
            samples=data["samples"],
            attempts=data["attempts"],
            budget_tokens=data["budget_tokens"],
        )
        messages.success(request, f"Sweep {sweep.pk}: {queued} units queued for the workers.")
        return redirect("study:sweep_detail", sweep_id=sweep.pk)
    return render(request, "study/benchmarks/start.html", {"form": form})


def _result_lines(results: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [*results["templates"].items(), ("All templates", results["overall"])]
    return [
        {
            "name": name,
            "n": b["n"],
            "samples": b["samples"],
            "c": b["c"],
            "pass": [_percent(b[f"pass@{k}"]) for k in KS],
            "partial": _percent(b["partial_pass"]),
            "attempts": "—" if b["attempts_mean"] is None else f"{b['attempts_mean']:.1f}",
            "tokens": b["prompt_tokens"] + b["completion_tokens"],
            "cost": f"{b['cost']:.4f}",
            "interventions": b["interventions"]["count"],
        }
        for name, b in blocks
    ]


@needs("evaluation.view_sweep")
@require_GET
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = get_sweep_for_researcher(request.user, sweep_id)
    runs = sweep.runs.order_by("pk").values(
        "pk",
        "instance__template__slug",
        "instance__seed",
        "sample",
        "status",
        "stop_reason",
        "attempts_used",
        "prompt_tokens",
        "completion_tokens",
        "evaluation__report__overall_pass",
    )[:1000]
    context = {
        "sweep": sweep,
        "progress": progress(sweep),
        "progress_url": reverse("study:sweep_progress", args=[sweep.pk]),
        "results": _result_lines(sweep_results(sweep)),
        "ks": KS,
        "runs": runs,
    }
    return render(request, "study/benchmarks/sweep.html", context)


@needs("evaluation.view_sweep")
@require_GET
def sweep_progress(request: HttpRequest, sweep_id: int) -> JsonResponse:
    return JsonResponse(progress(get_sweep_for_researcher(request.user, sweep_id)))


def _run_context(run: AgentRun, user: Any) -> dict[str, Any]:
    report = run.evaluation.report if run.evaluation else None
    requests = [
        {"request": r, "actions": json.dumps(r.actions, indent=2), "calls": r.tool_calls}
        for r in run.requests.order_by("index")
    ]
    open_c1 = run.sweep.condition == Sweep.Condition.C1 and run.status in (
        AgentRun.Status.PENDING,
        AgentRun.Status.RUNNING,
    )
    return {
        "run": run,
        "requests": requests,
        "interventions": run.interventions.select_related("author"),
        "report": report,
        "tests": (report or {}).get("tests", []),
        "categories": Intervention.Category.choices,
        "can_intervene": open_c1 and user.has_perm("evaluation.add_intervention"),
    }


@needs("evaluation.view_sweep")
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_agent_run_for_researcher(request.user, run_id)
    return render(request, "study/benchmarks/run.html", _run_context(run, request.user))


@needs("evaluation.add_intervention")
@require_POST
def run_intervene(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_agent_run_for_researcher(request.user, run_id)
    try:
        add_intervention(
            user=request.user,  # type: ignore[arg-type]
            run=run,
            category=request.POST.get("category", ""),
            message=request.POST.get("message", ""),
        )
    except InterventionRefused as exc:
        context = {**_run_context(run, request.user), "intervention_error": str(exc)}
        return render(request, "study/benchmarks/run.html", context, status=400)
    messages.success(request, "The note is recorded; the agent gets it at its next step.")
    return redirect("study:run_detail", run_id=run.pk)


# --- Leaderboard ----------------------------------------------------------------------------
def _chosen_dataset(request: HttpRequest) -> Dataset | None:
    """``?dataset=VERSION`` (or ``none``); by default the newest dataset with a sweep."""
    version = request.GET.get("dataset", "").strip()
    if version == "none":
        return None
    if version:
        return find_dataset(version)
    return Dataset.objects.filter(sweeps__purpose=Sweep.Purpose.BENCHMARK).first()


def _display(board: Board) -> list[dict[str, Any]]:
    out = []
    for section in sections(board):
        rows = []
        for row in section["rows"]:
            cells = [
                {
                    "n": c["n"],
                    "pass": pass_text(c),
                    "pass10": _percent(c["pass@10"]),
                    "partial": _percent(c["partial_pass"]),
                    "tokens": "—" if c["tokens"] is None else f"{c['tokens']:,.0f}",
                    "cost": "—" if c["cost"] is None else f"{c['cost']:.4f}",
                }
                for c in row["cells"]
            ]
            rows.append({"label": row["label"], "cells": cells})
        out.append({"title": section["title"], "rows": rows})
    return out


def _export(board: Board, fmt: str, name: str) -> HttpResponse:
    if fmt == "json":
        response = HttpResponse(json.dumps(board, indent=2), content_type="application/json")
    elif fmt == "csv":
        response = HttpResponse(board_csv(board), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(board_markdown(board), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


def _board_page(
    request: HttpRequest, board: Board, dataset: Dataset | None, **extra: Any
) -> HttpResponse:
    context = {
        "board": board,
        "dataset": dataset,
        "datasets": Dataset.objects.all()[:50],
        "sections": _display(board),
        "table_columns": 1 + 6 * len(board["columns"]),
        "query": f"?dataset={dataset.version if dataset else 'none'}",
        **extra,
    }
    return render(request, "study/benchmarks/leaderboard.html", context)


def _bad_dataset(exc: DatasetError) -> HttpResponse:
    return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")


@needs("evaluation.view_sweep")
@require_GET
def leaderboard_page(request: HttpRequest, fmt: str = "") -> HttpResponse:
    try:
        dataset = _chosen_dataset(request)
    except DatasetError as exc:
        return _bad_dataset(exc)
    board = leaderboard(dataset)
    if fmt:
        return _export(board, fmt, f"leaderboard-{(board['dataset'] or 'no-dataset')[:12]}")
    return _board_page(request, board, dataset)


@needs("evaluation.view_sweep")
@require_GET
def study_leaderboard(request: HttpRequest, slug: str, fmt: str = "") -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    try:
        dataset = _chosen_dataset(request)
    except DatasetError as exc:
        return _bad_dataset(exc)
    board, note = study_board(study, dataset)
    if fmt:
        return _export(board, fmt, f"leaderboard-{study.slug}")
    return _board_page(request, board, dataset, study=study, note=note)
