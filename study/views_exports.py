"""Researcher pages of IRB exports: list and start exports, poll progress, download the zip.

Staff only, and only for studies the researcher is on (``study.access``): another study's
export is a 404, like a missing one. Packages are built in the worker (``study.build_export``),
never inside a request.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from study import audit
from study.access import get_study_for_researcher, studies_for_researcher
from study.exports.jobs import start_export, zip_file
from study.models import ExportJob, User

View = Callable[..., HttpResponseBase]


def staff_only(view: View) -> View:
    @wraps(view)
    @login_required
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_staff:
            raise PermissionDenied("Exports are for researchers.")
        return view(request, *args, **kwargs)

    return wrapped


def _job(user: User | Any, job_id: int) -> ExportJob:
    try:
        return ExportJob.objects.select_related("study").get(
            pk=job_id, study__in=studies_for_researcher(user)
        )
    except ExportJob.DoesNotExist:
        raise Http404("no such export") from None


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


@staff_only
@require_GET
def export_list(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_researcher(request.user, slug)
    jobs = list(ExportJob.objects.filter(study=study).select_related("study")[:50])
    return render(
        request,
        "study/exports/list.html",
        {"study": study, "jobs": jobs, "profiles": ExportJob.Profile.choices},
    )


@staff_only
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


@staff_only
@require_GET
def export_status(request: HttpRequest, job_id: int) -> HttpResponse:
    job = _job(request.user, job_id)
    if request.headers.get("HX-Request"):
        return render(request, "study/exports/_job_row.html", {"job": job})
    return JsonResponse(_status(job))


@staff_only
@require_GET
def export_download(request: HttpRequest, job_id: int) -> HttpResponseBase:
    job = _job(request.user, job_id)
    path = zip_file(job)
    if path is None:
        raise Http404("this export has no package to download")
    audit.record(
        "export_download",
        actor=request.user,
        object_type="export",
        object_id=job.pk,
        details={"study": job.study.slug, "profile": job.profile, "sha256": job.sha256},
    )
    response = FileResponse(
        path.open("rb"), as_attachment=True, filename=path.name, content_type="application/zip"
    )
    response["Cache-Control"] = "private, no-store"
    return response
