"""A real local HTTP server speaking OpenAI chat completions, scripted by the test.

    with ScriptedLLM([Tools([("write_file", {"path": "solution.py", "text": "..."})]),
                      Text("Done.", usage=(120, 8))]) as llm:
        config = EndpointConfig(name="scripted", base_url=llm.base_url, model="m")
        ...
        assert llm.requests[0]["tools"]

``POST {base_url}/chat/completions`` answers with the next reply of the script (a list, used in
order) or with what ``script(request_body)`` returns. A request asking ``stream: true`` gets
server-sent events: a role chunk, the content in the chunks ``Text`` names (a string is split
after each space), tool-call fragments with their ``index`` (the arguments split in three),
a finish chunk, the usage chunk with ``choices: []`` only when the request asked
``stream_options.include_usage``, then ``data: [DONE]``. Other requests get one JSON
``chat.completion``. Replies:

- ``Text(text, usage=(prompt, completion) | None, cached=0, delay=0.0, chunk_delay=0.0)``;
  ``usage=None`` is a server that never reports usage (Ollama-like); ``cached`` goes in
  ``usage.prompt_tokens_details.cached_tokens``; ``delay`` waits before answering,
  ``chunk_delay`` between chunks.
- ``Tools([(name, arguments), ...], text="", usage=...)``: a dict is sent as JSON, a string raw
  (so invalid JSON can be scripted).
- ``Fail(status, message, retry_after=None)``: an OpenAI-style error body (``{key}`` in the
  message is replaced with the bearer token received, like providers that echo a wrong key);
  a 400/413 message about the context length carries ``code: context_length_exceeded``;
  ``retry_after`` adds a ``retry-after`` header (seconds).
- ``Cut(text_before_cut, error=None)``: some chunks (or half a JSON body), then the connection
  is closed without a finish reason or ``[DONE]``; with ``error``, an error event comes first.

``ScriptedLLM(script, model="gpt-x-2024")`` reports that model in its replies (servers often
name a dated version of the one asked for). A list script that runs out answers 500 "script
exhausted". Recorded: ``requests`` (bodies), ``authorizations`` (the Authorization header, ""
when absent) and ``paths``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_USAGE = (100, 10)


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request (one of the four kinds below)."""


@dataclass(frozen=True)
class Text(Reply):
    text: str | Sequence[str]
    usage: tuple[int, int] | None = DEFAULT_USAGE
    cached: int = 0
    delay: float = 0.0
    chunk_delay: float = 0.0


@dataclass(frozen=True)
class Tools(Reply):
    calls: Sequence[tuple[str, dict[str, Any] | str]]
    text: str = ""
    usage: tuple[int, int] | None = DEFAULT_USAGE


@dataclass(frozen=True)
class Fail(Reply):
    status: int
    message: str
    retry_after: float | None = None


@dataclass(frozen=True)
class Cut(Reply):
    text_before_cut: str
    error: str | None = None


Answer = Text | Tools | Cut
Script = Sequence[Reply] | Callable[[dict[str, Any]], Reply]


@dataclass
class ScriptedLLM:
    script: Script
    model: str = ""  # the model the replies say answered; "" for the one asked for
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply_to(self, body: dict[str, Any], auth: str, path: str) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(auth)
            self.paths.append(path)
            if callable(self.script):
                return self.script(body)
            if self._next >= len(self.script):
                return Fail(500, "ScriptedLLM: script exhausted")
            self._next += 1
            return self.script[self._next - 1]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out hang up mid-reply (BrokenPipeError): expected here


def _usage(usage: tuple[int, int] | None, cached: int = 0) -> dict[str, Any] | None:
    if usage is None:
        return None
    prompt, completion = usage
    body: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached:
        body["prompt_tokens_details"] = {"cached_tokens": cached}
    return body


def _tool_calls(reply: Tools) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for n, (name, args) in enumerate(reply.calls)
    ]


def _error_body(fail: Fail, auth: str) -> dict[str, Any]:
    message = fail.message.replace("{key}", auth.removeprefix("Bearer "))
    error: dict[str, Any] = {"message": message, "type": "invalid_request_error", "code": None}
    if fail.status in (400, 413) and re.search(r"context length|maximum context", message, re.I):
        error["code"] = "context_length_exceeded"
    elif fail.status == 429:
        error["type"], error["code"] = "requests", "rate_limit_exceeded"
    elif fail.status >= 500:
        error["type"] = "server_error"
    return {"error": error}


