"""A trial's editable files: which paths they are, what the participant saved, and the checks
every way in (autosave, the editor's submit, the upload page, archives) shares.

The instance says which files are editable (``Instance.editable``, e.g. ``solution.py`` or
``app/pricing.py`` and ``app/rules.py``); everything else the participant sees is read-only and
always comes from the instance. ``Trial.draft_files`` keeps only the editable files the
participant saved at least once; :func:`current_files` puts them over the starter.

Refusals are :class:`FilesRefused` (HTTP 400: an unknown or read-only path, not text) or its
subclass :class:`FilesTooLarge` (HTTP 413), each with one sentence for the participant.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluation.instances import get_instance
from evaluation.spec import Instance
from evaluation.submissions import MAX_FILE_BYTES, MAX_TOTAL_BYTES
from study.models import Trial


class FilesRefused(ValueError):
    """Files a trial cannot take as they are (message is for the participant)."""


class FilesTooLarge(FilesRefused):
    """A file, or all editable files together, over the size limit."""


def instance_of(trial: Trial) -> Instance:
    return get_instance(trial.template_slug, trial.seed)


def editable_paths(trial: Trial) -> tuple[str, ...]:
    return instance_of(trial).editable


def listing(paths: tuple[str, ...] | list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(paths)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def current_files(trial: Trial) -> dict[str, str]:
    """Every editable path -> the participant's current text (saved draft, else starter), in
    the instance's order."""
    starter = instance_of(trial).starter_files()
    saved = trial.draft_files or {}
    return {path: saved.get(path, text) for path, text in starter.items()}


def check_files(instance: Instance, files: Mapping[str, object]) -> dict[str, str]:
    """``files`` (editable path -> text or UTF-8 bytes) checked one by one: known editable
    paths only, text without NUL, each within ``MAX_FILE_BYTES``. Returns them as text."""
    editable = instance.editable
    checked: dict[str, str] = {}
    for path, value in files.items():
        if path not in editable:
            if path in instance.participant_files or path in instance.images:
                raise FilesRefused(f"{path} is read-only in this task; edit {listing(editable)}.")
            raise FilesRefused(
                f"{str(path)[:200]} is not a file of this task; its editable files are "
                f"{listing(editable)}."
            )
        if not isinstance(value, str | bytes):
            raise FilesRefused(f"{path} must be text.")
        size = len(value) if isinstance(value, bytes) else len(value.encode())
        if size > MAX_FILE_BYTES:
            raise FilesTooLarge(f"{path} is larger than the {MAX_FILE_BYTES // 1024} KiB limit.")
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise FilesRefused(f"{path} is not UTF-8 text.") from None
        if "\x00" in value:
            raise FilesRefused(f"{path} contains NUL characters; it must be a text file.")
        checked[path] = value
    return checked


def check_total(files: Mapping[str, str]) -> None:
    """All editable files together (a complete set) within ``MAX_TOTAL_BYTES``."""
    if sum(len(text.encode()) for text in files.values()) > MAX_TOTAL_BYTES:
        raise FilesTooLarge(
            f"Your files together are larger than the {MAX_TOTAL_BYTES // 1024} KiB limit."
        )
