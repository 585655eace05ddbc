"""``/ide/telemetry/``: the bearer-token event endpoint, the researcher's replay and flags."""

from __future__ import annotations

from django.urls import path

from ide_bridge.telemetry import views

urlpatterns = [
    path("<int:trial_id>/events", views.events, name="events"),
    path("replay/<int:trial_id>/", views.replay, name="replay"),
    path("replay/<int:trial_id>/data.json", views.replay_data, name="replay_data"),
    path("flags/", views.flags, name="flags"),
]
