"""Researcher pages of IRB exports: list and start exports, poll progress, download the zip.

Staff only, and only for studies the researcher is on (``study.access``): another study's
export is a 404, like a missing one. Packages are built in the worker (``study.build_export``),
never inside a request.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from study.access import get_export_job_for_researcher, get_study_for_researcher, researcher_only
from study.exports.services import open_package, start_export
from study.models import ExportJob


def _status(job: ExportJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "study": job.study.slug,
        "profile": job.profile,
        "status": job.status,
        "progress": job.progress,
        "note": job.progress_note,
        "error": job.error,
        "finished": job.finished,
        "sha256": job.sha256,
        "size_bytes": job.size_bytes,
        "summary": job.summary,
        "download_url": (
            reverse("study:export_download", args=[job.pk])
            if job.status == ExportJob.Status.DONE
            else None
        ),
    }


@researcher_only
@require_GET
def export_list(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    jobs = list(ExportJob.objects.filter(study=study).select_related("study")[:50])
    return render(
        request,
        "study/exports/list.html",
        {"study": study, "jobs": jobs, "profiles": ExportJob.Profile.choices},
    )


@researcher_only
@require_POST
def export_start(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    profile = request.POST.get("profile", "")
    if profile not in ExportJob.Profile.values:
        messages.error(request, "Choose the public or the internal profile.")
        return redirect("study:export_list", slug=study.slug)
    scope = request.POST.get("scope", "")[:200]
    job = start_export(study, profile, user=request.user, scope=scope)
    messages.success(
        request, f"Export #{job.pk} ({job.get_profile_display()}) is queued; it builds in the "
        "background and this page shows its progress."
    )  # fmt: skip
    return redirect("study:export_list", slug=study.slug)


@researcher_only
@require_GET
def export_status(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_export_job_for_researcher(request.user, job_id)
    if request.headers.get("HX-Request"):
        return render(request, "study/exports/_job_row.html", {"job": job})
    return JsonResponse(_status(job))


@researcher_only
@require_GET
def export_download(request: HttpRequest, job_id: int) -> HttpResponseBase:
    job = get_export_job_for_researcher(request.user, job_id)
    path = open_package(job, actor=request.user)
    if path is None:
        raise Http404("this export has no package to download")
    response = FileResponse(
        path.open("rb"), as_attachment=True, filename=path.name, content_type="application/zip"
    )
    response["Cache-Control"] = "private, no-store"
    return response
