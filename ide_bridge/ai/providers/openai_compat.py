"""OpenAI-compatible chat completions (OpenAI, vLLM, llamafile, LiteLLM, Ollama, ...).

``POST {base_url}/chat/completions`` with ``stream: true``. With ``stream_usage`` the request
also carries ``stream_options: {"include_usage": true}``: the usage then arrives in one extra
chunk whose ``choices`` is ``[]``, just before ``data: [DONE]``. Servers that ignore or reject
the option (Ollama, Azure) give no usage: tokens are then estimated (see ``base``) and marked
``usage_source="estimated"``. A server that ignores ``stream`` and answers with plain JSON is
read too.

The API key comes from the environment variable the arm names; it is sent in the
``Authorization`` header only and never logged, stored or shown (error bodies are redacted).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Sequence
from typing import Any

import httpx

from ide_bridge.ai.providers.base import (
    Message,
    ProviderError,
    ProviderReply,
    Purpose,
    estimate_prompt_tokens,
    estimate_tokens,
)

logger = logging.getLogger(__name__)

_STATUS_MESSAGES = {
    400: "The AI provider rejected the request (HTTP 400).",
    401: "The AI provider refused the platform's API key (HTTP 401).",
    403: "The AI provider refused access for the platform's API key (HTTP 403).",
    404: "The AI provider does not know this endpoint or model (HTTP 404).",
    429: "The AI provider is rate-limiting requests (HTTP 429); please try again in a moment.",
}


class OpenAICompatProvider:
    name = "openai"
    is_demo = False

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str = "",
        stream_usage: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.stream_usage = stream_usage
        self._transport = transport

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatProvider({self.base_url!r}, api_key_env={self.api_key_env!r})"

    def _api_key(self) -> str:
        if not self.api_key_env:
            return ""  # local servers (vLLM, llamafile) often need none
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise ProviderError(
                "The AI provider is not configured (its API key is missing); please tell the "
                "research team.",
                detail=f"environment variable {self.api_key_env} is empty or unset",
            )
        return key

    async def complete_chat(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        max_tokens: int,
        timeout: float,
        purpose: Purpose = "chat",
    ) -> ProviderReply:
        if not self.base_url:
            raise ProviderError(
                "The AI provider is not configured (no base URL); please tell the research team."
            )
        if not model:
            raise ProviderError(
                "The AI provider is not configured (no model); please tell the research team."
            )
        key = self._api_key()
        payload: dict[str, Any] = {
            "model": model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": max_tokens,
            "stream": True,
        }
        if self.stream_usage:
            payload["stream_options"] = {"include_usage": True}
        headers = {"Accept": "text/event-stream"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            # httpx timeouts are per read; asyncio.timeout bounds the whole reply.
            async with asyncio.timeout(timeout):
                async with (
                    httpx.AsyncClient(
                        timeout=httpx.Timeout(timeout), transport=self._transport
                    ) as client,
                    client.stream(
                        "POST", f"{self.base_url}/chat/completions", json=payload, headers=headers
                    ) as response,
                ):
                    if response.status_code >= 400:
                        body = (await response.aread())[:1000].decode("utf-8", "replace")
                        raise _status_error(response.status_code, _redact(body, key))
                    if "text/event-stream" in response.headers.get("content-type", ""):
                        return await _read_stream(response, messages, model)
                    return _read_json(await response.aread(), messages, model)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise ProviderError(
                f"The AI provider did not answer within {timeout:g} seconds.",
                detail=type(exc).__name__,
            ) from None
        except httpx.ConnectError as exc:
            raise ProviderError(
                "The AI provider could not be reached.", detail=_redact(str(exc), key)
            ) from None
        except httpx.HTTPError as exc:
            raise ProviderError(
                "The connection to the AI provider failed.",
                detail=f"{type(exc).__name__}: {_redact(str(exc), key)}",
            ) from None


def _redact(text: str, key: str) -> str:
    return text.replace(key, "[redacted]") if key else text


def _status_error(status: int, body: str) -> ProviderError:
    message = _STATUS_MESSAGES.get(status)
    if message is None:
        message = (
            f"The AI provider had an internal error (HTTP {status})."
            if status >= 500
            else f"The AI provider refused the request (HTTP {status})."
        )
    detail = f"HTTP {status}: {body}"
    logger.warning("AI provider error: %s", detail)
    return ProviderError(message, detail=detail)


def _unreadable(detail: str) -> ProviderError:
    return ProviderError(
        "The AI provider sent a reply the platform could not read.", detail=detail[:500]
    )


async def _read_stream(
    response: httpx.Response, messages: Sequence[Message], model: str
) -> ProviderReply:
    """Server-sent events: ``data:`` lines, a blank line ends an event, ``[DONE]`` the stream."""
    parts: list[str] = []
    usage: dict[str, Any] | None = None
    finish_reason = ""
    answered_by = model
    done = False
    data_lines: list[str] = []

    def dispatch(data: str) -> None:
        nonlocal usage, finish_reason, answered_by
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise _unreadable(f"not JSON: {data[:200]}") from None
        if not isinstance(chunk, dict):
            raise _unreadable(f"not an object: {data[:200]}")
        if chunk.get("error"):
            raise ProviderError(
                "The AI provider reported an error while answering.",
                detail=json.dumps(chunk["error"])[:500],
            )
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            answered_by = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]  # the final usage chunk (choices == [])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                parts.append(delta["content"])
            if choice.get("finish_reason"):
                finish_reason = str(choice["finish_reason"])

    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data_lines.append(line[5:].lstrip())
        elif line == "" and data_lines:
            data, data_lines = "\n".join(data_lines), []
            if data.strip() == "[DONE]":
                done = True
                break
            dispatch(data)
        # Other fields (event:, id:, retry:) and ":" comments are not used by this protocol.
    if not done and data_lines:  # a last event without its blank line
        data = "\n".join(data_lines)
        if data.strip() == "[DONE]":
            done = True
        else:
            dispatch(data)
    if not done and not finish_reason:
        raise ProviderError(
            "The AI provider's reply was cut off before it finished.",
            detail=f"stream ended after {len(parts)} chunks without [DONE]",
        )
    return _reply("".join(parts), usage, messages, finish_reason, answered_by)


def _read_json(body: bytes, messages: Sequence[Message], model: str) -> ProviderReply:
    """A non-streamed ``chat.completion`` object (servers that ignore ``stream``)."""
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError):
        raise _unreadable(body[:500].decode("utf-8", "replace")) from None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    answered_by = data.get("model") if isinstance(data.get("model"), str) else model
    return _reply(str(text), usage, messages, str(choice.get("finish_reason") or ""), answered_by)


def _reply(
    text: str,
    usage: dict[str, Any] | None,
    messages: Sequence[Message],
    finish_reason: str,
    model: str,
) -> ProviderReply:
    prompt = usage.get("prompt_tokens") if usage else None
    completion = usage.get("completion_tokens") if usage else None
    if isinstance(prompt, int) and isinstance(completion, int):
        return ProviderReply(text, prompt, completion, "provider", finish_reason, model)
    return ProviderReply(
        text,
        estimate_prompt_tokens(messages),
        estimate_tokens(text),
        "estimated",
        finish_reason,
        model,
    )
