"""``/ide/ai/<trial>/...``: the AI gateway's JSON endpoints."""

from __future__ import annotations

from django.urls import path

from ide_bridge.ai import views

urlpatterns = [
    path("<int:trial_id>/chat", views.chat, name="ai_chat"),
    path("<int:trial_id>/complete", views.complete, name="ai_complete"),
    path("<int:trial_id>/feedback", views.feedback, name="ai_feedback"),
    path("<int:trial_id>/outcome", views.outcome, name="ai_outcome"),
]
