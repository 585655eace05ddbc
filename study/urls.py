"""Routes of the human study (namespace ``study``)."""

from __future__ import annotations

from django.urls import path

from study import views
from study.urls_accounts import urlpatterns as account_patterns
from study.urls_exports import urlpatterns as export_patterns
from study.urls_results import urlpatterns as result_patterns

app_name = "study"

urlpatterns = [
    path("", views.next_page, name="next"),
    path("welcome/", views.welcome, name="welcome"),
    path("consent/", views.consent, name="consent"),
    path("screening/", views.screening, name="screening"),
    path("trials/<int:trial_id>/", views.trial, name="trial"),
    path("trials/<int:trial_id>/files/<str:name>", views.trial_file, name="trial_file"),
    path("trials/<int:trial_id>/status/", views.trial_status, name="trial_status"),
    path("trials/<int:trial_id>/questionnaire/", views.post_trial, name="post_trial"),
    path("waiting/", views.waiting, name="waiting"),
    path("post-study/", views.post_study, name="post_study"),
    path("done/", views.done, name="done"),
    path("withdraw/", views.withdraw, name="withdraw"),
    path("researcher/", views.researcher_home, name="researcher_home"),
]
urlpatterns += account_patterns  # personal login links and the recruitment link
urlpatterns += result_patterns  # score reports, live monitor, results dashboard
urlpatterns += export_patterns  # IRB export packages
