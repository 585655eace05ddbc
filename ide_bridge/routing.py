"""WebSocket routes of the IDE bridge."""

from __future__ import annotations

from django.urls import path

from ide_bridge import consumers

websocket_urlpatterns = [
    path("ws/ping/", consumers.PingConsumer.as_asgi(), name="ws-ping"),
    path(
        "ws/trials/<int:trial_id>/events/",
        consumers.TelemetryConsumer.as_asgi(),
        name="ws-trial-events",
    ),
]
