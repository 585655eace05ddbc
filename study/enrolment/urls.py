"""``/study/enrolment/``: personal login links, the recruitment link, consent."""

from __future__ import annotations

from django.urls import path

from study.enrolment import views

urlpatterns = [
    path("login/<str:token>/", views.login_link_confirm, name="login_link_confirm"),
    path("join/<str:recruitment_token>/", views.join, name="join"),
    path("consent/", views.consent, name="consent"),
]
