"""What the agent is told: the system prompt and the task message.

The task message holds what a participant sees and nothing else: the README, the list of
workspace files, the text of the files (up to a size budget; the rest can be read with a tool,
or is shown truncated to a model without tools), and the images and diagrams as pictures when
the endpoint takes images. A diagram's source is never given, and an SVG diagram is never
given as text: a participant sees a picture, so does the model or nothing.
"""

from __future__ import annotations

import base64
from typing import Any

from evaluation.diagrams import render_png
from evaluation.spec import Instance
from evaluation.workspace_trees import README

# Characters of file text put in the task message: each file, then all files together. A
# model with tools reads the rest with read_file; a model without tools gets more up front.
FILE_BUDGET = {True: 20_000, False: 60_000}
TOTAL_BUDGET = {True: 80_000, False: 200_000}
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
}

SYSTEM_TOOLS = (
    "You are a software engineer working alone on a task in a small code workspace. Read the "
    "README and the files, change only the editable files, and use the tools: list_files, "
    "read_file, write_file (the whole new text of an editable file), run_visible_tests (runs "
    "the workspace's visible tests against your files and shows the output) and submit (hands "
    "in your files; nothing can change afterwards). Hidden tests grade the submission, and "
    "they also check efficiency. You have at most {attempts} test runs; when they are used up "
    "your files are submitted as they are."
)
SYSTEM_PLAIN = (
    "You are a software engineer working alone on a task in a small code workspace. Read the "
    "README and the files, and answer with the complete new text of the editable files in "
    "fenced code blocks: one ```python block is the whole of {main}; to write several files, "
    "start each block with a line `# file: PATH`. Every answer with code is run against the "
    "workspace's visible tests and you see the output. Hidden tests grade your last files, and "
    "they also check efficiency. You have at most {attempts} answers with code; write SUBMIT "
    "alone on a line to hand in your files earlier."
)


def is_image(instance: Instance, path: str) -> bool:
    """Pictures, not text: binary images and SVG diagrams."""
    return path in instance.images or path in instance.diagrams


def system_prompt(instance: Instance, *, tools: bool, attempts: int) -> str:
    template = SYSTEM_TOOLS if tools else SYSTEM_PLAIN
    return template.format(attempts=attempts, main=instance.editable[0])


def file_listing(instance: Instance, files: dict[str, str]) -> str:
    """One line per workspace file: path, size, and whether it is editable or a picture."""
    lines = []
    for path in sorted({*instance.participant_files, *instance.images, *files}):
        if is_image(instance, path):
            lines.append(f"{path} (image)")
            continue
        text = files.get(path, instance.participant_files.get(path, ""))
        role = "editable" if path in instance.editable else "read-only"
        lines.append(f"{path} ({role}, {len(text)} characters)")
    return "\n".join(lines)


def _shown_files(instance: Instance, files: dict[str, str], *, tools: bool) -> str:
    """The text of the workspace's files, editable ones first, within the budgets."""
    order = [*instance.editable, *sorted(instance.participant_files)]
    seen: set[str] = {README}
    left = TOTAL_BUDGET[tools]
    parts = []
    for path in order:
        if path in seen or is_image(instance, path):
            continue
        seen.add(path)
        text = files.get(path, instance.participant_files.get(path, ""))
        limit = min(FILE_BUDGET[tools], max(left, 0))
        if limit <= 0:
            parts.append(f"--- {path}: not shown (size budget used up) ---")
            continue
        shown = text[:limit]
        left -= len(shown)
        more = len(text) - len(shown)
        note = f"\n[... {more} more characters; read_file shows them]" if more and tools else ""
        if more and not tools:
            note = f"\n[... {more} more characters not shown]"
        parts.append(f"--- {path} ---\n{shown}{note}")
    return "\n\n".join(parts)


def image_parts(instance: Instance) -> list[dict[str, Any]]:
    """The task's pictures as data URLs (diagrams drawn as PNG from their SVG's source)."""
    parts: list[dict[str, Any]] = []
    for path, data in sorted(instance.images.items()):
        mime = IMAGE_TYPES.get(path[path.rfind(".") :].lower())
        if mime:
            parts.append(_image(path, mime, data))
    for svg, source in sorted(instance.diagrams.items()):
        parts.append(_image(svg, "image/png", render_png(source, svg)))
    return parts


def _image(path: str, mime: str, data: bytes) -> dict[str, Any]:
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}, "x-path": path}


def task_message(
    instance: Instance, files: dict[str, str], *, tools: bool, vision: bool
) -> dict[str, Any]:
    """The first user message."""
    readme = instance.participant_files.get(README, "")
    pictures = [p for p in sorted({*instance.images, *instance.diagrams})]
    text = (
        f"# Task\n\n{readme}\n\n# Workspace files\n\n{file_listing(instance, files)}\n\n"
        f"Editable files: {', '.join(instance.editable)}.\n\n"
        f"# File contents\n\n{_shown_files(instance, files, tools=tools)}"
    )
    if pictures and not vision:
        text += "\n\n(The images of this workspace cannot be shown to you.)"
    if not (pictures and vision):
        return {"role": "user", "content": text}
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for part in image_parts(instance):
        path = part.pop("x-path")
        content += [{"type": "text", "text": f"Image {path}:"}, part]
    return {"role": "user", "content": content}
