"""``/study/trials/``: the upload page, starting a trial, task files, grading status."""

from __future__ import annotations

from django.urls import path

from study.trials import views

urlpatterns = [
    path("<int:trial_id>/", views.trial, name="trial"),
    path("<int:trial_id>/start/", views.trial_start, name="trial_start"),
    path("<int:trial_id>/files/<path:name>", views.trial_file, name="trial_file"),
    path("<int:trial_id>/status/", views.trial_status, name="trial_status"),
]
