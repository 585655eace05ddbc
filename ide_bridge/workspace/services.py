"""The browser workspace of a trial: its files, its state for reload, and visible-test runs.

Files come from the trial's rendered instance (``participant_files`` and ``images``), never from
the bank directly, so hidden tests and reference solutions cannot reach the client. The
instance's ``editable`` paths are the files the participant edits (``solution.py`` in the
one-file tasks, several modules in a project task); their text is the autosaved draft once
there is one (``study.trials.files.current_files``). Every other file is read-only. Paths may
contain folders; the page shows them as a tree. Images (binary ``images`` and ``.svg`` text
files) open in an image viewer, served by ``image_file``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.urls import reverse

from evaluation import visible_tests
from study.markdown import render_markdown
from study.models import Arm, Trial
from study.trials.files import current_files, instance_of
from study.trials.services import arm_config

README = "README.md"
RUN_LOCK_S = 60  # a crashed request frees the per-trial run lock after this long

LANGUAGES = {
    ".py": "python",
    ".json": "json",
    ".md": "markdown",
    ".csv": "plaintext",
    ".toml": "ini",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sql": "sql",
    ".svg": "xml",
}
# Image types the viewer shows (what the engine copies as bytes, plus SVG diagrams as text).
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
}
# An image opened directly (not through <img>) runs nothing: no script, no plugin, no frame.
IMAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"


@dataclass(frozen=True)
class WorkspaceFile:
    name: str  # the workspace path, folders included ("app/pricing.py")
    language: str  # a Monaco language id; "image" for the image viewer
    text: str  # "" for images
    editable: bool
    html: str = ""  # rendered Markdown for documents (README.md, other .md files)
    url: str = ""  # images: where the viewer's <img> loads it from

    @property
    def is_document(self) -> bool:
        return self.language == "markdown"

    @property
    def is_image(self) -> bool:
        return self.language == "image"

    @property
    def folder(self) -> str:
        return self.name.rpartition("/")[0]

    @property
    def basename(self) -> str:
        return self.name.rpartition("/")[2]


def _suffix(name: str) -> str:
    base = name.rsplit("/", 1)[-1].lower()
    return "." + base.rsplit(".", 1)[1] if "." in base else ""


def _language(name: str) -> str:
    suffix = _suffix(name)
    if suffix in IMAGE_TYPES:
        return "image"
    return LANGUAGES.get(suffix, "plaintext" if suffix else "shell")


def image_type(name: str) -> str | None:
    """The Content-Type of a path the viewer shows as an image, else None."""
    return IMAGE_TYPES.get(_suffix(name))


def editor_read_only(trial: Trial) -> bool:
    """No typing into the editable files once the trial is closed, nor in the feedback-only
    arm (ELABORATION protocol: the participant steers the AI, which rewrites the code)."""
    if trial.status != Trial.Status.ACTIVE:
        return True
    return bool(arm_config(trial).get("ai_mode") == Arm.AIMode.FEEDBACK)


def _order(editable: tuple[str, ...]) -> Any:
    """README first, then the top-level files before the folders, each
    level sorted by name, so the tree reads like a file browser."""

    def key(name: str) -> tuple[Any, ...]:
        parts = name.split("/")
        return (name != README, [(i < len(parts) - 1, p.lower()) for i, p in enumerate(parts)])

    return key


def workspace_files(trial: Trial) -> list[WorkspaceFile]:
    """Every file the participant sees, README first, in tree order."""
    instance = instance_of(trial)
    current = current_files(trial)
    names = sorted({*instance.participant_files, *instance.images}, key=_order(instance.editable))
    result = []
    for name in names:
        language = _language(name)
        editable = name in current
        if language == "image":
            url = reverse("ide_bridge:workspace_image", args=[trial.pk, name])
            result.append(WorkspaceFile(name, language, "", editable=False, url=url))
            continue
        text = current[name] if editable else instance.participant_files[name]
        html = str(render_markdown(text)) if language == "markdown" else ""
        result.append(WorkspaceFile(name, language, text, editable=editable, html=html))
    return result


@dataclass
class TreeNode:
    """A folder (with ``children``) or a file of the page's file tree."""

    name: str  # its own name ("pricing.py", "app")
    path: str  # the workspace path ("app/pricing.py", "app")
    file: WorkspaceFile | None = None
    children: list[TreeNode] = field(default_factory=list)


def file_tree(files: list[WorkspaceFile]) -> list[TreeNode]:
    """``files`` (in tree order, as ``workspace_files`` gives them) as nested folders."""
    roots: list[TreeNode] = []
    folders: dict[str, TreeNode] = {}
    for f in files:
        siblings, parts = roots, f.name.split("/")
        for depth in range(1, len(parts)):
            path = "/".join(parts[:depth])
            if path not in folders:
                folders[path] = TreeNode(parts[depth - 1], path)
                siblings.append(folders[path])
            siblings = folders[path].children
        siblings.append(TreeNode(parts[-1], f.name, file=f))
    return roots


def files_payload(files: list[WorkspaceFile]) -> list[dict[str, Any]]:
    """What the page's JSON script carries (documents go as rendered HTML, not JSON)."""
    return [
        {k: v for k, v in asdict(f).items() if k != "html"}
        | {"document": f.is_document, "image": f.is_image}
        for f in files
    ]


def image_file(trial: Trial, path: str) -> tuple[bytes, str] | None:
    """(body, Content-Type) of a participant-visible image of the trial, else None: only the
    instance's ``images`` and its ``.svg`` participant files, never another path."""
    instance = instance_of(trial)
    content_type = image_type(path)
    if content_type is None:
        return None
    if path in instance.images:
        return instance.images[path], content_type
    if content_type == "image/svg+xml" and path in instance.participant_files:
        return instance.participant_files[path].encode(), content_type
    return None


def trial_state(trial: Trial, now: datetime) -> dict[str, Any]:
    """Everything a reloaded page (or another device) needs to resume: ``files`` holds every
    editable path with the participant's current text."""
    return {
        "trial": trial.pk,
        "status": trial.status,
        "closed": trial.status not in (Trial.Status.PENDING, Trial.Status.ACTIVE),
        "deadline": trial.deadline.isoformat() if trial.deadline else None,
        "server_time": now.isoformat(),
        "files": current_files(trial),
        "editable": list(instance_of(trial).editable),
        "saved_at": trial.draft_saved_at.isoformat() if trial.draft_saved_at else None,
        "read_only": editor_read_only(trial),
        "status_url": reverse("study:trial_status", args=[trial.pk]),
    }


# --- Visible tests ----------------------------------------------------------------------------
class RunInProgress(Exception):
    """Another visible-test run of this trial has not finished yet."""


def run_lock_key(trial_id: int) -> str:
    return f"ide_bridge:run:{trial_id}"


@asynccontextmanager
async def run_lock(trial_id: int) -> AsyncIterator[None]:
    """One visible-test run at a time per trial (across processes when the cache is shared)."""
    key = run_lock_key(trial_id)
    if not await cache.aadd(key, 1, timeout=RUN_LOCK_S):
        raise RunInProgress("Your previous test run is still going; wait for it to finish.")
    try:
        yield
    finally:
        await cache.adelete(key)


def run_visible_tests(trial: Trial, files: dict[str, str]) -> dict[str, Any]:
    """Run the trial instance's visible tests against the editable ``files`` (path -> text,
    the whole set): ``evaluation.visible_tests`` (no database access, so it may run in a
    worker thread)."""
    return visible_tests.run_visible_tests(instance_of(trial), files)
