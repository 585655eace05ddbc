"""Route of the archive submission endpoint (included into ``ide_bridge.urls``)."""

from __future__ import annotations

from django.urls import URLPattern, path

from ide_bridge import views_submissions

urlpatterns: list[URLPattern] = [
    path(
        "trials/<int:trial_id>/submission",
        views_submissions.submission,
        name="submission",
    ),
]
