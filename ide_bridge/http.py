"""The plumbing every JSON endpoint of the IDE bridge shares.

- One error shape: ``{"error": "<a sentence for people>", ...}`` (extra keys such as a
  machine-readable ``code`` where a client branches on it), made by :func:`json_error`; a view
  or helper raises :class:`RequestError` and the endpoint decorators turn it into that answer.
- One JSON body parser, :func:`read_json` / :func:`read_json_object`, with a size and a nesting
  limit (no NaN or Infinity, which JSON does not have and PostgreSQL refuses).
- One bearer-token parser, :func:`bearer_token`.
- One trial loader for the participant's own endpoints, :func:`participant_endpoint` (sync) and
  :func:`async_participant_endpoint`: 401 when signed out, 404 for a trial that is not theirs
  (exactly like a missing one), through ``study.access``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse

from study.access import get_own_trial
from study.models import Trial

SIGNED_OUT = "You are signed out. Open your personal study link again to continue."
NOT_FOUND = "Not found."
MAX_DEPTH = 32
MAX_TOKEN_CHARS = 512


class RequestError(Exception):
    """A request the endpoint refuses: ``status`` and a sentence, plus extra answer keys."""

    def __init__(self, message: str, http_status: int = 400, **extra: Any) -> None:
        super().__init__(message)
        self.status = http_status
        self.extra = extra

    def response(self) -> JsonResponse:
        return json_error(str(self), self.status, **self.extra)


def json_error(message: str, http_status: int, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=http_status)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value, counting no further than ``limit + 1``."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(child, limit - 1) for child in children), default=0)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` without NaN/Infinity and with a nesting limit; ``ValueError`` if not."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _depth(value, max_depth) > max_depth:
        raise ValueError("nested too deeply")
    return value


def read_json(request: HttpRequest, *, max_bytes: int, too_large: str) -> Any:
    """The request's JSON body (an empty body is ``None``). 413 over ``max_bytes`` (also when
    Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` refuses it first), 400 when it is not JSON."""
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(too_large, 413)
    try:
        body = request.body
    except RequestDataTooBig:
        raise RequestError(too_large, 413) from None
    if len(body) > max_bytes:
        raise RequestError(too_large, 413)
    try:
        return loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise RequestError("The request body is not valid JSON.", 400) from None


def read_json_object(request: HttpRequest, *, max_bytes: int, too_large: str) -> dict[str, Any]:
    data = read_json(request, max_bytes=max_bytes, too_large=too_large)
    if not isinstance(data, dict):
        raise RequestError("Expected a JSON object.", 400)
    return data


def bearer_token(request: HttpRequest, *, query: bool = False) -> str | None:
    """The token of ``Authorization: Bearer <token>``; with ``query``, else ``?token=`` (for
    ``navigator.sendBeacon``, which cannot set headers). None when absent or oversized."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    if not token and query:
        token = request.GET.get("token", "").strip()
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    return token


TrialView = Callable[[HttpRequest, Trial], JsonResponse]
AsyncTrialView = Callable[[HttpRequest, Trial], Awaitable[JsonResponse]]


def participant_endpoint(view: TrialView) -> Callable[[HttpRequest, int], JsonResponse]:
    """A JSON endpoint on the signed-in participant's own trial."""

    @wraps(view)
    def wrapper(request: HttpRequest, trial_id: int) -> JsonResponse:
        if not request.user.is_authenticated:
            return json_error(SIGNED_OUT, 401)
        try:
            return view(request, get_own_trial(request.user, trial_id))
        except Http404:
            return json_error(NOT_FOUND, 404)
        except RequestError as exc:
            return exc.response()

    return wrapper


def async_participant_endpoint(
    view: AsyncTrialView,
) -> Callable[[HttpRequest, int], Coroutine[Any, Any, JsonResponse]]:
    """The same for async views (LLM calls and sandbox runs that take seconds)."""

    @wraps(view)
    async def wrapper(request: HttpRequest, trial_id: int) -> JsonResponse:
        user = await request.auser()
        if not user.is_authenticated:
            return json_error(SIGNED_OUT, 401)
        try:
            trial = await sync_to_async(get_own_trial)(user, trial_id)
            return await view(request, trial)
        except Http404:
            return json_error(NOT_FOUND, 404)
        except RequestError as exc:
            return exc.response()

    return wrapper
