"""The offline demo assistant: deterministic, helpful-ish, and honest about being a demo.

It lets the embedded default study, dry runs and tests use every AI mode without a network or
an API key. Replies are built from the request alone (same request, same reply); token counts
are estimated. Every chat and feedback reply says it is a demo, and the UI shows a badge.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ide_bridge.ai.providers.base import (
    CODE_END,
    CODE_FENCE,
    CODE_START,
    CURSOR,
    FEEDBACK_HEADING,
    FILE_MARKER,
    Message,
    ProviderReply,
    Purpose,
    estimate_prompt_tokens,
    estimate_tokens,
)

DEMO_LABEL = "Demo assistant — not a real AI."

_TIPS = {
    "debugging": (
        "Read the failing test's message from the bottom up: the last line names the error.",
        "Reproduce it with the smallest input from task_data.json and print intermediate values.",
        "Check the edge cases the README lists (empty input, ties, limits).",
    ),
    "testing": (
        "Run the visible tests after each small change, not only at the end.",
        "A visible test that passes does not prove the hidden ones will: the README's rules "
        "and limits matter too.",
    ),
    "planning": (
        "Restate the task in one sentence, then list the inputs, outputs and rules from the "
        "README.",
        "Write the function signature from the interface section first, with a docstring.",
        "Solve a tiny example by hand, then turn the steps into code.",
    ),
}


class DemoProvider:
    name = "demo"
    is_demo = True

    async def complete_chat(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        max_tokens: int,
        timeout: float,
        purpose: Purpose = "chat",
    ) -> ProviderReply:
        users = [m["content"] for m in messages if m["role"] == "user"]
        last_user = users[-1] if users else ""
        if purpose == "complete":
            text = demo_completion(last_user)
        elif purpose == "feedback":
            text = demo_revision(users[-2] if len(users) > 1 else "", last_user)
        else:
            text = demo_chat(last_user)
        # Like a real model, a reply longer than its budget is cut off (a cut revision has no
        # closing fence, so the gateway applies nothing).
        truncated = _truncate_to_tokens(text, max_tokens)
        return ProviderReply(
            text=truncated,
            prompt_tokens=estimate_prompt_tokens(messages),
            completion_tokens=estimate_tokens(truncated),
            usage_source="estimated",
            finish_reason="stop" if truncated == text else "length",
            model=model or "demo",
        )


def _truncate_to_tokens(text: str, max_tokens: int) -> str:
    limit = max(1, max_tokens) * 4
    return text if len(text) <= limit else text[:limit]


def demo_chat(question: str) -> str:
    lowered = question.lower()
    if any(w in lowered for w in ("error", "traceback", "exception", "fail", "bug", "wrong")):
        topic = "debugging"
    elif "test" in lowered:
        topic = "testing"
    else:
        topic = "planning"
    quoted = " ".join(question.split())[:160] or "(an empty message)"
    tips = "\n".join(f"{i}. {tip}" for i, tip in enumerate(_TIPS[topic], start=1))
    return (
        f"{DEMO_LABEL} This offline stand-in does not read your code or the task; it "
        "answers every message with the same kind of generic advice.\n\n"
        f"You wrote: “{quoted}”\n\n"
        f"A {topic} checklist that often helps:\n{tips}\n\n"
        "The task README is the authoritative description: when in doubt, re-read its "
        "requirements and the interface section."
    )


def demo_completion(fim: str) -> str:
    """A small, deterministic continuation of the line at the cursor."""
    prefix = fim.split(CURSOR, 1)[0]
    line = prefix.rsplit("\n", 1)[-1]
    stripped = line.strip()
    if stripped.endswith("("):
        return ")"
    if stripped.startswith(("def ", "class ")) and not stripped.endswith(":"):
        return ":" if stripped.endswith(")") or stripped.startswith("class ") else "):"
    if stripped.startswith("#"):
        return "  (demo suggestion)"
    if not stripped:
        lines = prefix.split("\n")
        previous = lines[-2] if len(lines) > 1 else ""
        if previous.rstrip().endswith(":"):
            return "pass  # demo suggestion: replace with your code"
        return "# demo suggestion: describe the next step here"
    return "  # demo suggestion"


def demo_revision(task: str, feedback_message: str) -> str:
    """The current file with one visible, harmless improvement, in a python block naming the
    file. The file, its code and the stage come from the task message (after its last CODE_END
    only the stage label follows); the participant's feedback, from its own message, is only
    quoted."""
    start, end = task.rfind(CODE_START), task.rfind(CODE_END)
    fence = task.find(CODE_FENCE, start) if start >= 0 else -1
    path = task[start + len(CODE_START) : fence] if 0 <= start < fence < end else ""
    code = task[fence + len(CODE_FENCE) : end] if path else ""
    stage = " ".join(task[end + len(CODE_END) :].split()) if end >= 0 else ""
    stage = stage or "general"
    feedback = " ".join(feedback_message.removeprefix(FEEDBACK_HEADING).split())[:120]
    revised = add_note(code, f"Feedback ({stage}): {feedback or '(empty)'}")
    return (
        f"{DEMO_LABEL} It cannot really revise your solution; to show how the feedback "
        "protocol works it records your feedback in the code and changes nothing else.\n\n"
        f"```python\n{FILE_MARKER}{path}\n{revised}```\n"
    )


def add_note(code: str, note: str) -> str:
    """A module docstring naming the note if the code has none; otherwise a comment at the end.
    The result stays valid Python whenever the input was."""
    note = note.replace('"""', "'''").replace("\\", "/")
    try:
        has_docstring = ast.get_docstring(ast.parse(code)) is not None
    except SyntaxError:
        has_docstring = True  # don't risk putting a docstring into broken code
    if not code.endswith("\n") and code:
        code += "\n"
    if has_docstring:
        return f"{code}# Demo assistant (not a real AI) noted: {note}\n"
    lines = code.splitlines(keepends=True)
    head = 0  # keep a shebang and an encoding line first
    while head < len(lines) and head < 2 and _is_header(lines[head]):
        head += 1
    docstring = f'"""Revised by the demo assistant (not a real AI).\n\n{note}\n"""\n'
    return "".join(lines[:head]) + docstring + "".join(lines[head:])


def _is_header(line: str) -> bool:
    return line.startswith("#!") or (line.startswith("#") and "coding" in line)
