"""``/study/previews/``: design previews of a study (researchers only).

- ``study:design_preview`` — ``<slug>/`` (the design, the latest preview, the start form)
- ``study:design_preview_start`` — ``<slug>/start/`` (POST)
- ``study:design_preview_status`` — ``jobs/<id>/status/`` (JSON; the result panel for htmx)
- ``study:design_preview_csv`` — ``jobs/<id>/allocation.csv`` (the simulated allocation)
"""

from __future__ import annotations

from django.urls import path

from study.previews import views

urlpatterns = [
    path("<slug:slug>/", views.preview_page, name="design_preview"),
    path("<slug:slug>/start/", views.preview_start, name="design_preview_start"),
    path("jobs/<int:preview_id>/status/", views.preview_status, name="design_preview_status"),
    path("jobs/<int:preview_id>/allocation.csv", views.preview_csv, name="design_preview_csv"),
]
