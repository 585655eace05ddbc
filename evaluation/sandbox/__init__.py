"""Sandboxed execution of untrusted code: backend selection and harness helpers.

``get_sandbox()`` picks the backend from the Django setting ``EVALUATION_SANDBOX_BACKEND``
(``"bwrap"`` by default, ``"docker"``, or ``"unsafe"`` for developer machines). Given a ``name``
it works without Django settings, so the engine also runs from plain Python (LLM runs).

``call_spec`` / ``unittest_spec`` build a :class:`RunSpec` that runs a solution through the
harness (``evaluation/runner/harness.py``); ``parse_reply`` reads the harness's JSON line.
Compare outputs on the host: the sandbox never sees expected results.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox, SandboxUnavailable

__all__ = [
    "BACKENDS",
    "RunResult",
    "RunSpec",
    "RunStatus",
    "Sandbox",
    "SandboxUnavailable",
    "call_spec",
    "get_sandbox",
    "harness_source",
    "parse_reply",
    "unittest_spec",
]

BACKENDS = ("bwrap", "docker", "unsafe")
DEFAULT_BACKEND = "bwrap"
HARNESS_FILE = Path(__file__).resolve().parent.parent / "runner" / "harness.py"
ENTRIES_FILE = HARNESS_FILE.with_name("harness_entries.py")  # cli and wsgi calls
HARNESS_ARGV = ("python3", "-I", "-S", "-B", "/sandbox/harness.py")


def _setting(name: str, default: Any) -> Any:
    from django.conf import settings

    try:
        return getattr(settings, name, default)
    except ImproperlyConfigured:  # plain Python, no settings
        return default


def _configured_backend() -> str:
    from django.conf import settings

    try:
        return str(getattr(settings, "EVALUATION_SANDBOX_BACKEND", DEFAULT_BACKEND))
    except ImproperlyConfigured:  # plain Python, no settings: the safe default
        return DEFAULT_BACKEND


def get_sandbox(name: str | None = None) -> Sandbox:
    """The backend called ``name``, else the one ``EVALUATION_SANDBOX_BACKEND`` names.

    Raises ``SandboxUnavailable`` when the backend cannot run here and ``ImproperlyConfigured``
    for an unknown name or a forbidden choice. Never falls back to another backend.
    """
    chosen = name if name is not None else _configured_backend()
    # Each backend is imported when chosen: the docker one needs the optional docker SDK.
    if chosen == "bwrap":
        from evaluation.sandbox.bwrap import LocalBwrapBackend

        return LocalBwrapBackend(
            cgroups=_setting("EVALUATION_CGROUPS", True),
            cpu_quota=_setting("EVALUATION_CPU_QUOTA", None),
        )
    if chosen == "docker":
        from evaluation.sandbox.docker import DockerBackend

        return DockerBackend()
    if chosen == "unsafe":
        from evaluation.sandbox.unsafe import UnsafeRlimitBackend

        return UnsafeRlimitBackend(explicitly_named=True)
    raise ImproperlyConfigured(
        f"Unknown sandbox backend {chosen!r}; EVALUATION_SANDBOX_BACKEND must be one of "
        + ", ".join(BACKENDS)
        + "."
    )


@functools.cache
def harness_source() -> bytes:
    return HARNESS_FILE.read_bytes()


@functools.cache
def entries_source() -> bytes:
    return ENTRIES_FILE.read_bytes()


def _source(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def _add_runtime_path(request: dict[str, Any], limits: dict[str, Any]) -> None:
    """The harness puts the runtime's site-packages (``limits["runtime"]``) on sys.path."""
    from evaluation.runtimes import DEFAULT_RUNTIME, get_runtime

    path = get_runtime(limits.get("runtime", DEFAULT_RUNTIME)).sandbox_path
    if path:
        request["path"] = [path]


WORK = "work"  # the workspace's directory under /sandbox
Workspace = str | bytes | Mapping[str, str | bytes]


