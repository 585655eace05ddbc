"""The AI providers: the participants' assistant on a model endpoint (the client of
``evaluation.llm`` behind the provider interface, against a local server speaking OpenAI chat
completions: ``tests/llm_server.py``), and the demo assistant.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import time

import pytest

from evaluation.llm.client import EndpointConfig
from ide_bridge.ai.providers import (
    DemoProvider,
    Message,
    OpenAICompatProvider,
    ProviderError,
    ProviderReply,
    provider_for,
)
from ide_bridge.ai.providers.base import (
    CODE_END,
    CURSOR,
    FEEDBACK_HEADING,
    FILE_MARKER,
    code_start,
    extract_code,
    strip_fences,
)
from ide_bridge.ai.providers.demo import add_note
from tests.llm_server import Cut, Fail, Reply, ScriptedLLM, Text

KEY = "sk-test-0123456789abcdef"
MESSAGES: list[Message] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello to the world, please."},
]


def provider(base_url: str, api_key_env: str = "") -> OpenAICompatProvider:
    config = EndpointConfig(name="t", base_url=base_url, model="m", api_key_env=api_key_env)
    return OpenAICompatProvider(config)


def ask(provider: OpenAICompatProvider, timeout: float = 5.0) -> ProviderReply:
    return asyncio.run(
        provider.complete_chat(MESSAGES, model="gpt-test", max_tokens=50, timeout=timeout)
    )


def test_an_endpoint_reply_becomes_the_providers_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAI_TEST_KEY", KEY)
    reply = Text("Hello, world.", usage=(21, 4))
    with ScriptedLLM([reply], model="gpt-test-2024") as llm:
        answer = ask(provider(llm.base_url, "HAI_TEST_KEY"))
    assert answer == ProviderReply("Hello, world.", 21, 4, "provider", "stop", "gpt-test-2024")
    sent = llm.requests[0]
    assert (sent["model"], sent["max_tokens"], sent["messages"]) == ("gpt-test", 50, MESSAGES)
    assert sent["stream_options"] == {"include_usage": True}
    assert llm.authorizations == [f"Bearer {KEY}"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Fail(500, "boom"), "The AI provider had an internal error (HTTP 500)."),
        (
            Fail(401, "Incorrect API key provided: {key}"),
            "The AI provider refused the platform's API key (HTTP 401).",
        ),
        (Cut("Hel"), "The AI provider's reply was cut off before it finished."),
        (
            Cut("Hel", error="model overloaded"),
            "The AI provider reported an error while answering.",
        ),
    ],
)
def test_provider_failures_become_one_sentence_errors_without_the_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, reply: Reply, message: str
) -> None:
    monkeypatch.setenv("HAI_TEST_KEY", KEY)
    with ScriptedLLM([reply]) as llm:
        failing = provider(llm.base_url, "HAI_TEST_KEY")
        with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as caught:
            ask(failing)
    assert str(caught.value) == message
    assert KEY not in caught.value.detail
    assert KEY not in caplog.text
    assert KEY not in repr(failing)
    if isinstance(reply, Fail) and reply.status == 401:
        assert "[redacted]" in caught.value.detail


def test_a_server_that_does_not_answer_in_time_times_out() -> None:
    with ScriptedLLM([Text("late", delay=2)]) as llm:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"did not answer within 0\.5 seconds"):
            ask(provider(llm.base_url), timeout=0.5)
        assert time.monotonic() - started < 1.5


def test_the_timeout_bounds_the_whole_reply_not_each_chunk() -> None:
    # Every chunk arrives within a read timeout, the whole reply does not.
    with ScriptedLLM([Text(["."] * 20, chunk_delay=0.1)]) as llm:
        started = time.monotonic()
        with pytest.raises(ProviderError, match="did not answer within"):
            ask(provider(llm.base_url), timeout=0.7)
        assert time.monotonic() - started < 1.5


def test_an_unreachable_server_and_missing_configuration_are_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ScriptedLLM([]) as llm:
        url = llm.base_url
    with pytest.raises(ProviderError, match="could not be reached"):
        ask(provider(url))  # the server is gone
    monkeypatch.delenv("HAI_MISSING_KEY", raising=False)
    with pytest.raises(ProviderError, match="API key is missing"):
        ask(provider(url, "HAI_MISSING_KEY"))
    with pytest.raises(ProviderError, match="no base URL"):
        ask(provider(""))
    with pytest.raises(ProviderError, match="not configured"):
        provider_for("mystery")
    with pytest.raises(ProviderError, match="not configured") as no_endpoint:
        provider_for("endpoint", None)
    assert "without a model endpoint" in no_endpoint.value.detail


def test_demo_provider_is_deterministic_and_says_it_is_a_demo() -> None:
    demo = DemoProvider()
    question: list[Message] = [{"role": "user", "content": "My test fails with a KeyError"}]
    first = asyncio.run(demo.complete_chat(question, model="", max_tokens=500, timeout=1))
    again = asyncio.run(demo.complete_chat(question, model="", max_tokens=500, timeout=1))
    assert first == again
    assert "Demo assistant — not a real AI" in first.text
    assert "debugging" in first.text
    assert first.usage_source == "estimated"
    assert first.completion_tokens > 0
    assert first.model == "demo"


def test_demo_completion_continues_the_line_at_the_cursor() -> None:
    demo = DemoProvider()

    def complete(prefix: str) -> str:
        message: list[Message] = [{"role": "user", "content": f"{prefix}{CURSOR}\n"}]
        reply = asyncio.run(
            demo.complete_chat(message, model="", max_tokens=64, timeout=1, purpose="complete")
        )
        return reply.text

    assert complete("def solve(") == ")"
    assert complete("def solve(data)") == ":"
    assert complete("def solve(data):\n    ").startswith("pass")


def test_demo_revision_returns_the_code_with_a_visible_valid_change() -> None:
    code = "from __future__ import annotations\n\n\ndef solve(x):\n    return x\n"
    request: list[Message] = [
        {
            "role": "user",
            "content": f"Task...\n{code_start('app/core.py')}{code}{CODE_END}Debugging",
        },
        {"role": "user", "content": f"{FEEDBACK_HEADING}Handle empty x"},
    ]
    demo = DemoProvider()
    reply = asyncio.run(
        demo.complete_chat(
            request,
            model="",
            max_tokens=4096,
            timeout=1,
            purpose="feedback",
        )
    )
    assert "not a real AI" in reply.text
    assert reply.finish_reason == "stop"
    revised = reply.text.split("```python\n", 1)[1].rsplit("```", 1)[0]
    # The block names the file it revises (the one the task message showed).
    assert revised.startswith(f"{FILE_MARKER}app/core.py\n")
    revised = revised.split("\n", 1)[1]
    assert revised != code
    assert code.split("\n", 1)[1] in revised  # the rest is unchanged
    assert "Feedback (Debugging): Handle empty x" in revised
    ast.parse(revised)
    # A second round adds a comment (the docstring is already there), still valid Python.
    twice = add_note(revised, "again")
    assert twice.startswith(revised)
    assert twice.endswith("noted: again\n")
    ast.parse(twice)
    assert add_note("#!/usr/bin/env python3\nx = 1\n", "n").startswith("#!/usr/bin/env python3\n")
    # Like a real model, a revision longer than its budget is cut off: no usable code.
    cut = asyncio.run(
        demo.complete_chat(
            request,
            model="",
            max_tokens=40,
            timeout=1,
            purpose="feedback",
        )
    )
    assert (cut.finish_reason, cut.completion_tokens) == ("length", 40)
    assert extract_code(cut.text) is None


def test_replies_are_read_as_code_only_when_they_hold_code() -> None:
    full = "def solve(x):\n    return x\n"
    assert extract_code(f"Here you go:\n```python\n{full}```\nI fixed it.") == full
    # The longest block is the solution; a short snippet in the explanation is not.
    assert extract_code(f"```py\nx = 1\n```\nthen\n```python\n{full}```") == full
    assert extract_code(full) == full  # bare code
    assert extract_code("Sure.") is None  # parses as Python, defines nothing
    assert extract_code("Use a heap, then sort the result.") is None
    assert strip_fences("```python\nreturn x\n```") == "return x"
    assert strip_fences("return x") == "return x"
