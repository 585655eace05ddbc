"""The researcher's start page: their studies, with links to configure, watch and export."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from study.access import studies_for_researcher


@login_required
@require_GET
def researcher_home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("This page is for researchers.")
    studies = studies_for_researcher(request.user)
    return render(request, "study/researcher_home.html", {"studies": studies})
