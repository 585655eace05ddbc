"""The AI providers: OpenAI-compatible chat completions against a local server speaking that
protocol (streaming, the usage chunk, missing usage, errors, timeouts), and the demo assistant.

``FakeOpenAI`` is also used by the gateway's HTTP tests. It listens on 127.0.0.1 only; the
scenario is the first path segment of the base URL (``http://127.0.0.1:PORT/<scenario>/v1``).
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

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

KEY = "sk-test-0123456789abcdef"
MESSAGES: list[Message] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello to the world, please."},
]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out hang up mid-reply (BrokenPipeError): expected here


class FakeOpenAI:
    """A local OpenAI-compatible ``/chat/completions`` endpoint; records every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply_parts = ["Hello", ", ", "world."]
        self.usage = {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}
        self.server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def url(self, scenario: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{scenario}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), **body})
                scenario = self.path.strip("/").split("/")[0]
                getattr(self, "scenario_" + scenario.replace("-", "_"))(body)

            def _start(self, status: int, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.end_headers()

            def _event(self, data: Any) -> None:
                text = data if isinstance(data, str) else json.dumps(data)
                self.wfile.write(f"data: {text}\n\n".encode())
                self.wfile.flush()

            def _chunk(self, body: dict[str, Any], delta: dict[str, Any], finish: Any) -> None:
                choice = {"index": 0, "delta": delta, "finish_reason": finish}
                self._event(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "model": body["model"] + "-2024",
                        "choices": [choice],
                        "usage": None,
                    }
                )

            def _stream(self, body: dict[str, Any], *, usage: bool, done: bool = True) -> None:
                self._start(200, "text/event-stream")
                self._chunk(body, {"role": "assistant", "content": ""}, None)
                for part in fake.reply_parts:
                    self._chunk(body, {"content": part}, None)
                self._chunk(body, {}, "stop")
                wants_usage = (body.get("stream_options") or {}).get("include_usage")
                if usage and wants_usage:  # the extra final chunk, choices == []
                    self._event({"id": "chatcmpl-1", "choices": [], "usage": fake.usage})
                if done:
                    self._event("[DONE]")

            def scenario_reply(self, body: dict[str, Any]) -> None:
                self._stream(body, usage=True)

            def scenario_no_usage(self, body: dict[str, Any]) -> None:  # like Ollama
                self._stream(body, usage=False)

            def scenario_json(self, body: dict[str, Any]) -> None:  # ignores "stream"
                self._start(200, "application/json")
                message = {"role": "assistant", "content": "".join(fake.reply_parts)}
                reply = {
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": fake.usage,
                }
                self.wfile.write(json.dumps(reply).encode())

            def scenario_cut(self, body: dict[str, Any]) -> None:  # dies mid-reply
                self._start(200, "text/event-stream")
                self._chunk(body, {"content": "Hel"}, None)

            def scenario_error_chunk(self, body: dict[str, Any]) -> None:
                self._start(200, "text/event-stream")
                self._chunk(body, {"content": "Hel"}, None)
                self._event({"error": {"message": "model overloaded", "type": "server_error"}})

            def scenario_error_500(self, body: dict[str, Any]) -> None:
                self._start(500, "application/json")
                self.wfile.write(b'{"error": {"message": "boom", "type": "server_error"}}')

            def scenario_error_401(self, body: dict[str, Any]) -> None:
                # Real providers echo (part of) the key; the platform must not pass it on.
                auth = self.headers.get("Authorization", "")
                self._start(401, "application/json")
                message = f"Incorrect API key provided: {auth.removeprefix('Bearer ')}"
                self.wfile.write(json.dumps({"error": {"message": message}}).encode())

            def scenario_slow(self, body: dict[str, Any]) -> None:
                time.sleep(2)
                self._stream(body, usage=True)

            def scenario_whole_budget(self, body: dict[str, Any]) -> None:
                # A model that talks until max_tokens, a moment after the request arrived.
                time.sleep(0.3)
                self._start(200, "application/json")
                usage = {"prompt_tokens": 21, "completion_tokens": body["max_tokens"]}
                message = {"role": "assistant", "content": "Well, " * body["max_tokens"]}
                choice = {"index": 0, "message": message, "finish_reason": "length"}
                reply = {"model": body["model"], "choices": [choice], "usage": usage}
                self.wfile.write(json.dumps(reply).encode())

            def scenario_trickle(self, body: dict[str, Any]) -> None:
                # Every chunk arrives within a read timeout, the whole reply does not.
                self._start(200, "text/event-stream")
                for _ in range(20):
                    self._chunk(body, {"content": "."}, None)
                    time.sleep(0.1)
                self._event("[DONE]")

        return Handler


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def ask(provider: OpenAICompatProvider, timeout: float = 5.0) -> ProviderReply:
    return asyncio.run(
        provider.complete_chat(MESSAGES, model="gpt-test", max_tokens=50, timeout=timeout)
    )


