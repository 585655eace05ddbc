"""Installing a runtime from its lock file into a read-only directory.

``pip install --no-deps --require-hashes --only-binary=:all:`` for CPython 3.11 on manylinux
x86_64 (the sandbox's interpreter), run by the project's own pip (the system interpreter may have
none) into a temporary directory that is renamed into place once it is complete and read-only, so
a half-finished install never looks installed. Re-running is a no-op while the stamp (the lock
file's sha256) matches.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

from evaluation.runtimes import (
    STAMP,
    Runtime,
    State,
    get_runtime,
    install_dir,
    state,
    unreachable_parent,
)

PIP_TARGET = (
    "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
    "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64",
    "--platform", "manylinux_2_28_x86_64",
)  # fmt: skip


class InstallError(RuntimeError):
    pass


def _make_read_only(root: Path) -> None:
    """Directories 0555, files 0444 (0555 if executable): readable by the sandbox's uid."""
    for path, dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(path, name)
            if not os.path.islink(full):
                mode = os.stat(full).st_mode
                os.chmod(full, 0o555 if mode & stat.S_IXUSR else 0o444)
        os.chmod(path, 0o555)  # noqa: S103 - read-only, readable by the sandbox uid
        del dirs  # walked top-down: children are still writable when visited


def _make_writable(root: Path) -> None:
    for path, _dirs, _files in os.walk(root):
        os.chmod(path, 0o755)  # noqa: S103 - writable again, to remove it


def remove_tree(root: Path) -> None:
    if root.exists():
        _make_writable(root)
        shutil.rmtree(root)


def install(name: str, *, quiet: bool = True) -> tuple[bool, str]:
    """Install ``name`` unless its stamp matches; (installed now, one sentence)."""
    runtime: Runtime = get_runtime(name)
    current, sentence = state(name)
    if current is State.INSTALLED or runtime.lock is None:
        return False, sentence
    target = install_dir(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)  # noqa: S103 - the sandbox uid must reach it
    blocked = unreachable_parent(target)
    if blocked is not None:
        raise InstallError(
            f"The sandbox's uid 65534 could not reach the runtime {name} in {target} ({blocked} "
            "is not searchable by others); set EVALUATION_RUNTIMES_DIR elsewhere."
        )
    started = time.monotonic()
    building = target.parent / f".{name}.partial-{os.getpid()}"
    remove_tree(building)
    command = [
        sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
        "--require-hashes", "--only-binary=:all:", *PIP_TARGET, "--no-warn-script-location",
        "--target", str(building / "site-packages"), "-r", str(runtime.lock),
    ]  # fmt: skip
    if quiet:
        command.append("--quiet")
    proc = subprocess.run(command, check=False)  # noqa: S603 - fixed argv, our own lock file
    if proc.returncode != 0:
        remove_tree(building)
        raise InstallError(f"pip could not install the runtime {name} (exit {proc.returncode}).")
    shutil.rmtree(building / "site-packages" / "bin", ignore_errors=True)  # entry scripts
    (building / STAMP).write_text(runtime.lock_sha256 + "\n")
    _make_read_only(building)
    old = target.parent / f".{name}.old-{os.getpid()}"
    if target.exists():
        target.rename(old)
    building.rename(target)
    remove_tree(old)
    return True, f"Installed the runtime {name} in {target} in {time.monotonic() - started:.0f} s."
