"""Researcher pages of the design preview: the study's design per track, a simulated
allocation run in the worker (``study.run_design_preview``) with its progress, the balance it
reaches, the warnings, and the allocation table as CSV.

Staff only, and only for studies the researcher is on (``study.access``). Starting a preview
is a POST; the pages themselves never change anything.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from study.access import (
    get_design_preview_for_researcher,
    get_study_for_researcher,
    researcher_only,
)
from study.assignment.balance import design_summary
from study.models import DesignPreview
from study.previews.services import live_progress, start_design_preview

CSV_COLUMNS = ("order", "track", "sequence", "tasks", "outcome", "replaces", "exact_fill")


def _status(preview: DesignPreview) -> dict[str, Any]:
    return {
        "id": preview.pk,
        "study": preview.study.slug,
        "status": preview.status,
        "progress": live_progress(preview),
        "error": preview.error,
        "finished": preview.finished,
        "warnings": preview.result.get("warnings", []),
        "csv_url": (
            reverse("study:design_preview_csv", args=[preview.pk])
            if preview.status == DesignPreview.Status.DONE
            else None
        ),
    }


@researcher_only
@require_GET
def preview_page(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    preview = DesignPreview.objects.filter(study=study).select_related("study").first()
    return render(
        request,
        "study/previews/preview.html",
        {
            "study": study,
            "tracks": design_summary(study),
            "preview": preview,
            "progress": live_progress(preview) if preview else 0,
        },
    )


@researcher_only
@require_POST
def preview_start(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    raw = request.POST.get("seed", "").strip()
    if raw and not (raw.isascii() and raw.isdigit() and int(raw) < 2**31):
        messages.error(request, "The seed must be a whole number from 0 to 2147483647.")
        return redirect("study:design_preview", slug=study.slug)
    preview = start_design_preview(study, user=request.user, seed=int(raw) if raw else None)
    messages.success(
        request,
        f"Design preview #{preview.pk} is queued; it runs in the background and this page "
        "shows its progress.",
    )
    return redirect("study:design_preview", slug=study.slug)


@researcher_only
@require_GET
def preview_status(request: HttpRequest, preview_id: int) -> HttpResponse:
    preview = get_design_preview_for_researcher(request.user, preview_id)
    if request.headers.get("HX-Request"):
        return render(
            request,
            "study/previews/_preview_result.html",
            {"preview": preview, "progress": live_progress(preview)},
        )
    return JsonResponse(_status(preview))


@researcher_only
@require_GET
def preview_csv(request: HttpRequest, preview_id: int) -> HttpResponse:
    preview = get_design_preview_for_researcher(request.user, preview_id)
    if preview.status != DesignPreview.Status.DONE:
        return HttpResponse(
            "This preview has no allocation table yet (it is not finished).",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in preview.result.get("allocations", []):
        writer.writerow(
            [
                " ".join(row[c]) if c == "tasks" else ("" if row[c] is None else row[c])
                for c in CSV_COLUMNS
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    name = f"{preview.study.slug}-design-preview-{preview.pk}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
