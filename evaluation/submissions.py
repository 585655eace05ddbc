"""What a solver submits: the editable files of an instance, checked and completed.

A submission is a map of workspace paths to text, one entry per editable file of the instance
(``Instance.editable``). Read-only project files, data, diagrams and visible tests always come
from the instance, whatever a submission carries, so nobody grades against a changed data file.
Editable files a submission leaves out are taken from the starter. Every refusal is a
:class:`BadSubmission` with one sentence for the person who submitted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from evaluation.instantiate import canonical_json
from evaluation.spec import Instance

MAX_FILE_BYTES = 256 * 1024  # one editable file
MAX_TOTAL_BYTES = 1024 * 1024  # all editable files together


class BadSubmission(ValueError):
    """The files cannot be graded as they are; the message says why in one sentence."""


Submitted = Mapping[str, str | bytes] | str | bytes


def check_files(instance: Instance, files: Submitted) -> dict[str, str]:
    """Every editable path of ``instance`` -> text: ``files`` validated, missing ones from the
    starter. Refuses unknown or read-only paths, non-text, NUL bytes and oversize files. A
    single text (or bytes) is the one editable file of a task that has only one."""
    if isinstance(files, str | bytes):
        if len(instance.editable) != 1:
            raise BadSubmission(f"This task has several editable files: {_listing(instance)}.")
        files = {instance.editable[0]: files}
    editable = set(instance.editable)
    complete = instance.starter_files()
    for path, text in files.items():
        if path not in editable:
            if path in instance.participant_files or path in instance.images:
                raise BadSubmission(
                    f"{path} is read-only in this task; only edit {_listing(instance)}."
                )
            raise BadSubmission(
                f"{path!s:.200} is not a file of this task; it has {_listing(instance)}."
            )
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BadSubmission(
                    f"{path} is not UTF-8 text (invalid byte at position {exc.start})."
                ) from None
        if not isinstance(text, str):
            raise BadSubmission(f"{path} must be text.")
        if "\x00" in text:
            raise BadSubmission(f"{path} contains NUL bytes; it must be a text file.")
        if len(text.encode()) > MAX_FILE_BYTES:
            raise BadSubmission(f"{path} is larger than the {MAX_FILE_BYTES // 1024} KiB limit.")
        complete[path] = text
    total = sum(len(text.encode()) for text in complete.values())
    if total > MAX_TOTAL_BYTES:
        raise BadSubmission(
            f"The files together are larger than the {MAX_TOTAL_BYTES // 1024} KiB limit."
        )
    return dict(sorted(complete.items()))


def _listing(instance: Instance) -> str:
    names = list(instance.editable)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def files_sha256(files: Mapping[str, str]) -> str:
    """sha256 of a submission: of the bytes for a single ``solution.py`` (as before multi-file
    tasks, so earlier hashes still match), else of the canonical JSON of the map."""
    if list(files) == ["solution.py"]:
        return hashlib.sha256(files["solution.py"].encode()).hexdigest()
    return hashlib.sha256(canonical_json(dict(files))).hexdigest()


def reference_files(instance: Instance, kind: str) -> dict[str, str]:
    """The editable files of a reference solution (``efficient`` or ``naive``)."""
    return dict(instance.references[kind])
