"""``POST /ide/submissions/<id>``: a workspace archive from outside the browser.

Used by the ``submit`` script (:mod:`ide_bridge.submissions.submit_script`). The client
authenticates with the trial's bearer token (``Authorization: Bearer <token>``), never with cookies,
so the view is CSRF-exempt. The body is the archive itself (``application/gzip``,
``application/x-tar``, ``application/zip`` or ``application/octet-stream``; the format is told by
its bytes) or a multipart form with the archive in the field ``archive``.

Answers are JSON: 201 ``{"status": "submitted", "sha256": ...}`` for a new submission, 200 with
the same body when the same archive is sent again, and ``{"error": "<sentence>"}`` with 400 (the
archive was refused), 401 (no token), 403 (the trial's arm takes no archives: the feedback-only
arm, or one whose submission channels leave out the submit script), 404 (a token that does not
open this trial, or no such trial: the same answer), 405, 409 (the trial is closed or was
submitted with another archive) or 413 (too large).
"""

from __future__ import annotations

from typing import Any, Protocol

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from ide_bridge.http import RequestError, bearer_token, json_error
from ide_bridge.models import WorkspaceUpload
from ide_bridge.submissions.archives import (
    CHUNK_BYTES,
    MAX_ARCHIVE_BYTES,
    ArchiveRejected,
    size_label,
)
from ide_bridge.submissions.services import submit_archive
from ide_bridge.telemetry.services import token_opens
from study.access import get_trial_for_bearer
from study.trials.services import ChannelNotAllowed, TrialClosed

ARCHIVE_FIELD = "archive"
MULTIPART_SLACK_BYTES = 64 * 1024  # boundaries and part headers around the archive
TOO_LARGE = f"The archive is larger than the {size_label(MAX_ARCHIVE_BYTES)} limit."
MISSING_AUTHORIZATION = "Send the trial's token in an 'Authorization: Bearer <token>' header."


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


def _error(message: str, status: int) -> JsonResponse:
    response = json_error(message, status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="trial"'
    return response


@csrf_exempt
@never_cache
def submission(request: HttpRequest, trial_id: int) -> JsonResponse:
    if request.method != "POST":
        response = _error("Send the archive with POST.", 405)
        response["Allow"] = "POST"
        return response
    token = bearer_token(request)
    if token is None:
        return _error(MISSING_AUTHORIZATION, 401)
    try:
        trial = get_trial_for_bearer(trial_id, lambda t: token_opens(t, token))
        data, name = read_upload(request)
        upload, created = submit_archive(trial, data, name, timezone.now())
    except Http404:
        return _error("There is no such trial, or the token does not open it.", 404)
    except RequestError as exc:
        return _error(str(exc), exc.status)
    except ArchiveRejected as exc:
        return _error(str(exc), 400)
    except ChannelNotAllowed as exc:
        return _error(str(exc), 403)
    except TrialClosed as exc:
        return _error(str(exc), 409)
    return JsonResponse(receipt(upload), status=201 if created else 200)


def receipt(upload: WorkspaceUpload) -> dict[str, Any]:
    """The same body for the first upload and every retry of it."""
    return {
        "status": "submitted",
        "trial": upload.trial_id,
        "sha256": upload.sha256,
        "size": upload.size,
        "files": len(upload.files),
        "received_at": upload.received_at.isoformat(),
    }


def read_upload(request: HttpRequest) -> tuple[bytes, str]:
    """The archive bytes and a name or content type hinting at the format, never reading more
    than the limit (the declared length is checked before anything is read)."""
    multipart = request.content_type == "multipart/form-data"
    allowed = MAX_ARCHIVE_BYTES + (MULTIPART_SLACK_BYTES if multipart else 0)
    declared = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(declared)
    except ValueError:
        raise RequestError("The Content-Length header is not a number.", 400) from None
    if length > allowed:
        raise RequestError(TOO_LARGE, 413)
    if multipart:
        data, name = _multipart_archive(request)
    else:
        data, name = _read_limited(request), request.content_type or ""
    if not data:
        raise RequestError("The request has no archive in it.", 400)
    return data, name


def _multipart_archive(request: HttpRequest) -> tuple[bytes, str]:
    try:
        upload = request.FILES.get(ARCHIVE_FIELD)
    except (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent, MultiPartParserError):
        raise RequestError("The multipart form could not be read.", 400) from None
    if upload is None:
        raise RequestError(f"Put the archive in a multipart field named {ARCHIVE_FIELD!r}.", 400)
    if upload.size is not None and upload.size > MAX_ARCHIVE_BYTES:
        raise RequestError(TOO_LARGE, 413)
    return _read_limited(upload), upload.name or upload.content_type or ""


def _read_limited(stream: _Readable) -> bytes:
    """Read in chunks and stop one chunk past the limit (a body without a length, under ASGI)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(CHUNK_BYTES):
        size += len(chunk)
        if size > MAX_ARCHIVE_BYTES:
            raise RequestError(TOO_LARGE, 413)
        chunks.append(chunk)
    return b"".join(chunks)
