"""HTTP routes of telemetry, included by ``ide_bridge.urls`` (namespace ``ide_bridge``)."""

from __future__ import annotations

from django.urls import URLPattern, path

from ide_bridge import views_telemetry

urlpatterns: list[URLPattern] = [
    path("trials/<int:trial_id>/events", views_telemetry.events, name="events"),
    path("replay/<int:trial_id>/", views_telemetry.replay, name="replay"),
    path("replay/<int:trial_id>/data.json", views_telemetry.replay_data, name="replay_data"),
    path("flags/", views_telemetry.flags, name="flags"),
]