def workspace_files(workspace: Workspace) -> dict[str, bytes]:
    """The run's files under ``/sandbox/work``: a mapping of workspace paths to contents, or one
    source text, which becomes ``solution.py``."""
    if isinstance(workspace, str | bytes):
        workspace = {"solution.py": workspace}
    return {f"{WORK}/{path}": _source(data) for path, data in workspace.items()}


def call_spec(
    workspace: Workspace,
    entry: str | dict[str, str],
    args: list[Any],
    kwargs: dict[str, Any] | None = None,
    **limits: Any,
) -> RunSpec:
    """One call of an entry point in the workspace (a files mapping, or one ``solution.py``
    source): ``entry`` is ``{"kind", "module", "name"}`` (see the harness) or a function name
    in ``solution``. ``limits``: RunSpec fields (``runtime="python3.11-data"`` runs it with that
    runtime's packages)."""
    if isinstance(entry, str):
        entry = {"kind": "function", "module": "solution", "name": entry}
    request = {"mode": "call", "entry": entry, "args": args, "kwargs": kwargs or {}}
    return _entry_spec(workspace, request, limits)


def calls_spec(
    workspace: Workspace,
    entry: dict[str, str],
    calls: list[tuple[list[Any], dict[str, Any]]],
    **limits: Any,
) -> RunSpec:
    """Several calls of one entry point in ONE process (the harness's ``calls`` mode): for the
    bank's own code only (references, literal readings, starters under ``validate_bank``),
    never for a participant's, which gets a fresh process per test (``call_spec``)."""
    request = {
        "mode": "calls",
        "entry": entry,
        "calls": [{"args": args, "kwargs": kwargs} for args, kwargs in calls],
    }
    return _entry_spec(workspace, request, limits)


def _entry_spec(workspace: Workspace, request: dict[str, Any], limits: dict[str, Any]) -> RunSpec:
    request["root"] = f"/sandbox/{WORK}"
    _add_runtime_path(request, limits)
    files = {"harness.py": harness_source(), **workspace_files(workspace)}
    if request["entry"]["kind"] != "function":
        files["harness_entries.py"] = entries_source()
    return RunSpec(files=files, argv=HARNESS_ARGV, stdin=json.dumps(request).encode(), **limits)


def unittest_spec(
    workspace: Workspace,
    tests: Mapping[str, str | bytes],
    **limits: Any,
) -> RunSpec:
    """Run unittest modules (``tests``: workspace path -> source, top-level ``test_*.py``)
    against the workspace; both end up in ``/sandbox/work``."""
    files = {"harness.py": harness_source(), **workspace_files(workspace)}
    files.update(workspace_files(dict(tests)))
    request: dict[str, Any] = {"mode": "unittest", "root": f"/sandbox/{WORK}", "tests": list(tests)}
    _add_runtime_path(request, limits)
    stdin = json.dumps(request).encode()
    # The harness runs the tests in a forked child it supervises (its reply channel).
    return RunSpec(files=files, argv=HARNESS_ARGV, stdin=stdin, harness_processes=1, **limits)


def parse_reply(result: RunResult) -> dict[str, Any]:
    """The harness's reply (last stdout line); ``output`` holds any text before it.

    A run that did not end cleanly (killed, a non-zero exit, over a limit) gives
    ``{"ok": False, "error": <status>, ...}`` whatever it printed; one that printed no reply gives
    ``{"ok": False, "error": "NoResult", "message": ...}``.
    """
    text = result.stdout.decode("utf-8", "replace")
    if result.status != RunStatus.OK:  # whatever it printed: a run that did not end cleanly
        return {"ok": False, "error": result.status.value, "message": result.detail, "output": text}
    head, _, last = text.rstrip("\n").rpartition("\n")
    try:
        reply = json.loads(last) if last.strip() else None
    except ValueError:
        reply = None
    if isinstance(reply, dict) and isinstance(reply.get("ok"), bool):
        reply["output"] = head
        return reply
    message = "the program ended without returning a result"
    return {"ok": False, "error": "NoResult", "message": message, "output": text}
