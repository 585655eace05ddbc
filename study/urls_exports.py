"""Routes of the researcher export pages, included by ``study/urls.py`` (namespace ``study``).

- ``study:export_list`` — ``researcher/studies/<slug>/exports/``
- ``study:export_start`` — ``researcher/studies/<slug>/exports/start/`` (POST)
- ``study:export_status`` — ``researcher/exports/<id>/status/`` (JSON; an HTML row for htmx)
- ``study:export_download`` — ``researcher/exports/<id>/download/`` (the zip)
"""

from __future__ import annotations

from django.urls import path

from study import views_exports

urlpatterns = [
    path("researcher/studies/<slug:slug>/exports/", views_exports.export_list, name="export_list"),
    path(
        "researcher/studies/<slug:slug>/exports/start/",
        views_exports.export_start,
        name="export_start",
    ),
    path(
        "researcher/exports/<int:job_id>/status/",
        views_exports.export_status,
        name="export_status",
    ),
    path(
        "researcher/exports/<int:job_id>/download/",
        views_exports.export_download,
        name="export_download",
    ),
]
