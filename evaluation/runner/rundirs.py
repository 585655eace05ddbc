"""A run's private directory on the host: made 0700, filled with the spec's files, emptied of
exactly what we wrote afterwards (stdlib only).

Names are relative paths (``harness.py``, ``work/app/pricing.py``): every component is checked
(no empty, ``.``/``..`` or NUL parts), directories are made by us, and nothing ever follows a
link. ``write_files`` returns the top-level names, which the bwrap backend binds read-only.
"""

from __future__ import annotations

import contextlib
import os
import shutil

_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(name: str) -> list[str]:
    parts = name.split("/")
    if not name or "\0" in name or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid file name {name!r}: files must have plain relative paths")
    return parts


def _write(dfd: int, parts: list[str], data: bytes) -> None:
    fds: list[int] = []
    try:
        here = dfd
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=here)
            here = os.open(part, _OPEN_DIR, dir_fd=here)
            fds.append(here)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(parts[-1], flags, 0o444, dir_fd=here)
        with open(fd, "wb") as handle:
            handle.write(data)
    finally:
        for fd in fds:
            os.close(fd)


def write_files(files: dict[str, bytes], directory: str) -> list[str]:
    """Write every file; returns the top-level names created (files and directories)."""
    dfd = os.open(directory, _OPEN_DIR)
    top: dict[str, None] = {}
    try:
        for name, data in files.items():
            parts = _parts(name)
            _write(dfd, parts, data)
            top[parts[0]] = None
    finally:
        os.close(dfd)
    return list(top)


def remove_files(names: list[str], directory: str) -> None:
    """Remove exactly the top-level names we created (the sandbox could not add or replace
    any: it saw them read-only), directories with what is inside, never following a link."""
    dfd = os.open(directory, _OPEN_DIR)
    try:
        for name in names:
            try:
                os.unlink(name, dir_fd=dfd)
            except FileNotFoundError:
                continue
            except IsADirectoryError:
                shutil.rmtree(name, dir_fd=dfd)
    finally:
        os.close(dfd)


def make_rundir(parent: str) -> str:
    path = os.path.join(parent, "haieval-run-" + os.urandom(8).hex())
    os.mkdir(path, 0o700)
    return path
