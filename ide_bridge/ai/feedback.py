"""The feedback-only arm (ELABORATION protocol): what the model is told, and the diff shown.

The participant cannot edit the code; each feedback message goes to the model with the task
description, the list of the workspace's files, the earlier feedback, every editable file and
the stage of work (one message), the feedback itself in a message of its own, and the model
answers with one complete revised file (applied by ``gateway.feedback``).

Which file a revision replaces (kept simple on purpose): the file its code block names on its
first line (``# file: app/rules.py``, ``FILE_MARKER``) when that is an editable file of the
task, else the first editable file (the main one: the entry point's module), which is also the
one the message shows last as the "current file". The marker line is not part of the revised text.
"""

from __future__ import annotations

import difflib

from ide_bridge.ai.providers import Message
from ide_bridge.ai.providers.base import CODE_END, FEEDBACK_HEADING, FILE_MARKER, code_start
from ide_bridge.models import AIRequest
from study.models import Trial
from study.trials.files import current_files, instance_of

# Earlier feedback messages repeated to the model (newest last).
FEEDBACK_HISTORY = 10
STAGE_LABELS = dict(AIRequest.Stage.choices)
FEEDBACK_SYSTEM = (
    "You write and revise the editable files of the programming task below. The participant "
    "cannot edit the code; they can only give you feedback, tagged with a stage of work "
    "(problem comprehension, solution planning, code generation or debugging). Apply their "
    "feedback and reply with one complete revised file in exactly one ```python code block "
    f"whose first line is '{FILE_MARKER}<path>' naming the file, followed by at most three "
    "sentences on what you changed."
)


def _fenced(code: str) -> str:
    return code if code.endswith("\n") or not code else code + "\n"


def feedback_prompt(
    trial: Trial, stage: str, feedback_text: str
) -> tuple[dict[str, str], list[Message]]:
    """(every editable file's current text, the conversation for the model)."""
    instance = instance_of(trial)
    current = current_files(trial)
    earlier = AIRequest.objects.filter(
        trial=trial, kind=AIRequest.Kind.FEEDBACK, status=AIRequest.Status.OK
    )
    history = "".join(
        f"- ({row.stage or 'no stage'}) {' '.join(feedback_of(row).split())}\n"
        for row in reversed(earlier.order_by("-created_at")[:FEEDBACK_HISTORY])
    )
    every = sorted({*instance.participant_files, *instance.images})
    first, *others = list(current)
    other_files = "".join(
        f"File {path}:\n```python\n{_fenced(current[path])}```\n\n" for path in others
    )
    label = STAGE_LABELS.get(stage, "not given")
    conversation: list[Message] = [
        {"role": "system", "content": FEEDBACK_SYSTEM},
        {
            "role": "user",
            "content": f"Task description (README.md):\n"
            f"{instance.participant_files.get('README.md', '')}\n\n"
            f"Files of the workspace: {', '.join(every)}\n"
            f"Editable files: {', '.join(current)}\n\n"
            + (f"Earlier feedback, oldest first:\n{history}\n" if history else "")
            + other_files
            + f"{code_start(first)}{_fenced(current[first])}{CODE_END}{label}",
        },
        {"role": "user", "content": f"{FEEDBACK_HEADING}{feedback_text}"},
    ]
    return current, conversation


def revision_target(code: str, editable: list[str]) -> tuple[str, str]:
    """(the editable path a revised file replaces, its text without the marker line)."""
    first_line, _, rest = code.partition("\n")
    if first_line.startswith(FILE_MARKER):
        named = first_line.removeprefix(FILE_MARKER).strip().strip("`'\"")
        return (named if named in editable else editable[0]), rest
    return editable[0], code


def feedback_of(row: AIRequest) -> str:
    """The participant's feedback text of an earlier feedback request (its last message)."""
    content = str(row.messages[-1].get("content", "")) if row.messages else ""
    return content.removeprefix(FEEDBACK_HEADING)


def unified_diff(before: str, after: str, path: str = "solution.py") -> str:
    def lines(text: str) -> list[str]:
        return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(True)]

    diff = difflib.unified_diff(lines(before), lines(after), f"{path} (before)", f"{path} (after)")
    return "".join(diff)
