"""What every AI provider offers the gateway, and the helpers they share.

A provider turns chat messages into one reply. It never sees the trial, the arm or the
participant: the gateway authorises the request, picks the model and the token budget, and
records the result. Providers are async so that a slow LLM never blocks a server thread.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict

from evaluation.llm.client import UsageSource
from evaluation.llm.client import estimate_prompt_tokens as estimate_prompt_tokens
from evaluation.llm.client import estimate_tokens as estimate_tokens

# Marks the cursor in the user message of an inline-completion request (prefix + CURSOR + suffix).
CURSOR = "<CURSOR>"
# A feedback request ends with two user messages (the gateway writes them, the demo reads them):
# the task, with the file to revise (``code_start(path)``, its text, then CODE_END) and then the
# stage label; and the participant's feedback, alone in the last message after
# FEEDBACK_HEADING. The participant's text is never in the message that carries the code, so no
# marker it contains can change what is read as code. A revision of another editable file than
# the one shown starts its code block with FILE_MARKER and that file's path.
CODE_START = "Current file "  # + path + CODE_FENCE
CODE_FENCE = ":\n```python\n"
CODE_END = "```\nStage: "
FEEDBACK_HEADING = "Feedback:\n"
FILE_MARKER = "# file: "


def code_start(path: str) -> str:
    return f"{CODE_START}{path}{CODE_FENCE}"


# Token estimates when a provider reports no usage are the client's (``estimate_tokens``,
# ``estimate_prompt_tokens``: ~4 characters per token); rows counted so are marked
# usage_source="estimated".
Purpose = Literal["chat", "complete", "feedback"]


class Message(TypedDict):
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class ProviderReply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    usage_source: UsageSource
    finish_reason: str
    model: str  # the model that answered, as reported by the provider (or the one requested)


class ProviderError(Exception):
    """The provider failed. ``str(exc)`` is one sentence fit for the participant; ``detail`` is
    for researchers (status code, a snippet of the body) and never contains the API key."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class Provider(Protocol):
    name: str  # stored in AIRequest.provider
    is_demo: bool

    async def complete_chat(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        max_tokens: int,
        timeout: float,
        purpose: Purpose = "chat",
    ) -> ProviderReply:
        """One reply to ``messages``. Raises ProviderError on any failure, timeouts included.
        ``purpose`` is a hint (the demo provider answers differently); real providers ignore it.
        """
        ...


def strip_fences(text: str) -> str:
    """A reply that is one fenced code block, unwrapped (completions must be bare code)."""
    match = re.fullmatch(r"\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*", text, re.DOTALL)
    return match.group(1) if match else text


def extract_code(reply: str) -> str | None:
    """The complete revised file in a reply: its longest fenced code block, or the whole reply
    if it is bare Python. None when there is no usable code."""
    blocks = re.findall(r"^```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)^```", reply, re.M | re.S)
    if blocks:
        code = max(blocks, key=len)
    else:  # bare code, if it parses and defines something ("Sure." parses too)
        code = reply.strip() + "\n"
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return None
        if not any(isinstance(node, _DEFINITIONS) for node in tree.body):
            return None
    return code if code.strip() else None


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