def test_streamed_reply_with_the_usage_chunk_counts_provider_tokens(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAI_TEST_KEY", KEY)
    provider = OpenAICompatProvider(fake_openai.url("reply"), api_key_env="HAI_TEST_KEY")
    reply = ask(provider)
    assert reply == ProviderReply("Hello, world.", 21, 4, "provider", "stop", "gpt-test-2024")
    sent = fake_openai.requests[0]
    assert sent["path"] == "/reply/v1/chat/completions"
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["model"] == "gpt-test"
    assert sent["max_tokens"] == 50
    assert sent["messages"] == MESSAGES
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"


def test_a_server_without_usage_gives_estimated_tokens(fake_openai: FakeOpenAI) -> None:
    provider = OpenAICompatProvider(fake_openai.url("no-usage"))
    reply = ask(provider)
    assert reply.text == "Hello, world."
    assert reply.usage_source == "estimated"
    # ~4 characters per token plus 4 tokens of formatting per message.
    assert reply.completion_tokens == 4  # 13 characters
    assert reply.prompt_tokens == (4 + 4) + (4 + 8)  # 14 and 31 characters
    assert "Authorization" not in fake_openai.requests[0]["headers"]  # no key configured


def test_stream_usage_can_be_turned_off_for_servers_that_reject_it(
    fake_openai: FakeOpenAI,
) -> None:
    provider = OpenAICompatProvider(fake_openai.url("reply"), stream_usage=False)
    reply = ask(provider)
    assert "stream_options" not in fake_openai.requests[0]
    assert reply.usage_source == "estimated"


def test_a_plain_json_reply_is_read_too(fake_openai: FakeOpenAI) -> None:
    reply = ask(OpenAICompatProvider(fake_openai.url("json")))
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("Hello, world.", 21, 4)
    assert reply.usage_source == "provider"


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("error-500", "The AI provider had an internal error (HTTP 500)."),
        ("error-401", "The AI provider refused the platform's API key (HTTP 401)."),
        ("cut", "The AI provider's reply was cut off before it finished."),
        ("error-chunk", "The AI provider reported an error while answering."),
    ],
)
def test_provider_failures_become_one_sentence_errors_without_the_key(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    scenario: str,
    message: str,
) -> None:
    monkeypatch.setenv("HAI_TEST_KEY", KEY)
    provider = OpenAICompatProvider(fake_openai.url(scenario), api_key_env="HAI_TEST_KEY")
    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as caught:
        ask(provider)
    assert str(caught.value) == message
    assert KEY not in caught.value.detail
    assert KEY not in caplog.text
    assert KEY not in repr(provider)
    if scenario == "error-401":
        assert "[redacted]" in caught.value.detail


def test_a_server_that_does_not_answer_in_time_times_out(fake_openai: FakeOpenAI) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"did not answer within 0\.5 seconds"):
        ask(OpenAICompatProvider(fake_openai.url("slow")), timeout=0.5)
    assert time.monotonic() - started < 1.5


def test_the_timeout_bounds_the_whole_reply_not_each_chunk(fake_openai: FakeOpenAI) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="did not answer within"):
        ask(OpenAICompatProvider(fake_openai.url("trickle")), timeout=0.7)
    assert time.monotonic() - started < 1.5


def test_an_unreachable_server_and_missing_configuration_are_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeOpenAI() as fake:
        url = fake.url("reply")
    with pytest.raises(ProviderError, match="could not be reached"):
        ask(OpenAICompatProvider(url))  # the server is gone
    monkeypatch.delenv("HAI_MISSING_KEY", raising=False)
    with pytest.raises(ProviderError, match="API key is missing"):
        ask(OpenAICompatProvider(url, api_key_env="HAI_MISSING_KEY"))
    with pytest.raises(ProviderError, match="no base URL"):
        ask(OpenAICompatProvider(""))
    with pytest.raises(ProviderError, match="not configured"):
        provider_for("mystery")


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
