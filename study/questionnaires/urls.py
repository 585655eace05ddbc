"""``/study/questionnaires/``: screening, after-trial and after-study questionnaires."""

from __future__ import annotations

from django.urls import path

from study.questionnaires import views

urlpatterns = [
    path("screening/", views.screening, name="screening"),
    path("post-trial/<int:trial_id>/", views.post_trial, name="post_trial"),
    path("post-study/", views.post_study, name="post_study"),
]
