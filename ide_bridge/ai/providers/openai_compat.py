"""The participants' assistant on a model endpoint: ``evaluation.llm.client`` behind the
provider interface (one request, no retries: a participant is waiting, and the gateway records
a failure as it happens). The protocol, its error sentences and the redaction of the key live
in the client; this adapter only maps its result and errors to the gateway's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from evaluation.llm.client import EndpointConfig, LLMError, chat
from ide_bridge.ai.providers.base import Message, ProviderError, ProviderReply, Purpose


class OpenAICompatProvider:
    name = "endpoint"
    is_demo = False

    def __init__(self, endpoint: EndpointConfig) -> None:
        self.endpoint = endpoint

    def __repr__(self) -> str:  # the endpoint's settings name the key's variable, never the key
        return f"OpenAICompatProvider({self.endpoint!r})"

    async def complete_chat(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        max_tokens: int,
        timeout: float,
        purpose: Purpose = "chat",
    ) -> ProviderReply:
        endpoint = replace(self.endpoint, model=model) if model else self.endpoint
        try:
            result = await chat(
                endpoint,
                [{"role": m["role"], "content": m["content"]} for m in messages],
                max_tokens=max_tokens,
                timeout=timeout,
            )
        except LLMError as exc:
            raise ProviderError(str(exc), detail=exc.detail) from None
        return ProviderReply(
            result.text,
            result.prompt_tokens,
            result.completion_tokens,
            result.usage_source,
            result.finish_reason,
            result.model,
        )
