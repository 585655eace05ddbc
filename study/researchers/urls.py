"""``/study/researchers/``: the researcher's start page (namespace ``study``)."""

from __future__ import annotations

from django.urls import path

from study.researchers import views

urlpatterns = [
    path("", views.researcher_home, name="researcher_home"),
]
