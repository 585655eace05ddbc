"""A WebSocket echo (``/ws/ping/``) that lets clients and probes check that WebSockets reach
the server through proxies."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer


class PingConsumer(AsyncJsonWebsocketConsumer):
    """Answers ``{"type": "ping"}`` with ``{"type": "pong"}``: lets clients and probes check
    that WebSockets reach the server through proxies."""

    async def connect(self) -> None:
        await self.accept()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong", "echo": content.get("echo")})
        else:
            await self.send_json({"type": "error", "error": 'expected {"type": "ping"}'})
