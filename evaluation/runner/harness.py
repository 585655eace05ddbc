"""The harness: runs INSIDE the sandbox as ``/usr/bin/python3 -I -S -B /sandbox/harness.py``.

Standard library only. Standard input is one JSON object (the request); exactly one JSON line is
written on the ORIGINAL standard output. Before any participant code runs, fd 1 is pointed at
fd 2, so the solution's ``print`` output goes to standard error and cannot corrupt the reply.

In ``unittest`` mode the harness forks first: the child runs the tests without the original
standard output and sends its report through a pipe; the parent, which no participant code
touches, forwards it only if the child exited normally, and exits with the child's status
(``128 + N`` if it was killed by signal N). So a solution cannot write the test counts itself or
have a process it left behind answer for it. (Code under test can still patch ``unittest`` in
its own process: visible tests are feedback, hidden tests decide.) ``call`` mode needs no such
guard: its reply only carries the solution's return value, which a forged reply could only
replace by another value the solution might as well have returned, and the host never takes a
reply from a run that did not exit 0 (``parse_reply``).

The solution runs in the main thread (so ``signal.signal`` works for it) with a recursion limit
of 10 000; the runner gives the process a 64 MiB stack (``RLIMIT_STACK``), enough for that depth
even through C-level recursion, so deep recursion ends in a clean ``RecursionError``.

The participant's workspace (the read-only project files with the submitted editable files
over them) is a directory tree at ``root`` (``/sandbox/work``); it is put first on ``sys.path``
and is the working directory, so modules import each other and data files open by relative path.

Mode ``call`` (``entry.kind``: ``function``, ``cli`` or ``wsgi``)::

    {"mode": "call", "root": "/sandbox/work",
     "entry": {"kind": "function", "module": "solution", "name": "two_sum"},
     "args": [...], "kwargs": {...}, "path": ["/runtime/python3.11-data/site-packages"]}
    -> {"ok": true, "result": <json>}
    -> {"ok": false, "error": "<code>", "message": "<one line for the participant>"}

    function: ``module.name(*args, **kwargs)``; the result is its return value.
    cli: ``module`` runs as ``__main__`` with ``sys.argv = [module, *args]`` and standard input
         ``kwargs["stdin"]`` (text); the result is ``{"exit": <status>, "stdout": <text>}``.
    wsgi: ``module.name`` is a WSGI application called in-process with the request ``args[0]``
         (``method``, ``path``, ``query``, ``headers``, ``body`` text); the result is
         ``{"status": <int>, "headers": {<lower-case name>: <value>}, "body": <text>}``.

Mode ``calls`` (the bank's own code only: ``validate_bank`` runs a reference, a literal reading
or the starter on every functional test in one process, so a task runtime's imports are paid
once; participants' code always gets one fresh process per test)::

    {"mode": "calls", "root": ..., "entry": ..., "calls": [{"args": [...], "kwargs": {...}}, ...]}
    -> {"ok": true, "calls": [<the call-mode reply of each call, in order>]}

    A resource exhaustion (memory, file size) ends the whole run as in call mode.

Mode ``unittest``::

    {"mode": "unittest", "root": "/sandbox/work", "tests": ["test_visible.py"]}
    (run from the read-only root, with the root on sys.path)
    -> unittest's verbose text output, then
       {"ok": true, "tests_run": n, "failures": f, "errors": e, "skipped": s}

Error codes: ``BadRequest``, ``EncodingError``, ``SyntaxError``, ``MissingEntryPoint``,
``Exception`` (raised by the solution at import or call time), ``RecursionError``,
``MemoryError``, ``NotSerializable``, ``Exit`` (the solution raised ``SystemExit``).

Exit status is 0 whenever a reply was written, except for resource exhaustion, which the runner
turns into a verdict: ``MemoryError`` exits 1 with ``MemoryError`` on standard error (MLE), and
``OSError`` EFBIG/ENOSPC exits 1 with the error text on standard error (FSIZE).

Paths under ``/sandbox/`` are resolved relative to this file's directory, so the unsafe backend
can run the same harness from a temporary directory.
"""

from __future__ import annotations

import errno
import os
import sys
from importlib.machinery import ModuleSpec, SourceFileLoader

# Every import here is paid on every run: no `typing`, `contextlib` or `importlib.util` (each
# costs several ms of start-up), and annotations are never evaluated.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType, ModuleType, TracebackType
    from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
RECURSION_LIMIT = 10_000  # the runner sets RLIMIT_STACK to 64 MiB: RecursionError, no SIGSEGV
MESSAGE_MAX = 300
RESOURCE_ERRNOS = (errno.EFBIG, errno.ENOSPC)
OUT_OF_MEMORY = "MemoryError: the solution ran out of memory"


