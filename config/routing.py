"""WebSocket routes of every app, gathered in one list for ``config.asgi``."""

from __future__ import annotations

from ide_bridge.routing import websocket_urlpatterns as ide_bridge_routes
from study.results.consumers import websocket_urlpatterns as study_routes

websocket_urlpatterns = [*ide_bridge_routes, *study_routes]
