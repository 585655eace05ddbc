"""The agent harness (C0, and C1 with minimal interventions): one agent, one instance.

A loop of steps in the spirit of the paper's HAI-EC controller: the model gets the task (what a
participant sees), then each step sends the conversation, executes what the reply asks for
(tool calls, or fenced code blocks in a plain reply), and adds what happened. An *attempt* is
one run of the visible tests against the agent's files; after ``attempts`` of them, a
``submit``, the token budget or the request limit, the agent stops and its files are graded by
the caller. Hidden tests never reach the model: it only ever sees visible-test output.

Everything the harness does is reported to a :class:`Recorder` as it happens (``units`` stores
it). Model failures are recorded; retryable ones are retried by the client, a context-length
error ends the run, other failures raise :class:`AgentFailure` (the platform, not the model,
could not finish).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from evaluation.llm.actions import (
    TOOLS,
    ActionError,
    AgentWorkspace,
    parse_code_reply,
    parse_tool_call,
)
from evaluation.llm.client import (
    ChatResult,
    EndpointConfig,
    LLMError,
    chat_sync,
    estimate_prompt_tokens,
)
from evaluation.llm.interventions import Pattern, catalogue_notes
from evaluation.llm.prompts import system_prompt, task_message
from evaluation.sandbox.base import Sandbox
from evaluation.spec import Instance
from evaluation.visible_tests import run_visible_tests

MAX_TOKENS = 4096  # reply length asked for per request
REQUEST_TIMEOUT_S = 300.0
IDLE_TURNS = 3  # replies in a row without an action end the run
FEEDBACK_CHARS = 12_000  # of visible-test output sent back to the model
PLATFORM_TROUBLE = frozenset({"unavailable", "sandbox_error"})  # visible-test statuses


def request_limit(attempts: int) -> int:
    """Model requests allowed in a run: a few to read and write per attempt."""
    return 4 * attempts + 8


@dataclass(frozen=True)
class Limits:
    attempts: int = 25
    budget_tokens: int | None = None
    condition: str = "C0"


@dataclass
class Outcome:
    files: dict[str, str]
    stop_reason: str = ""
    requests: int = 0
    attempts_used: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    interventions: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Step:
    """One model request and what came of it, as recorded."""

    index: int
    messages: list[dict[str, Any]]  # the messages added since the previous request
    result: ChatResult | None = None
    error: LLMError | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)


class Recorder(Protocol):
    def step(self, step: Step, outcome: Outcome) -> None: ...
    def intervention(self, pattern: Pattern, message: str) -> None: ...
    def manual_interventions(self) -> list[tuple[str, str]]: ...


class AgentFailure(Exception):
    """The platform could not finish the run (the provider kept failing, a bad endpoint)."""


@dataclass
class _Run:
    instance: Instance
    endpoint: EndpointConfig
    limits: Limits
    recorder: Recorder
    sandbox: Sandbox | None
    chat: Callable[..., ChatResult]
    workspace: AgentWorkspace = field(init=False)
    outcome: Outcome = field(init=False)
    messages: list[dict[str, Any]] = field(default_factory=list)
    sent: int = 0  # messages already recorded with a request
    given: set[str] = field(default_factory=set)  # catalogue entries delivered
    idle: int = 0

    def __post_init__(self) -> None:
        self.workspace = AgentWorkspace(self.instance)
        self.outcome = Outcome(files=self.workspace.files)
        tools = self.endpoint.supports_tools
        self.messages = [
            {
                "role": "system",
                "content": system_prompt(self.instance, tools=tools, attempts=self.limits.attempts),
            },
            task_message(
                self.instance,
                self.workspace.files,
                tools=tools,
                vision=self.endpoint.supports_vision,
            ),
        ]


def run_agent(
    instance: Instance,
    endpoint: EndpointConfig,
    limits: Limits,
    recorder: Recorder,
    *,
    sandbox: Sandbox | None = None,
    chat: Callable[..., ChatResult] = chat_sync,
) -> Outcome:
    run = _Run(instance, endpoint, limits, recorder, sandbox, chat)
    while not run.outcome.stop_reason:
        _step(run)
    run.outcome.files = dict(run.workspace.files)
    return run.outcome


def _step(run: _Run) -> None:
    outcome, limits = run.outcome, run.limits
    if outcome.requests >= request_limit(limits.attempts):
        outcome.stop_reason = "requests"
        return
    for category, note in run.recorder.manual_interventions():  # taken only when sent next
        run.messages.append(
            {"role": "user", "content": f"Note from the researcher ({category}): {note}"}
        )
        outcome.interventions += 1
    max_tokens = MAX_TOKENS
    tools = TOOLS if run.endpoint.supports_tools else None
    if limits.budget_tokens is not None:
        # The prompt counts too: stop before a request whose prompt alone would overshoot.
        left = limits.budget_tokens - outcome.tokens - estimate_prompt_tokens(run.messages, tools)
        if left <= 0:
            outcome.stop_reason = "budget"
            return
        max_tokens = min(MAX_TOKENS, left)
    step = Step(index=outcome.requests, messages=run.messages[run.sent :])
    run.sent = len(run.messages)
    outcome.requests += 1
    try:
        result = run.chat(
            run.endpoint,
            run.messages,
            tools=tools,
            max_tokens=max_tokens,
            timeout=REQUEST_TIMEOUT_S,
        )
    except LLMError as exc:
        step.error = exc
        run.recorder.step(step, outcome)
        if exc.kind == "context_length":
            outcome.stop_reason = "context"
            return
        raise AgentFailure(f"{exc} ({exc.detail})" if exc.detail else str(exc)) from exc
    step.result = result
    outcome.prompt_tokens += result.prompt_tokens
    outcome.completion_tokens += result.completion_tokens
    outcome.cached_tokens += result.cached_tokens
    outcome.cost += run.endpoint.cost(result.prompt_tokens, result.completion_tokens)
    assistant: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        assistant["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in result.tool_calls
        ]
    run.messages.append(assistant)
    run.sent = len(run.messages)
    acted = _tool_calls(run, step) if result.tool_calls else _plain_reply(run, step)
    run.idle = 0 if acted else run.idle + 1
    if not outcome.stop_reason and run.idle >= IDLE_TURNS:
        outcome.stop_reason = "no_action"
    if not outcome.stop_reason and outcome.attempts_used >= limits.attempts:
        outcome.stop_reason = "attempts"
    run.recorder.step(step, outcome)


def _tool_calls(run: _Run, step: Step) -> bool:
    """Execute each call in order and answer it; returns whether any call did something."""
    assert step.result is not None
    acted = False
    for call in step.result.tool_calls:
        if run.outcome.stop_reason or run.outcome.attempts_used >= run.limits.attempts:
            answer = "Not done: the task has ended."
        else:
            request = parse_tool_call(call.name, call.arguments)
            answer, did = _execute(run, step, request.name, request.arguments, request.problem)
            acted = acted or did
        run.messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
    return acted


def _execute(
    run: _Run, step: Step, name: str, arguments: dict[str, Any], problem: str
) -> tuple[str, bool]:
    action: dict[str, Any] = {"tool": name}
    step.actions.append(action)
    if problem:
        action["error"] = problem
        return _with_notes(run, problem, "action"), False
    workspace = run.workspace
    try:
        if name == "list_files":
            answer = workspace.list_files()
        elif name == "read_file":
            action["path"] = arguments["path"]
            answer = workspace.read_file(arguments["path"], int(arguments.get("offset", 0)))
        elif name == "write_file":
            action["path"] = arguments["path"]
            answer = workspace.write_files({arguments["path"]: arguments["content"]})
        elif name == "run_visible_tests":
            answer = _visible_tests(run, action)
        else:  # submit
            run.outcome.stop_reason = "submitted"
            answer = "Submitted."
    except ActionError as exc:
        action["error"] = str(exc)
        return _with_notes(run, str(exc), "action"), False
    return answer, True


def _plain_reply(run: _Run, step: Step) -> bool:
    """Fenced code blocks as files, then a visible-test run; SUBMIT ends the task."""
    assert step.result is not None
    main = run.instance.editable[0]
    reply = parse_code_reply(step.result.text, main)
    if reply.problem:
        step.actions.append({"error": reply.problem})
        run.messages.append({"role": "user", "content": _with_notes(run, reply.problem, "action")})
        return False
    if not reply.files:
        if reply.submit:
            step.actions.append({"tool": "submit"})
            run.outcome.stop_reason = "submitted"
            return True
        hint = (
            "No action: call a tool (submit when you are done)."
            if run.endpoint.supports_tools
            else "No action: answer with code blocks, or SUBMIT alone on a line to hand in."
        )
        step.actions.append({"error": "no action"})
        run.messages.append({"role": "user", "content": hint})
        return False
    action: dict[str, Any] = {"tool": "write_file", "paths": sorted(reply.files)}
    step.actions.append(action)
    try:
        written = run.workspace.write_files(reply.files)
    except ActionError as exc:
        action["error"] = str(exc)
        run.messages.append({"role": "user", "content": _with_notes(run, str(exc), "action")})
        return False
    if reply.submit:
        step.actions.append({"tool": "submit"})
        run.outcome.stop_reason = "submitted"
        return True
    test_action: dict[str, Any] = {"tool": "run_visible_tests"}
    step.actions.append(test_action)
    run.messages.append(
        {"role": "user", "content": f"{written}\n\n{_visible_tests(run, test_action)}"}
    )
    return True


def _visible_tests(run: _Run, action: dict[str, Any]) -> str:
    started = time.monotonic()
    result = run_visible_tests(run.instance, run.workspace.files, sandbox=run.sandbox)
    if result["status"] in PLATFORM_TROUBLE:  # never the model's attempt: the run is retried
        raise AgentFailure(f"the visible tests could not run: {result['message']}")
    run.outcome.attempts_used += 1
    action.update(
        {
            "status": result["status"],
            "tests_run": result["tests_run"],
            "failures": result["failures"],
            "errors": result["errors"],
            "ms": round((time.monotonic() - started) * 1000),
        }
    )
    output = str(result.get("output") or "")
    if len(output) > FEEDBACK_CHARS:
        output = output[: FEEDBACK_CHARS // 2] + "\n[...]\n" + output[-FEEDBACK_CHARS // 2 :]
    counts = f"{result['tests_run']} run, {result['failures']} failures, {result['errors']} errors"
    text = f"Visible tests: {result['status']} ({counts}).\n{output}"
    left = run.limits.attempts - run.outcome.attempts_used
    text += (
        f"\n[{left} test runs left]"
        if left > 0
        else "\n[No test runs left: your files are submitted as they are.]"
    )
    return _with_notes(run, text, "tests")


def _with_notes(run: _Run, text: str, on: str) -> str:
    """C1: the catalogue's notes for procedural failures seen in ``text``, recorded."""
    if run.limits.condition != "C1":
        return text
    notes = catalogue_notes(
        text,
        on="tests" if on == "tests" else "action",
        runtime=run.instance.template.runtime,
        slug=run.instance.template.slug,
        given=run.given,
    )
    for pattern, note in notes:
        run.recorder.intervention(pattern, note)
        run.outcome.interventions += 1
        text += f"\n\n{note}"
    return text


def stored_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as recorded: image data URLs replaced by a short description."""
    stored = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get("type") == "image_url":
                    url = str(part["image_url"]["url"])
                    parts.append(
                        {"type": "image_url", "image_url": {"url": f"[{len(url)} characters]"}}
                    )
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        stored.append(json.loads(json.dumps(message)))
    return stored
