"""The model client against a local server speaking OpenAI chat completions: streaming and
JSON replies, usage (reported, cached, estimated), tool calls, retries and every failure kind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from evaluation.llm.client import (
    ChatResult,
    EndpointConfig,
    LLMError,
    ToolCall,
    chat,
    chat_with_retries,
)
from evaluation.llm.keys import validate_key_env
from evaluation.llm.replies import IMAGE_TOKENS
from tests.llm_server import Cut, Fail, ScriptedLLM, Text, Tools

KEY = "sk-client-test-0123456789"
MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello to the world, please."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def endpoint(llm: ScriptedLLM, **extra: Any) -> EndpointConfig:
    return EndpointConfig(name=f"scripted-{id(llm)}", base_url=llm.base_url, model="m", **extra)


def ask(config: EndpointConfig, messages: Sequence[Mapping[str, Any]] = MESSAGES, **kw: Any) -> Any:
    return asyncio.run(chat(config, messages, max_tokens=50, timeout=5, **kw))


class Sleeps:
    """An injectable ``sleep`` that records what it was asked and returns at once."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def retrying(config: EndpointConfig, sleeps: Sleeps, **kw: Any) -> ChatResult:
    return asyncio.run(
        chat_with_retries(config, MESSAGES, max_tokens=50, timeout=5, sleep=sleeps, **kw)
    )


def test_a_streamed_reply_with_the_usage_chunk_counts_provider_and_cached_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HAI_CLIENT_KEY", KEY)
    with ScriptedLLM([Text("Hello, world.", usage=(21, 4), cached=16)]) as llm:
        result = ask(endpoint(llm, api_key_env="HAI_CLIENT_KEY"))
    assert (result.text, result.tool_calls, result.finish_reason) == ("Hello, world.", (), "stop")
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (21, 4, 16)
    assert (result.usage_source, result.model, result.retries) == ("provider", "m", 0)
    sent = llm.requests[0]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert (sent["model"], sent["max_tokens"], sent["messages"]) == ("m", 50, MESSAGES)
    assert "tools" not in sent
    assert llm.authorizations == [f"Bearer {KEY}"]


