"""The WebSocket route works through the full ASGI stack."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from config.asgi import application


# Channels closes stale database connections when a consumer finishes, so the test may touch
# the database even though the ping consumer does not.
@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_ping_is_answered_with_pong() -> None:
    communicator = WebsocketCommunicator(
        application, "/ws/ping/", headers=[(b"origin", b"http://localhost")]
    )
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_json_to({"type": "ping", "echo": 7})
    assert await communicator.receive_json_from() == {"type": "pong", "echo": 7}
    await communicator.send_json_to({"type": "nonsense"})
    assert (await communicator.receive_json_from())["type"] == "error"
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_websocket_from_a_foreign_origin_is_refused() -> None:
    communicator = WebsocketCommunicator(
        application, "/ws/ping/", headers=[(b"origin", b"http://evil.example")]
    )
    connected, _ = await communicator.connect()
    assert not connected
