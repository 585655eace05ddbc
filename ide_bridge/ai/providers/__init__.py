"""AI providers behind the gateway: an OpenAI-compatible client and an offline demo."""

from __future__ import annotations

from evaluation.llm.client import EndpointConfig
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


def provider_for(name: str, endpoint: EndpointConfig | None = None) -> Provider:
    """The provider an arm names (``Arm.ai_provider``): the offline demo, or the arm's model
    endpoint. Unknown names and an endpoint arm without an endpoint raise, so a misconfigured
    arm fails loudly rather than silently using the demo."""
    if name == "demo":
        return DemoProvider()
    if name == "endpoint" and endpoint is not None:
        return OpenAICompatProvider(endpoint)
    raise ProviderError(
        "The AI provider of this task is not configured; please tell the research team.",
        detail=f"provider {name!r} without a model endpoint"
        if name == "endpoint"
        else f"unknown provider {name!r}",
    )
