"""The harness's cli and wsgi calls (runs INSIDE the sandbox, loaded by ``harness.py`` only
for those entry kinds, which it ships only then). Standard library only. ``HarnessError`` is put
into this module's namespace by the harness before it runs."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from evaluation.runner.harness import HarnessError


def run_cli(module: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Run ``module`` as ``python -m module *args`` in this process, standard input from
    ``kwargs["stdin"]``; what it prints to ``sys.stdout`` is the output."""
    import io
    import runpy

    stdin = kwargs.get("stdin", "")
    if not isinstance(stdin, str) or not all(isinstance(a, str) for a in args):
        raise HarnessError("BadRequest", "a cli call takes string arguments and stdin text")
    captured = io.StringIO()
    saved = sys.argv, sys.stdin, sys.stdout
    sys.argv, sys.stdin, sys.stdout = [module, *args], io.StringIO(stdin), captured
    status: object = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        status = exc.code if exc.code is not None else 0
        if not isinstance(status, int):  # sys.exit("message"): printed, status 1
            sys.stderr.write(f"{status}\n")
            status = 1
    finally:
        sys.argv, sys.stdin, sys.stdout = saved
    return {"exit": status, "stdout": captured.getvalue()}


def call_wsgi(application: Callable[..., Any], request: object) -> dict[str, Any]:
    """Call a WSGI application in-process with one request (PEP 3333 environ)."""
    import io

    if not isinstance(request, dict):
        raise HarnessError("BadRequest", "a wsgi call takes one request object")
    body = str(request.get("body", "")).encode("utf-8")
    path, query = str(request.get("path", "/")), str(request.get("query", ""))
    environ: dict[str, Any] = {
        "REQUEST_METHOD": str(request.get("method", "GET")).upper(),
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "sandbox",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": True,
    }
    for key, value in dict(request.get("headers") or {}).items():
        name = str(key).upper().replace("-", "_")
        if name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[name] = str(value)
        else:
            environ["HTTP_" + name] = str(value)
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started["status"], started["headers"] = status, headers
        return lambda data: chunks.append(bytes(data))

    chunks: list[bytes] = []
    iterable = application(environ, start_response)
    try:
        for chunk in iterable:
            chunks.append(bytes(chunk))
    finally:
        close = getattr(iterable, "close", None)
        if callable(close):
            close()
    if "status" not in started:
        raise HarnessError("Exception", "the application never called start_response")
    code = str(started["status"]).split(" ", 1)[0]
    return {
        "status": int(code) if code.isdigit() else 0,
        "headers": {str(k).lower(): str(v) for k, v in started["headers"]},
        "body": b"".join(chunks).decode("utf-8", "replace"),
    }
