"""Reading a chat-completions reply: server-sent events or one JSON object, tool-call
fragments joined per ``index``, the usage (or an estimate of it, marked so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from evaluation.llm.errors import CONTEXT_WORDS, LLMError, cut_off, unreadable

UsageSource = Literal["provider", "estimated"]

# Token estimates when the server reports no usage: about 4 characters per token for English
# text and code with GPT-style BPE tokenisers (OpenAI's rule of thumb), plus a few tokens of
# chat formatting per message; an image part counts IMAGE_TOKENS, what OpenAI bills for one
# 512 x 512 tile in high detail (85 base + 4 x 170). Good to within ~20 % for text, never exact.
CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
IMAGE_TOKENS = 765


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # as the model wrote it: JSON, or not


@dataclass(frozen=True)
class ChatResult:
    text: str
    tool_calls: tuple[ToolCall, ...]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    usage_source: UsageSource
    finish_reason: str
    model: str  # the model that answered, as the server reports it (or the one requested)
    latency_ms: int  # of the request that answered
    retries: int = 0


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def estimate_message_tokens(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    tokens = TOKENS_PER_MESSAGE
    if isinstance(content, str):
        tokens += estimate_tokens(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "image_url":
                tokens += IMAGE_TOKENS
            elif isinstance(part, Mapping):
                tokens += estimate_tokens(str(part.get("text") or ""))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        tokens += estimate_tokens(f"{function.get('name', '')}{function.get('arguments', '')}")
    return tokens


def estimate_prompt_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
) -> int:
    prompt = sum(estimate_message_tokens(m) for m in messages)
    return prompt + (estimate_tokens(json.dumps(list(tools))) if tools else 0)


# --- Replies ----------------------------------------------------------------------------------
class ReplyReader:
    """A reply being read: text parts, tool calls by index, usage, finish reason."""

    def __init__(self, model: str) -> None:
        self.started = False  # the server answered 2xx; a broken connection now is a cut-off
        self.parts: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.finish_reason = ""
        self.model = model

    def take(self, chunk: Mapping[str, Any]) -> None:
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta.get("content"), str):
                self.parts.append(delta["content"])
            for position, fragment in enumerate(delta.get("tool_calls") or []):
                index = fragment.get("index", position)
                call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": []})
                call["id"] = fragment.get("id") or call["id"]
                function = fragment.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"].append(function.get("arguments") or "")
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def result(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        latency_ms: int,
    ) -> ChatResult:
        text = "".join(self.parts)
        calls = tuple(
            ToolCall(c["id"] or f"call_{i}", c["name"], "".join(c["arguments"]))
            for i, c in sorted(self.calls.items())
        )
        usage = self.usage or {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        source: UsageSource = "provider"
        if not (isinstance(prompt, int) and isinstance(completion, int)):
            source = "estimated"
            prompt = estimate_prompt_tokens(messages, tools)
            completion = estimate_tokens(text + "".join(c.name + c.arguments for c in calls))
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        return ChatResult(
            text=text,
            tool_calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached if isinstance(cached, int) else 0,
            usage_source=source,
            finish_reason=self.finish_reason,
            model=self.model,
            latency_ms=latency_ms,
        )


def _dispatch(data: str, reply: ReplyReader) -> None:
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError:
        raise unreadable(f"not JSON: {data[:200]}") from None
    if not isinstance(chunk, dict):
        raise unreadable(f"not an object: {data[:200]}")
    if chunk.get("error"):
        detail = json.dumps(chunk["error"])[:500]
        context = any(word in detail.lower() for word in CONTEXT_WORDS)
        raise LLMError(
            "The AI provider reported an error while answering.",
            kind="context_length" if context else "server",
            detail=detail,
        )
    reply.take(chunk)


async def read_stream(response: httpx.Response, reply: ReplyReader) -> None:
    """Server-sent events: ``data:`` lines, a blank line ends an event, ``[DONE]`` the stream.
    Other fields (event:, id:, retry:) and ":" comments are not used by this protocol."""
    done = False
    data_lines: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data_lines.append(line[5:].lstrip())
        elif line == "" and data_lines:
            data, data_lines = "\n".join(data_lines), []
            if data.strip() == "[DONE]":
                done = True
                break
            _dispatch(data, reply)
    if not done and data_lines:  # a last event without its blank line
        data = "\n".join(data_lines)
        if data.strip() == "[DONE]":
            done = True
        else:
            _dispatch(data, reply)
    if not done and not reply.finish_reason:
        raise cut_off(f"stream ended after {len(reply.parts)} chunks without [DONE]")


def read_json(body: bytes, reply: ReplyReader) -> None:
    """A non-streamed ``chat.completion`` object."""
    try:
        data = json.loads(body)
        message = data["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (ValueError, KeyError, IndexError, TypeError):
        raise unreadable(body[:500].decode("utf-8", "replace")) from None
    reply.take(data)
