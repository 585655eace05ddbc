"""WebSocket routes of the IDE bridge."""

from __future__ import annotations

from django.urls import path

from ide_bridge.ping import PingConsumer
from ide_bridge.telemetry.consumers import TelemetryConsumer

websocket_urlpatterns = [
    path("ws/ping/", PingConsumer.as_asgi(), name="ws-ping"),
    path("ws/trials/<int:trial_id>/events/", TelemetryConsumer.as_asgi(), name="ws-trial-events"),
]
