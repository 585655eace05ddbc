"""``/study/exports/``: IRB export packages of a study (researchers only).

- ``study:export_list`` — ``<slug>/`` (the study's exports and the start form)
- ``study:export_start`` — ``<slug>/start/`` (POST)
- ``study:export_status`` — ``jobs/<id>/status/`` (JSON; an HTML row for htmx)
- ``study:export_download`` — ``jobs/<id>/download/`` (the zip)
"""

from __future__ import annotations

from django.urls import path

from study.exports import views

urlpatterns = [
    path("<slug:slug>/", views.export_list, name="export_list"),
    path("<slug:slug>/start/", views.export_start, name="export_start"),
    path("jobs/<int:job_id>/status/", views.export_status, name="export_status"),
    path("jobs/<int:job_id>/download/", views.export_download, name="export_download"),
]
