"""What the agent can do, and how its replies become actions.

With tool calling the model uses the five tools of ``TOOLS``; each call is executed against an
:class:`AgentWorkspace` and answered with a ``tool`` message. Without tool calls, a reply's
fenced code blocks are files: one ```python block is the whole main editable file, several
blocks each start with ``# file: PATH``; anything else is a turn without an action.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from evaluation.llm.prompts import file_listing, is_image
from evaluation.spec import Instance
from evaluation.submissions import BadSubmission, check_files

READ_CHUNK = 32_000  # characters read_file returns at once
FILE_MARKER = "# file: "
SUBMIT_WORD = re.compile(r"^\s*SUBMIT\s*$", re.M)
SHELLS = frozenset({"bash", "sh", "shell", "console", "zsh", "cmd", "powershell"})
PYTHON = frozenset({"", "python", "python3", "py"})
_BLOCK = re.compile(r"^```[ \t]*([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _tool(name: str, description: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties or {},
                "required": sorted(properties or {}),
            },
        },
    }


TOOLS: list[dict[str, Any]] = [
    _tool("list_files", "List the workspace's files (editable, read-only, images)."),
    _tool(
        "read_file",
        f"Read a text file of the workspace (up to {READ_CHUNK} characters from offset).",
        {"path": {"type": "string"}, "offset": {"type": "integer"}},
    ),
    _tool(
        "write_file",
        "Replace the whole text of an editable file.",
        {"path": {"type": "string"}, "content": {"type": "string"}},
    ),
    _tool("run_visible_tests", "Run the visible tests against the current files."),
    _tool("submit", "Hand in the current files for grading; this ends the task."),
]
# read_file's offset is optional.
TOOLS[1]["function"]["parameters"]["required"] = ["path"]
TOOL_NAMES = frozenset(t["function"]["name"] for t in TOOLS)


class ActionError(Exception):
    """An action that cannot be done; the message goes back to the model."""


@dataclass
class AgentWorkspace:
    """The instance's workspace as the agent sees it, with its editable files as it left them."""

    instance: Instance
    files: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.files:
            self.files = self.instance.starter_files()

    def list_files(self) -> str:
        return file_listing(self.instance, self.files)

    def read_file(self, path: str, offset: int = 0) -> str:
        instance = self.instance
        if is_image(instance, path):
            raise ActionError(f"{path} is an image, not a text file.")
        text = self.files.get(path, instance.participant_files.get(path))
        if text is None:
            raise ActionError(f"There is no file {path!s:.200}; list_files shows the files.")
        if offset < 0 or offset > len(text):
            raise ActionError(f"offset must be between 0 and {len(text)}.")
        chunk = text[offset : offset + READ_CHUNK]
        rest = len(text) - offset - len(chunk)
        return chunk + (
            f"\n[... {rest} more characters from offset {offset + len(chunk)}]" if rest else ""
        )

    def write_files(self, changes: dict[str, str]) -> str:
        """Replace editable files; refused as a whole with the engine's sentence if any is
        read-only, unknown or too large."""
        try:
            self.files = check_files(self.instance, {**self.files, **changes})
        except BadSubmission as exc:
            raise ActionError(str(exc)) from None
        return "Wrote " + ", ".join(f"{p} ({len(t)} characters)" for p, t in changes.items()) + "."


@dataclass(frozen=True)
class ToolRequest:
    """A parsed tool call: the tool and its arguments, or why it could not be parsed."""

    name: str
    arguments: dict[str, Any]
    problem: str = ""


def parse_tool_call(name: str, raw_arguments: str) -> ToolRequest:
    """Strict parsing: an unknown tool or arguments that are not a JSON object give a problem
    the model is told about (a turn without an action)."""
    if name not in TOOL_NAMES:
        return ToolRequest(
            name, {}, f"There is no tool {name!s:.100}; use one of {', '.join(sorted(TOOL_NAMES))}."
        )
    try:
        arguments = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolRequest(name, {}, f"The arguments of {name} are not valid JSON ({exc.msg}).")
    if not isinstance(arguments, dict):
        return ToolRequest(name, {}, f"The arguments of {name} must be a JSON object.")
    for key in ("path", "content"):
        if key in arguments and not isinstance(arguments[key], str):
            return ToolRequest(name, {}, f"{name}: {key} must be a string.")
    required = {"read_file": ("path",), "write_file": ("path", "content")}.get(name, ())
    missing = [key for key in required if key not in arguments]
    if missing:
        return ToolRequest(name, {}, f"{name} needs {' and '.join(missing)}.")
    offset = arguments.get("offset", 0)
    if name == "read_file" and (not isinstance(offset, int) or isinstance(offset, bool)):
        return ToolRequest(name, {}, "read_file: offset must be an integer.")
    return ToolRequest(name, arguments)


@dataclass(frozen=True)
class CodeReply:
    """What a plain reply asks for: files to write (maybe none), and whether it submits."""

    files: dict[str, str]
    submit: bool
    problem: str = ""


def parse_code_reply(text: str, main_file: str) -> CodeReply:
    """Fenced code blocks as files. A block starting with ``# file: PATH`` is that file; one
    Python block without a marker is the main file. Shell blocks are commands, which this
    workspace cannot run (the problem says so); other blocks without a marker are ignored."""
    blocks = _BLOCK.findall(text)
    submit = bool(SUBMIT_WORD.search(_BLOCK.sub("", text)))
    files: dict[str, str] = {}
    unmarked: list[str] = []
    commands = False
    for language, body in blocks:
        first, _, rest = body.partition("\n")
        if first.strip().startswith(FILE_MARKER.strip()):
            files[first.strip()[len(FILE_MARKER.strip()) :].strip()] = rest
        elif language.lower() in SHELLS:
            commands = True
        elif language.lower() in PYTHON:
            unmarked.append(body)
    if len(unmarked) == 1 and not files:
        files[main_file] = unmarked[0]
    elif unmarked:
        problem = f"With several code blocks, start each with a line `{FILE_MARKER}PATH`."
        return CodeReply({}, False, problem)
    if commands and not files:
        return CodeReply({}, submit, "There is no shell here to run commands in.")
    return CodeReply(files, submit)
