"""Routes of score reports, the live monitor and the results dashboard (included by
``study.urls``, namespace ``study``)."""

from __future__ import annotations

from django.urls import path

from study import views_results as views

urlpatterns = [
    # Participants: their own trials, when the release policy allows.
    path("trials/<int:trial_id>/report/", views.trial_report_page, name="trial_report"),
    path("trials/<int:trial_id>/report.json", views.trial_report_json, name="trial_report_json"),
    # Researchers: any trial of their studies.
    path(
        "researcher/trials/<int:trial_id>/report/",
        views.researcher_trial_report,
        name="researcher_trial_report",
    ),
    path(
        "researcher/trials/<int:trial_id>/report.json",
        views.researcher_trial_report_json,
        name="researcher_trial_report_json",
    ),
    path("researcher/<slug:slug>/monitor/", views.monitor, name="monitor"),
    path("researcher/<slug:slug>/monitor.json", views.monitor_json, name="monitor_json"),
    path("researcher/<slug:slug>/results/", views.results, name="results"),
    path("researcher/<slug:slug>/results.csv", views.results_csv, name="results_csv"),
]