def _no_default(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _ScanContext:
    """The attributes the C scanner reads (what json.JSONDecoder() would hold)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": -float("inf")}.get


try:  # the C accelerator json itself uses: the `json` package costs ~10 ms (re, enum) per run
    import _json

    _SCANNER = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]

    def json_loads(text: str) -> Any:
        text = text.strip()
        try:
            value, end = _SCANNER(text, 0)
        except StopIteration:  # what the scanner raises for invalid JSON
            raise ValueError("invalid JSON") from None
        if end != len(text):
            raise ValueError("extra data after the JSON value")
        return value

    def json_dumps(value: object, default: Callable[[object], object] = _no_default) -> str:
        encoder = _json.make_encoder(
            {}, default, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True
        )
        return "".join(encoder(value, 0))

except (ImportError, AttributeError, TypeError):  # another interpreter: the plain module
    import json

    json_loads = json.loads  # type: ignore[assignment]

    def json_dumps(value: object, default: Callable[[object], object] = _no_default) -> str:
        return json.dumps(value, default=default)


class HarnessError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Unserialisable(Exception):
    pass


def _resolve(path: object) -> str:
    if not isinstance(path, str) or not path:
        raise HarnessError("BadRequest", "the request names no file")
    if path.startswith("/sandbox/"):
        return os.path.join(HERE, path[len("/sandbox/") :])
    return path


def _short(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= MESSAGE_MAX else line[: MESSAGE_MAX - 3] + "..."


def _relative(filename: str, root: str) -> str:
    """``filename``'s path in the workspace, or "" when it lies outside it."""
    if root and filename.startswith(root + "/"):
        return filename[len(root) + 1 :]
    return ""


def _where(tb: TracebackType | None, root: str, with_name: bool) -> str:
    found = ""
    while tb is not None:
        name = _relative(tb.tb_frame.f_code.co_filename, root)
        if name:
            found = f" ({name}, line {tb.tb_lineno})" if with_name else f" (line {tb.tb_lineno})"
        tb = tb.tb_next
    return found


def describe(exc: BaseException, root: str, with_name: bool = False) -> str:
    """One short line a participant understands, e.g. ``ValueError: bad (pricing.py, line 3)``;
    lines are located in the workspace's files (``root``), never in the harness."""
    name = type(exc).__name__
    if isinstance(exc, SyntaxError):
        where = _relative(exc.filename or "", root) or os.path.basename(exc.filename or "")
        loc = f" ({where}, line {exc.lineno})" if with_name and where else f" (line {exc.lineno})"
        return _short(f"{name}: {exc.msg}") + (loc if exc.lineno else "")
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        text = ""
    head = _short(f"{name}: {text}" if text else name)
    return head + _where(exc.__traceback__, root, with_name)


def _module_file(root: str, module: object) -> str:
    """The file of dotted ``module`` under ``root`` (``a/b.py`` or ``a/b/__init__.py``)."""
    parts = module.split(".") if isinstance(module, str) else []
    if not parts or not all(p.isidentifier() for p in parts):
        raise HarnessError("BadRequest", f"{module!r} is not a module name")
    base = os.path.join(root, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    shown = "/".join(parts) + ".py"
    raise HarnessError("MissingEntryPoint", f"the workspace has no module {module} ({shown})")


def check_source(path: str, root: str) -> CodeType:
    """Refuse, with the participant's file and line, a module that is not UTF-8 or does not
    compile (before importing it, so the message names their file, not the import system)."""
    name = _relative(path, root) or os.path.basename(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise HarnessError("BadRequest", f"cannot read {name}: {exc}") from None
    try:
        source = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = f"{name} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        raise HarnessError("EncodingError", message) from None
    try:
        return compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise HarnessError("SyntaxError", describe(exc, root, True)) from None
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        raise HarnessError("SyntaxError", _short(f"SyntaxError: {exc} ({name})")) from None


def import_module(root: str, module: str) -> ModuleType:
    """Import ``module`` from the workspace (root on sys.path, so imports between the
    participant's modules, packages and relative imports work). A top-level module file is
    executed from the code already compiled for the check, as the import system would."""
    path = _module_file(root, module)
    code = check_source(path, root)
    if "." in module or path.endswith("__init__.py"):
        __import__(module)
        return sys.modules[module]
    loader = SourceFileLoader(module, path)
    spec = ModuleSpec(module, loader, origin=path)
    spec.has_location = True
    new = type(sys)(module)
    new.__spec__, new.__loader__, new.__file__ = spec, loader, path
    sys.modules[module] = new
    exec(code, new.__dict__)  # noqa: S102 - running the solution is the point, sandboxed
    return new


def _fail(code: str, message: str) -> str:
    return json_dumps({"ok": False, "error": code, "message": message}) + "\n"


def _json_default(value: object) -> object:
    raise _Unserialisable(type(value).__name__)


def _enter(root: str) -> None:
    """Make the workspace the import root and the working directory."""
    if root not in sys.path:
        sys.path.insert(0, root)
    os.chdir(root)


def _entry(request: dict[str, Any]) -> tuple[str, str, str]:
    entry = request.get("entry")
    if not isinstance(entry, dict):
        raise HarnessError("BadRequest", "the request needs an 'entry' object")
    kind, module, name = entry.get("kind"), entry.get("module"), entry.get("name", "")
    if kind not in ("function", "cli", "wsgi") or not isinstance(module, str):
        raise HarnessError("BadRequest", "the entry needs kind function|cli|wsgi and a module")
    if kind != "cli" and (not isinstance(name, str) or not name.isidentifier()):
        raise HarnessError("BadRequest", "a function or wsgi entry needs a name")
    return kind, module, str(name)


def _attribute(module: ModuleType, entry: str, label: str, noun: str) -> Callable[..., Any]:
    function = getattr(module, entry, None)
    if function is None:
        raise HarnessError("MissingEntryPoint", f"{label} defines no {noun} named {entry!r}")
    if not callable(function):
        raise HarnessError("MissingEntryPoint", f"{entry!r} in {label} is not a {noun}")
    return function


def _entries() -> ModuleType:
    """``harness_entries.py`` beside this file (cli and wsgi calls; sent only for them, so a
    function call does not pay for compiling it)."""
    path = os.path.join(HERE, "harness_entries.py")
    if not os.path.isfile(path):
        raise HarnessError("BadRequest", "this run was sent without harness_entries.py")
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    module = type(sys)("harness_entries")
    module.__dict__["HarnessError"] = HarnessError
    exec(code, module.__dict__)  # noqa: S102 - our own file, shipped with the harness
    return module


def do_call(request: dict[str, Any]) -> str:
    root = _resolve(request.get("root", "/sandbox/work"))
    kind, module_name, entry = _entry(request)
    args = request.get("args", [])
    kwargs = request.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return _fail("BadRequest", "the request needs 'args' (list) and 'kwargs' (object)")
    _enter(root)
    label = module_name.replace(".", "/") + ".py"
    if kind == "cli":
        check_source(_module_file(root, module_name), root)
        result: object = _entries().run_cli(module_name, args, kwargs)
    elif kind == "wsgi":
        application = _attribute(import_module(root, module_name), entry, label, "application")
        result = _entries().call_wsgi(application, args[0] if args else {})
    else:
        function = _attribute(import_module(root, module_name), entry, label, "function")
        result = function(*args, **kwargs)
    try:
        return '{"ok": true, "result": ' + json_dumps(result, _json_default) + "}\n"
    except _Unserialisable as exc:
        message = f"{entry}() returned a value containing a {exc}, which is not JSON serialisable"
    except (TypeError, ValueError, RecursionError) as exc:
        message = f"{entry}() returned a value that is not JSON serialisable ({_short(str(exc))})"
    return _fail("NotSerializable", message)


def do_unittest(request: dict[str, Any], result_fd: int) -> str:  # result_fd: the child's pipe
    import unittest

    root = _resolve(request.get("root", "/sandbox/work"))
    tests = request.get("tests")
    if not isinstance(tests, list) or not tests:
        raise HarnessError("BadRequest", "the request names no test files")
    _enter(root)  # as a participant runs them: relative reads (task_data.json) work
    suite = unittest.TestSuite()
    for test_file in tests:
        name = str(test_file).removesuffix(".py").replace("/", ".")
        suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(import_module(root, name)))
    with open(result_fd, "w", encoding="utf-8", errors="replace", closefd=False) as stream:
        outcome = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
        stream.flush()
    counts = {
        "ok": True,
        "tests_run": outcome.testsRun,
        "failures": len(outcome.failures),
        "errors": len(outcome.errors),
        "skipped": len(outcome.skipped),
    }
    return json_dumps(counts) + "\n"


def _add_paths(paths: object) -> None:
    """Put a task runtime's site-packages first on sys.path (``/runtime/...``; without that
    mount, the unsafe backend's ``<rundir>/runtime/...`` beside this file's directory)."""
    if not isinstance(paths, list):
        raise HarnessError("BadRequest", "the request's 'path' must be a list of directories")
    for path in reversed(paths):
        if not isinstance(path, str) or not path.startswith("/runtime/"):
            raise HarnessError("BadRequest", "a 'path' entry must lie under /runtime/")
        if not os.path.isdir("/runtime"):
            path = os.path.join(os.path.dirname(HERE), path[1:])
        sys.path.insert(0, path)


def handle(request: object, result_fd: int) -> tuple[str, str]:
    """Return (reply line, stderr note); a non-empty note means "exit 1 with this on stderr"."""
    if not isinstance(request, dict) or request.get("mode") not in ("call", "calls", "unittest"):
        message = "the request must be a JSON object with mode call|calls|unittest"
        return _fail("BadRequest", message), ""
    try:
        _add_paths(request.get("path", []))
    except HarnessError as exc:
        return _fail(exc.code, exc.message), ""
    if request["mode"] != "calls":
        return _attempt(request, result_fd)
    calls = request.get("calls")
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        return _fail("BadRequest", "the request needs 'calls' (a list of objects)"), ""
    replies = []
    for call in calls:
        one = dict(request, mode="call", args=call.get("args", []), kwargs=call.get("kwargs", {}))
        line, note = _attempt(one, result_fd)
        if note:
            return line, note
        replies.append(line.strip())
    return '{"ok": true, "calls": [' + ", ".join(replies) + "]}\n", ""


def _attempt(request: dict[str, Any], result_fd: int) -> tuple[str, str]:
    """One call or one unittest run, its failures turned into a reply (see ``handle``)."""
    root = (
        _resolve(request.get("root", "/sandbox/work"))
        if isinstance(request.get("root", ""), str)
        else ""
    )
    try:
        if request["mode"] == "unittest":
            return do_unittest(request, result_fd), ""
        return do_call(request), ""
    except HarnessError as exc:
        return _fail(exc.code, exc.message), ""
    except MemoryError:
        return _fail("MemoryError", OUT_OF_MEMORY), "MemoryError"
    except RecursionError as exc:
        return _fail("RecursionError", describe(exc, root, True)), ""
    except SystemExit as exc:
        return _fail("Exit", f"the solution called exit({exc.code!r})"), ""
    except SyntaxError as exc:  # raised while the test module imports the solution
        return _fail("SyntaxError", describe(exc, root, True)), ""
    except BaseException as exc:
        message = describe(exc, root, True)
        note = message if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS else ""
        return _fail("Exception", message), note


def main() -> None:
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    raw = sys.stdin.buffer.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        request = json_loads(raw.decode("utf-8") or "null")
    except ValueError:
        request = None
    if not isinstance(request, dict) or request.get("mode") != "unittest":
        _run(request, reply_fd)  # call mode: the reply only carries what the solution returns
    pipe_r, pipe_w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:  # the sandbox allows the harness this one process
        _finish(reply_fd, _fail("SandboxError", f"the harness could not start ({exc})"), "fork")
    if pid == 0:
        os.close(pipe_r)
        os.close(reply_fd)
        _run(request, pipe_w)
    os.close(pipe_w)
    _supervise(pid, pipe_r, reply_fd)


def _run(request: object, reply_fd: int) -> None:
    """Handle the request and write the reply on ``reply_fd``. Never returns."""
    try:
        sys.setrecursionlimit(RECURSION_LIMIT)
        line, note = handle(request, reply_fd)
    except MemoryError:
        line, note = _fail("MemoryError", OUT_OF_MEMORY), "MemoryError"
    _finish(reply_fd, line, note)


def _supervise(pid: int, pipe_r: int, reply_fd: int) -> None:
    """Collect the child's reply until it exits (processes it left cannot hold us), then
    forward it, or nothing if the child was killed. Never returns."""
    import select

    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pipe_r, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    chunks: list[bytes] = []
    open_pipe, exited = True, False
    while open_pipe and not exited:
        for fd, _event in poller.poll():
            if fd == pidfd:
                exited = True
            else:
                data = os.read(pipe_r, 1 << 16)
                if data:
                    chunks.append(data)
                else:
                    open_pipe = False
    if open_pipe:  # the child is gone: take what it wrote, not what its children still write
        os.set_blocking(pipe_r, False)
        while True:
            try:
                data = os.read(pipe_r, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    reply = memoryview(b"".join(chunks))
    try:
        while reply:
            reply = reply[os.write(reply_fd, reply) :]
    except OSError:
        pass
    os._exit(os.WEXITSTATUS(status))


def _finish(result_fd: int, line: str, note: str) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib costs start-up time
            stream.flush()
        except Exception:  # noqa: S110 - the solution may have closed or replaced it
            pass
    try:
        data = memoryview(line.encode("utf-8"))
        while data:
            data = data[os.write(result_fd, data) :]
        if note:
            os.write(2, f"\n{note}\n".encode("utf-8", "replace"))
    except OSError:
        pass
    os._exit(1 if note else 0)


if __name__ == "__main__":
    main()
