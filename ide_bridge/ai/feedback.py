"""The feedback-only arm (ELABORATION protocol): what the model is told, and the diff shown.

The participant cannot edit the code; each feedback message goes to the model with the task
description, the earlier feedback, the current ``solution.py`` and the stage of work (one
message), the feedback itself in a message of its own, and the model answers with a complete
revised ``solution.py`` (applied by ``gateway.feedback``).
"""

from __future__ import annotations

import difflib

from evaluation.instances import get_instance
from ide_bridge.ai.providers import Message
from ide_bridge.ai.providers.base import CODE_END, CODE_START, FEEDBACK_HEADING
from ide_bridge.models import AIRequest
from study.models import Trial

# Earlier feedback messages repeated to the model (newest last).
FEEDBACK_HISTORY = 10
STAGE_LABELS = dict(AIRequest.Stage.choices)
FEEDBACK_SYSTEM = (
    "You write and revise solution.py for the programming task below. The participant cannot "
    "edit the code; they can only give you feedback, tagged with a stage of work (problem "
    "comprehension, solution planning, code generation or debugging). Apply their feedback "
    "and reply with the complete revised solution.py in exactly one ```python code block, "
    "followed by at most three sentences on what you changed."
)


def feedback_prompt(trial: Trial, stage: str, feedback_text: str) -> tuple[str, list[Message]]:
    """(the code to revise, the conversation for the model)."""
    files = get_instance(trial.template_slug, trial.seed).participant_files
    base = trial.draft_code if trial.draft_saved_at else files.get("solution.py", "")
    earlier = AIRequest.objects.filter(
        trial=trial, kind=AIRequest.Kind.FEEDBACK, status=AIRequest.Status.OK
    )
    history = "".join(
        f"- ({row.stage or 'no stage'}) {' '.join(feedback_of(row).split())}\n"
        for row in reversed(earlier.order_by("-created_at")[:FEEDBACK_HISTORY])
    )
    code = base if base.endswith("\n") or not base else base + "\n"
    label = STAGE_LABELS.get(stage, "not given")
    conversation: list[Message] = [
        {"role": "system", "content": FEEDBACK_SYSTEM},
        {
            "role": "user",
            "content": f"Task description (README.md):\n{files.get('README.md', '')}\n\n"
            + (f"Earlier feedback, oldest first:\n{history}\n" if history else "")
            + f"{CODE_START}{code}{CODE_END}{label}",
        },
        {"role": "user", "content": f"{FEEDBACK_HEADING}{feedback_text}"},
    ]
    return base, conversation


def feedback_of(row: AIRequest) -> str:
    """The participant's feedback text of an earlier feedback request (its last message)."""
    content = str(row.messages[-1].get("content", "")) if row.messages else ""
    return content.removeprefix(FEEDBACK_HEADING)


def unified_diff(before: str, after: str) -> str:
    def lines(text: str) -> list[str]:
        return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(True)]

    diff = difflib.unified_diff(
        lines(before), lines(after), "solution.py (before)", "solution.py (after)"
    )
    return "".join(diff)