def test_without_usage_tokens_are_estimated_and_images_count_a_fixed_amount() -> None:
    picture = [
        {"type": "text", "text": "What is this?"},  # 13 characters: 4 tokens
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    with ScriptedLLM([Text("Hello, world.", usage=None), Text("A diagram.")]) as llm:
        plain = ask(endpoint(llm))
        vision = ask(endpoint(llm, supports_usage=False), [{"role": "user", "content": picture}])
    assert plain.usage_source == "estimated"
    assert plain.completion_tokens == 4  # 13 characters, ~4 per token
    assert plain.prompt_tokens == (4 + 4) + (4 + 8)  # 14 and 31 characters, 4 per message
    assert "stream_options" not in llm.requests[1]  # the endpoint rejects the option
    assert (vision.usage_source, vision.prompt_tokens) == ("estimated", 4 + 4 + IMAGE_TOKENS)
    assert llm.authorizations == ["", ""]  # no key configured


def test_streamed_tool_call_fragments_are_joined_and_invalid_arguments_kept_raw() -> None:
    script = [
        Tools([("write_file", {"path": "solution.py", "text": "x = 1\n"}), ("submit", "{oops")]),
        Tools([("read_file", {"path": "README.md"})]),
    ]
    with ScriptedLLM(script) as llm:
        streamed = ask(endpoint(llm), tools=TOOLS)
        unsupported = ask(endpoint(llm, supports_tools=False), tools=TOOLS)
    assert streamed.tool_calls == (
        ToolCall("call_0", "write_file", '{"path": "solution.py", "text": "x = 1\\n"}'),
        ToolCall("call_1", "submit", "{oops"),
    )
    assert streamed.finish_reason == "tool_calls"
    assert (llm.requests[0]["tools"], llm.requests[0]["tool_choice"]) == (TOOLS, "auto")
    assert "tools" not in llm.requests[1]
    assert "tool_choice" not in llm.requests[1]
    assert unsupported.tool_calls[0].name == "read_file"  # what a server sends anyway is read


def test_a_plain_json_reply_is_read_with_its_tool_calls() -> None:
    with ScriptedLLM([Text("Hello.", usage=(9, 2)), Tools([("submit", {})], text="Done")]) as llm:
        text = ask(endpoint(llm), stream=False)
        tools = ask(endpoint(llm), stream=False, tools=TOOLS)
    assert (text.text, text.prompt_tokens, text.completion_tokens) == ("Hello.", 9, 2)
    assert text.usage_source == "provider"
    assert "stream_options" not in llm.requests[0]
    assert (tools.text, tools.tool_calls) == ("Done", (ToolCall("call_0", "submit", "{}"),))


def test_a_429_is_retried_after_what_retry_after_asks() -> None:
    sleeps = Sleeps()
    with ScriptedLLM([Fail(429, "Slow down.", retry_after=7), Text("Hi.")]) as llm:
        result = retrying(endpoint(llm), sleeps)
    assert (result.text, result.retries) == ("Hi.", 1)
    assert sleeps.asked == [7.0]
    assert len(llm.requests) == 2


def test_server_errors_back_off_then_give_up_with_the_number_of_retries() -> None:
    sleeps = Sleeps()
    with ScriptedLLM([Fail(503, "Overloaded.")] * 4) as llm, pytest.raises(LLMError) as caught:
        retrying(endpoint(llm), sleeps, max_retries=3)
    error = caught.value
    assert str(error) == "The AI provider had an internal error (HTTP 503)."
    assert (error.kind, error.retries, error.retryable) == ("server", 3, True)
    assert "Overloaded." in error.detail
    # Exponential from 1 s with a 0.5-1.0 jitter: within [0.5, 1], [1, 2], [2, 4].
    assert all(low <= s <= 2 * low for s, low in zip(sleeps.asked, [0.5, 1, 2], strict=True))
    assert len(llm.requests) == 4


def test_a_cut_stream_and_a_context_length_error_are_classified() -> None:
    sleeps = Sleeps()
    limit = "This model's maximum context length is 8192 tokens. However, you requested 9000."
    with ScriptedLLM([Cut("Hel"), Cut("Hel"), Fail(400, limit), Cut("{")]) as llm:
        with pytest.raises(LLMError) as cut:
            retrying(endpoint(llm), sleeps, max_retries=1)
        with pytest.raises(LLMError) as context:
            retrying(endpoint(llm), sleeps)
        with pytest.raises(LLMError) as half_json:
            ask(endpoint(llm), stream=False)
    assert (cut.value.kind, cut.value.retries) == ("cut_off", 1)
    assert str(cut.value) == "The AI provider's reply was cut off before it finished."
    assert (context.value.kind, context.value.retryable, context.value.retries) == (
        "context_length",
        False,
        0,
    )
    assert half_json.value.kind == "cut_off"
    assert len(llm.requests) == 4


def test_a_refused_key_is_explained_without_the_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("HAI_CLIENT_KEY", KEY)
    with ScriptedLLM([Fail(401, "Incorrect API key provided: {key}")]) as llm:
        config = endpoint(llm, api_key_env="HAI_CLIENT_KEY")
        with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as caught:
            retrying(config, Sleeps())
    error = caught.value
    assert str(error) == "The AI provider refused the platform's API key (HTTP 401)."
    assert (error.kind, error.retries) == ("auth", 0)
    assert "[redacted]" in error.detail
    assert KEY not in error.detail
    assert KEY not in caplog.text
    assert KEY not in repr(config)
    assert KEY not in str(config.to_json())
    monkeypatch.delenv("HAI_CLIENT_KEY")
    with pytest.raises(LLMError, match="API key is missing") as missing:
        ask(config)
    assert missing.value.kind == "config"


def test_a_platform_secret_is_never_sent_as_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", "platform-secret-value")
    with ScriptedLLM([Text("hi")]) as llm:
        for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "lower_key"):
            with pytest.raises(LLMError) as refused:
                ask(endpoint(llm, api_key_env=name))
            assert refused.value.kind == "config"
        assert llm.requests == []  # nothing left the machine
    with pytest.raises(ValidationError, match="platform's own settings"):
        validate_key_env("DJANGO_SECRET_KEY")
    with pytest.raises(ValidationError, match="_KEY or _TOKEN"):
        validate_key_env("PATH")
    validate_key_env("OPENAI_API_KEY")
    validate_key_env("HF_TOKEN")


def test_endpoint_settings_round_trip_and_price_the_tokens() -> None:
    config = EndpointConfig(
        name="gpt",
        base_url="https://x/v1",
        model="g",
        price_input_per_mtok=2.5,
        price_output_per_mtok=10.0,
        requests_per_minute=30,
    )
    assert EndpointConfig.from_json({**config.to_json(), "retired": True}) == config
    assert config.cost(1_000_000, 100_000) == pytest.approx(3.5)


def test_requests_per_minute_spaces_requests_of_one_endpoint() -> None:
    sleeps = Sleeps()
    with ScriptedLLM([Text("a"), Text("b")]) as llm:
        config = endpoint(llm, requests_per_minute=6)  # one every 10 s
        for _ in range(2):
            asyncio.run(chat(config, MESSAGES, max_tokens=5, timeout=5, sleep=sleeps))
    assert len(sleeps.asked) == 1
    assert 9 < sleeps.asked[0] <= 10
