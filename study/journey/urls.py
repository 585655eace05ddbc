"""``/study/journey/``: the participant's path between tasks (namespace ``study``)."""

from __future__ import annotations

from django.urls import path

from study.journey import views

urlpatterns = [
    path("", views.next_page, name="next"),
    path("welcome/", views.welcome, name="welcome"),
    path("waiting/", views.waiting, name="waiting"),
    path("done/", views.done, name="done"),
    path("withdraw/", views.withdraw, name="withdraw"),
]
