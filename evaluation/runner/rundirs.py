"""A run's private directory on the host: made 0700, filled with the spec's files (flat names,
never following a link), emptied of exactly those names afterwards (stdlib only)."""

from __future__ import annotations

import contextlib
import os


def _flat(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"invalid file name {name!r}: files must have flat names")
    return name


def write_files(files: dict[str, bytes], directory: str) -> list[str]:
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    written: list[str] = []
    try:
        for name, data in files.items():
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(_flat(name), flags, 0o444, dir_fd=dfd)
            written.append(name)
            with open(fd, "wb") as handle:
                handle.write(data)
    finally:
        os.close(dfd)
    return written


def remove_files(names: list[str], directory: str) -> None:
    """Unlink exactly the names we created (the sandbox could not add or replace any)."""
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dfd)
    finally:
        os.close(dfd)


def make_rundir(parent: str) -> str:
    path = os.path.join(parent, "haieval-run-" + os.urandom(8).hex())
    os.mkdir(path, 0o700)
    return path
