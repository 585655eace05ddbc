"""The chat arms' conversation: the system prompt, and the history the server keeps.

The browser sends only the participant's new message. The earlier turns come from the trial's
answered chat requests (what the participant asked, what the model replied), so no text the
model did not write reaches it, or the record, as the model's.
"""

from __future__ import annotations

from ide_bridge.ai.providers import Message
from ide_bridge.models import AIRequest
from study.models import Trial

CHAT_SYSTEM = (
    "You are a coding assistant helping a participant in a timed programming study. Answer "
    "concisely. Show code in fenced Python code blocks."
)
# Earlier turns sent along with a new message (user and assistant turns, newest kept).
MAX_HISTORY_TURNS = 40
MAX_HISTORY_CHARS = 48_000  # ~12k tokens


def chat_conversation(trial: Trial, message: str) -> list[Message]:
    """System prompt, the trial's earlier turns and the new message; beyond
    ``MAX_HISTORY_TURNS`` turns or ``MAX_HISTORY_CHARS`` characters the oldest are left out."""
    rows = AIRequest.objects.filter(
        trial=trial, kind=AIRequest.Kind.CHAT, status=AIRequest.Status.OK
    )
    history: list[Message] = []
    size = len(message)
    for row in rows.order_by("-created_at")[: MAX_HISTORY_TURNS // 2]:
        asked = str(row.messages[-1].get("content", "")) if row.messages else ""
        size += len(asked) + len(row.reply)
        if size > MAX_HISTORY_CHARS:
            break
        history[:0] = [
            {"role": "user", "content": asked},
            {"role": "assistant", "content": row.reply},
        ]
    return [
        {"role": "system", "content": CHAT_SYSTEM},
        *history,
        {"role": "user", "content": message},
    ]
