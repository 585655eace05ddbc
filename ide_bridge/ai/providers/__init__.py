"""AI providers behind the gateway: an OpenAI-compatible client and an offline demo."""

from __future__ import annotations

from ide_bridge.ai.providers.base import (
    Message,
    Provider,
    ProviderError,
    ProviderReply,
    Purpose,
    estimate_prompt_tokens,
    estimate_tokens,
)
from ide_bridge.ai.providers.demo import DemoProvider
from ide_bridge.ai.providers.openai_compat import OpenAICompatProvider

__all__ = [
    "DemoProvider",
    "Message",
    "OpenAICompatProvider",
    "Provider",
    "ProviderError",
    "ProviderReply",
    "Purpose",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "provider_for",
]


def provider_for(
    name: str, *, base_url: str = "", api_key_env: str = "", stream_usage: bool = True
) -> Provider:
    """The provider an arm names (``Arm.ai_provider``). Unknown names fall back to nothing:
    they raise, so a misconfigured arm fails loudly rather than silently using the demo."""
    if name == "demo":
        return DemoProvider()
    if name == "openai":
        return OpenAICompatProvider(base_url, api_key_env=api_key_env, stream_usage=stream_usage)
    raise ProviderError(
        "The AI provider of this task is not configured; please tell the research team.",
        detail=f"unknown provider {name!r}",
    )