def _chunk(
    body: dict[str, Any], delta: dict[str, Any], finish: str | None = None
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"object": "chat.completion.chunk", "model": body.get("model", ""), "choices": [choice]}


def _events(body: dict[str, Any], reply: Answer) -> Iterator[dict[str, Any] | str | float]:
    """What a streamed reply sends, in order: chunks, "[DONE]", and pauses (floats)."""
    yield _chunk(body, {"role": "assistant", "content": ""})
    if isinstance(reply, Cut):
        yield from (_chunk(body, {"content": p}) for p in _split(reply.text_before_cut))
        if reply.error:
            yield {"error": {"message": reply.error, "type": "server_error"}}
        return
    if isinstance(reply, Tools):
        if reply.text:
            yield _chunk(body, {"content": reply.text})
        for index, call in enumerate(_tool_calls(reply)):
            name, args = call["function"]["name"], call["function"]["arguments"]
            head = {"index": index, "id": call["id"], "type": "function"}
            yield _chunk(body, {"tool_calls": [{**head, "function": {"name": name}}]})
            step = max(1, -(-len(args) // 3))
            for start in range(0, len(args), step):
                piece = {"index": index, "function": {"arguments": args[start : start + step]}}
                yield _chunk(body, {"tool_calls": [piece]})
        usage, finish = _usage(reply.usage), "tool_calls"
    else:
        parts = _split(reply.text) if isinstance(reply.text, str) else list(reply.text)
        for part in parts:
            yield _chunk(body, {"content": part})
            if reply.chunk_delay:
                yield reply.chunk_delay
        usage, finish = _usage(reply.usage, reply.cached), "stop"
    yield _chunk(body, {}, finish)
    if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
        yield {"object": "chat.completion.chunk", "choices": [], "usage": usage}
    yield "[DONE]"


def _split(text: str) -> list[str]:
    return re.findall(r"\S*\s*", text)[:-1] or [text]


def _completion(body: dict[str, Any], reply: Text | Tools) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    if isinstance(reply, Tools):
        message["content"] = reply.text or None
        message["tool_calls"] = _tool_calls(reply)
        usage, finish = _usage(reply.usage), "tool_calls"
    else:
        message["content"] = "".join(reply.text)
        usage, finish = _usage(reply.usage, reply.cached), "stop"
    return {
        "object": "chat.completion",
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def _handler(llm: ScriptedLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(404, json.dumps({"error": {"message": "no such route"}}))
            auth = self.headers.get("Authorization", "")
            reply = llm.reply_to(body, auth, self.path)
            if not isinstance(reply, Text | Tools | Cut | Fail):
                raise TypeError(f"not a reply: {reply!r}")
            if isinstance(reply, Fail):
                retry = (
                    {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"}
                )
                return self._send(reply.status, json.dumps(_error_body(reply, auth)), retry)
            body = {**body, "model": llm.model or body.get("model", "")}  # as replies name it
            if isinstance(reply, Text) and reply.delay:
                time.sleep(reply.delay)
            if body.get("stream"):
                self._start(200, "text/event-stream", {"Connection": "close"})
                for event in _events(body, reply):
                    if isinstance(event, float):
                        time.sleep(event)
                        continue
                    data = event if isinstance(event, str) else json.dumps(event)
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True
            elif isinstance(reply, Cut):  # half a body, then the connection closes
                raw = json.dumps({"choices": [{"message": {"content": reply.text_before_cut}}]})
                self._start(200, "application/json", {"Content-Length": str(2 * len(raw))})
                self.wfile.write(raw[: len(raw) // 2].encode())
                self.close_connection = True
            else:
                self._send(200, json.dumps(_completion(body, reply)))

        def _start(self, status: int, content_type: str, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()

        def _send(self, status: int, raw: str, headers: dict[str, str] | None = None) -> None:
            self._start(
                status, "application/json", {"Content-Length": str(len(raw)), **(headers or {})}
            )
            self.wfile.write(raw.encode())

    return Handler
