"""Routes of the human study."""

from __future__ import annotations

from django.urls import path

from study import views

app_name = "study"

urlpatterns = [
    path("researcher/", views.researcher_home, name="researcher_home"),
]
