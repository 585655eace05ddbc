"""Scripted models for sweep tests (served by tests/llm_server.py's ScriptedLLM)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.evaluation.grading_fixtures import instance
from tests.llm_server import Tools


def scripted_solver(slug: str | None = None) -> Callable[[dict[str, Any]], Tools]:
    """A model that writes a reference solution, then submits. Conversations alternate: the
    first (and every odd one) writes the efficient reference, which passes; the others the
    naive one, which fails the performance tests. Usage: 1000 + 200 tokens for the write,
    500 + 20 for the submit."""
    references = (instance(slug) if slug else instance()).references
    conversations: list[int] = []

    def reply(body: dict[str, Any]) -> Tools:
        if not any(m["role"] == "assistant" for m in body["messages"]):
            conversations.append(len(conversations))
        kind = "efficient" if conversations[-1] % 2 == 0 else "naive"
        if any(m["role"] == "tool" for m in body["messages"]):
            return Tools([("submit", {})], usage=(500, 20))
        path = next(iter(references[kind]))
        return Tools(
            [("write_file", {"path": path, "content": references[kind][path]})],
            usage=(1000, 200),
        )

    return reply
