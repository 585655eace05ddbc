"""Views of the human study."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def researcher_home(request: HttpRequest) -> HttpResponse:
    """The researcher's start page: configure studies, watch them, secure the account."""
    if not request.user.is_staff:
        raise PermissionDenied("This page is for researchers.")
    return render(request, "study/researcher_home.html")
