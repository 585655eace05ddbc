"""Model endpoints in use: checking that one answers before a study or a sweep relies on it.

``test_connection`` makes one tiny request (at most ``CHECK_MAX_TOKENS`` tokens, streamed like
every real request, no retries) and says what came back: the answer, the latency and the usage
with its source, or the failure in one sentence with the provider's own words (the key, if the
server echoes it, is redacted by the client).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from evaluation.llm.client import EndpointConfig, LLMError, chat

CHECK_MAX_TOKENS = 8
CHECK_TIMEOUT_S = 30.0
CHECK_MESSAGES = [{"role": "user", "content": "Reply with one word: ready"}]
DETAIL_CHARS = 300


@dataclass(frozen=True)
class ConnectionCheck:
    ok: bool
    text: str = ""
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_source: str = ""
    error: str = ""  # one sentence, then what the server said


def test_connection(config: EndpointConfig) -> ConnectionCheck:
    try:
        result = asyncio.run(
            chat(config, CHECK_MESSAGES, max_tokens=CHECK_MAX_TOKENS, timeout=CHECK_TIMEOUT_S)
        )
    except LLMError as exc:
        said = f" ({exc.detail[:DETAIL_CHARS]})" if exc.detail else ""
        return ConnectionCheck(ok=False, latency_ms=exc.latency_ms, error=f"{exc}{said}")
    return ConnectionCheck(
        ok=True,
        text=result.text,
        latency_ms=result.latency_ms,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        usage_source=result.usage_source,
    )
