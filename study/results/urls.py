"""``/study/results/``: score reports, the live monitor and the results dashboard.

Participants reach ``trials/<id>/report/`` (and its htmx fragment ``report/fragment/``) for their
own trials; everything else is for the researchers of the study (``<slug>/monitor/rows/`` is
the monitor's htmx partial).
"""

from __future__ import annotations

from django.urls import path

from study.results import views

urlpatterns = [
    path("trials/<int:trial_id>/report/", views.trial_report_page, name="trial_report"),
    path(
        "trials/<int:trial_id>/report/fragment/",
        views.trial_report_fragment,
        name="trial_report_fragment",
    ),
    path("trials/<int:trial_id>/report.json", views.trial_report_json, name="trial_report_json"),
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
    path("<slug:slug>/monitor/", views.monitor, name="monitor"),
    path("<slug:slug>/monitor/rows/", views.monitor_rows, name="monitor_rows"),
    path("<slug:slug>/monitor.json", views.monitor_json, name="monitor_json"),
    path("<slug:slug>/dashboard/", views.results, name="results"),
    path("<slug:slug>/trials.csv", views.results_csv, name="results_csv"),
]
