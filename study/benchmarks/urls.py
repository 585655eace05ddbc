"""``/study/benchmarks/``: sweeps, their runs and the leaderboard (namespace ``study``)."""

from __future__ import annotations

from django.urls import path, re_path

from study.benchmarks import views

EXPORT = r"(?P<fmt>json|csv|md)"

urlpatterns = [
    path("", views.sweep_list, name="sweep_list"),
    path("start/", views.sweep_start, name="sweep_start"),
    path("sweeps/<int:sweep_id>/", views.sweep_detail, name="sweep_detail"),
    path("sweeps/<int:sweep_id>/progress.json", views.sweep_progress, name="sweep_progress"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/intervene/", views.run_intervene, name="run_intervene"),
    path("leaderboard/", views.leaderboard_page, name="leaderboard"),
    re_path(rf"^leaderboard\.{EXPORT}$", views.leaderboard_page, name="leaderboard_export"),
    path("studies/<slug:slug>/leaderboard/", views.study_leaderboard, name="study_leaderboard"),
    re_path(
        rf"^studies/(?P<slug>[-a-zA-Z0-9_]+)/leaderboard\.{EXPORT}$",
        views.study_leaderboard,
        name="study_leaderboard_export",
    ),
]
