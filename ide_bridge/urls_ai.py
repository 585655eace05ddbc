"""Routes of the AI gateway, included into ``ide_bridge.urls`` (namespace ``ide_bridge``)."""

from __future__ import annotations

from django.urls import path

from ide_bridge import views_ai

urlpatterns = [
    path("trials/<int:trial_id>/ai/chat", views_ai.chat, name="ai_chat"),
    path("trials/<int:trial_id>/ai/complete", views_ai.complete, name="ai_complete"),
    path("trials/<int:trial_id>/ai/feedback", views_ai.feedback, name="ai_feedback"),
    path("trials/<int:trial_id>/ai/outcome", views_ai.outcome, name="ai_outcome"),
]
