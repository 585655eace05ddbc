"""``/study/assignment/``: the design preview of a study (researchers only).

- ``study:design_preview`` — ``<slug>/preview/`` (the design, the latest preview, the start form)
- ``study:design_preview_start`` — ``<slug>/preview/start/`` (POST)
- ``study:design_preview_status`` — ``previews/<id>/status/`` (JSON; the result panel for htmx)
- ``study:design_preview_csv`` — ``previews/<id>/allocation.csv`` (the simulated allocation)
"""

from __future__ import annotations

from django.urls import path

from study.assignment import views

urlpatterns = [
    path("<slug:slug>/preview/", views.preview_page, name="design_preview"),
    path("<slug:slug>/preview/start/", views.preview_start, name="design_preview_start"),
    path("previews/<int:preview_id>/status/", views.preview_status, name="design_preview_status"),
    path("previews/<int:preview_id>/allocation.csv", views.preview_csv, name="design_preview_csv"),
]
