"""The configured channel layer delivers group messages (Redis in CI, in-memory otherwise)."""

from __future__ import annotations

import pytest
from channels.layers import get_channel_layer
from django.conf import settings


@pytest.mark.asyncio
async def test_group_message_reaches_a_member() -> None:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("health-test", channel)
    await layer.group_send("health-test", {"type": "note", "text": "hi"})
    assert (await layer.receive(channel))["text"] == "hi"
    await layer.group_discard("health-test", channel)


def test_redis_url_selects_the_redis_channel_layer(require_redis: str) -> None:
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    assert require_redis == settings.CELERY_BROKER_URL
