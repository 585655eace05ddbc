"""OpenAI-compatible chat completions (OpenAI, vLLM, llamafile, LiteLLM, Ollama, ...).

One client for the participants' assistant (``ide_bridge.ai``) and the LLM arm. ``chat`` makes
one request: ``POST {base_url}/chat/completions`` with ``stream: true`` by default. With
``supports_usage`` it also asks ``stream_options: {"include_usage": true}``: the usage then
arrives in one extra chunk whose ``choices`` is ``[]``, just before ``data: [DONE]``. A reply
without usage (servers that ignore the option, a stream cut short) is counted here
(``estimate_*``) and marked ``usage_source="estimated"``. A server that ignores ``stream`` and
answers with plain JSON is read too.

Tools are sent (with ``tool_choice: "auto"``) only when the caller gives some and the endpoint
``supports_tools``; streamed tool-call fragments are joined per ``index``, and ``arguments`` stay
the raw string the model wrote (it may be invalid JSON: the caller decides).

Every failure is an ``LLMError``: one sentence in ``str()``, a ``kind`` for the caller's
decisions, a ``detail`` for researchers. ``chat_with_retries`` retries the transient kinds,
waiting what ``retry-after`` asks (at most ``MAX_RETRY_AFTER_S``) or backing off exponentially
with jitter. Requests of one endpoint in one process are spaced by ``requests_per_minute``.

The API key comes from the environment variable the endpoint names; it is sent in the
``Authorization`` header only and never logged, stored or shown (error bodies are redacted).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import httpx

from evaluation.llm.errors import ErrorKind, LLMError, config_error, cut_off, redact, status_error
from evaluation.llm.keys import key_env_problem
from evaluation.llm.limits import throttle
from evaluation.llm.replies import (
    ChatResult,
    ReplyReader,
    ToolCall,
    UsageSource,
    estimate_prompt_tokens,
    estimate_tokens,
    read_json,
    read_stream,
)

if TYPE_CHECKING:
    from evaluation.models import ModelEndpoint

__all__ = [
    "ChatResult",
    "EndpointConfig",
    "ErrorKind",
    "LLMError",
    "ToolCall",
    "UsageSource",
    "chat",
    "chat_sync",
    "chat_with_retries",
    "endpoint_config",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "retry_delay",
]

Sleep = Callable[[float], Awaitable[Any]]
MAX_RETRY_AFTER_S = 60.0
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 30.0


@dataclass(frozen=True)
class EndpointConfig:
    """What the client needs to know about a model endpoint (a ``ModelEndpoint`` row or the
    CLI's ``--base-url/--model``); frozen into sweeps and study snapshots as ``to_json()``."""

    name: str
    base_url: str
    model: str
    api_key_env: str = ""
    supports_tools: bool = True
    supports_usage: bool = True
    supports_vision: bool = False
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    requests_per_minute: int = 0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.price_input_per_mtok
            + completion_tokens * self.price_output_per_mtok
        ) / 1_000_000

    def to_json(self) -> dict[str, Any]:
        """Plain JSON; names the key's environment variable, never holds the key."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EndpointConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def endpoint_config(row: ModelEndpoint) -> EndpointConfig:
    return EndpointConfig(
        name=row.name,
        base_url=row.base_url,
        model=row.model,
        api_key_env=row.api_key_env,
        supports_tools=row.supports_tools,
        supports_usage=row.supports_usage,
        supports_vision=row.supports_vision,
        price_input_per_mtok=float(row.price_input_per_mtok),
        price_output_per_mtok=float(row.price_output_per_mtok),
        requests_per_minute=row.requests_per_minute,
    )


async def chat(
    endpoint: EndpointConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int,
    timeout: float,
    tools: Sequence[Mapping[str, Any]] | None = None,
    stream: bool = True,
    sleep: Sleep = asyncio.sleep,
) -> ChatResult:
    """One request (after the endpoint's rate limit, if any). Raises LLMError on any failure,
    timeouts included; ``timeout`` bounds the whole reply, not each read."""
    if not endpoint.base_url:
        raise config_error("no base URL")
    if not endpoint.model:
        raise config_error("no model")
    key = _api_key(endpoint)
    sent_tools = list(tools) if tools and endpoint.supports_tools else None
    payload: dict[str, Any] = {
        "model": endpoint.model,
        "messages": list(messages),
        "max_tokens": max_tokens,
        "stream": stream,
    }
    if stream and endpoint.supports_usage:
        payload["stream_options"] = {"include_usage": True}
    if sent_tools:
        payload["tools"] = sent_tools
        payload["tool_choice"] = "auto"
    headers = {"Accept": "text/event-stream" if stream else "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    await throttle(endpoint.name or endpoint.base_url, endpoint.requests_per_minute, sleep)
    reply = ReplyReader(endpoint.model)
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            async with (
                httpx.AsyncClient(timeout=httpx.Timeout(timeout)) as client,
                client.stream(
                    "POST",
                    f"{endpoint.base_url.rstrip('/')}/chat/completions",
                    json=payload,
                    headers=headers,
                ) as response,
            ):
                if response.status_code >= 400:
                    body = (await response.aread())[:1000].decode("utf-8", "replace")
                    raise status_error(response, redact(body, key))
                reply.started = True
                if "text/event-stream" in response.headers.get("content-type", ""):
                    await read_stream(response, reply)
                else:
                    read_json(await response.aread(), reply)
    except LLMError as exc:
        exc.latency_ms = _ms_since(started)
        raise
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise LLMError(
            f"The AI provider did not answer within {timeout:g} seconds.",
            kind="timeout",
            detail=type(exc).__name__,
            latency_ms=_ms_since(started),
        ) from None
    except httpx.HTTPError as exc:
        detail = f"{type(exc).__name__}: {redact(str(exc), key)}"
        if reply.started:
            raise cut_off(detail, _ms_since(started)) from None
        message = (
            "The AI provider could not be reached."
            if isinstance(exc, httpx.ConnectError)
            else "The connection to the AI provider failed."
        )
        raise LLMError(
            message, kind="connection", detail=detail, latency_ms=_ms_since(started)
        ) from None
    return reply.result(messages, sent_tools, _ms_since(started))


async def chat_with_retries(
    endpoint: EndpointConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int,
    timeout: float,
    tools: Sequence[Mapping[str, Any]] | None = None,
    stream: bool = True,
    max_retries: int = 4,
    sleep: Sleep = asyncio.sleep,
) -> ChatResult:
    """``chat``, again after a transient failure (rate limit, 5xx, timeout, connection, cut
    stream) up to ``max_retries`` times; the result or the last error counts the retries."""
    retries = 0
    while True:
        try:
            result = await chat(
                endpoint,
                messages,
                max_tokens=max_tokens,
                timeout=timeout,
                tools=tools,
                stream=stream,
                sleep=sleep,
            )
        except LLMError as exc:
            exc.retries = retries
            if not exc.retryable or retries >= max_retries:
                raise
            await sleep(retry_delay(exc, retries))
            retries += 1
            continue
        return replace(result, retries=retries)


def chat_sync(
    endpoint: EndpointConfig,
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int,
    timeout: float,
    tools: Sequence[Mapping[str, Any]] | None = None,
    stream: bool = True,
    max_retries: int = 4,
) -> ChatResult:
    """``chat_with_retries`` from synchronous code (a worker, a management command)."""
    return asyncio.run(
        chat_with_retries(
            endpoint,
            messages,
            max_tokens=max_tokens,
            timeout=timeout,
            tools=tools,
            stream=stream,
            max_retries=max_retries,
        )
    )


def retry_delay(error: LLMError, retries: int) -> float:
    """Seconds to wait before retry ``retries + 1``: what the server asked (capped), else
    ``BACKOFF_BASE_S * 2**retries`` (capped) scaled by a random 0.5-1.0 so that parallel
    workers do not retry in step."""
    if error.retry_after is not None:
        return min(max(error.retry_after, 0.0), MAX_RETRY_AFTER_S)
    return min(BACKOFF_BASE_S * 2**retries, BACKOFF_MAX_S) * random.uniform(0.5, 1.0)


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _api_key(endpoint: EndpointConfig) -> str:
    if not endpoint.api_key_env:
        return ""  # local servers (vLLM, llamafile) often need none
    problem = key_env_problem(endpoint.api_key_env)
    if problem:
        raise config_error("its API key variable is not allowed", problem)
    key = os.environ.get(endpoint.api_key_env, "")
    if not key:
        raise config_error(
            "its API key is missing",
            f"environment variable {endpoint.api_key_env} is empty or unset",
        )
    return key
