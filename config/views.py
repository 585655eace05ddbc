"""Pages that belong to no app: the landing page and the error pages."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "403.html", status=403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    # No context processors: the failure may be in one of them.
    return HttpResponse(loader.get_template("500.html").render(), status=500)
