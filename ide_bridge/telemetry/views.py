"""HTTP side of telemetry: the bearer-token batch endpoint, researcher replay and flag list.

``POST /ide/telemetry/<id>/events`` takes the same batch as the WebSocket (see
:mod:`ide_bridge.telemetry.protocol`) and answers with the same ack. It is for non-browser clients
and for the browser's ``navigator.sendBeacon`` on ``pagehide``, which cannot set headers: the token
comes in ``Authorization: Bearer <token>`` or, for beacons, in ``?token=``. No cookies are used, so
the endpoint is CSRF-exempt. Status codes:

* 200 ack JSON (also for a batch that was entirely duplicates)
* 400 body is not JSON, or the batch envelope is broken (error JSON with a ``code``)
* 401 no token
* 404 the token does not open this trial, or there is no such trial (the same answer, so a
  token holder cannot map which trial ids exist)
* 405 not a POST
* 409 the trial does not accept events (not started, closed longer than the grace, or the
  participant withdrew or was excluded)
* 413 body over ``MAX_BATCH_BYTES`` or more than ``MAX_BATCH_EVENTS`` events
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from ide_bridge.http import RequestError, bearer_token, json_error, read_json
from ide_bridge.models import IntegrityFlag
from ide_bridge.telemetry import services as telemetry
from ide_bridge.telemetry.protocol import MAX_BATCH_BYTES, BatchError
from study.access import (
    get_study_for_researcher,
    get_trial_for_bearer,
    get_trial_for_researcher,
    researcher_only,
    studies_for_researcher,
    trials_for_researcher,
)

FLAGS_PER_PAGE = 200
TOO_LARGE = f"a batch holds at most {MAX_BATCH_BYTES} bytes"
BATCH_STATUSES = {"too_large": 413, "too_many_events": 413, "trial_closed": 409}


def _error(status: int, code: str, message: str) -> JsonResponse:
    response = json_error(message, status, type="error", code=code)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="trial-events"'
    return response


@csrf_exempt
@require_POST
def events(request: HttpRequest, trial_id: int) -> JsonResponse:
    token = bearer_token(request, query=True)
    if token is None:
        return _error(401, "unauthenticated", "send Authorization: Bearer <trial token>")
    try:
        trial = get_trial_for_bearer(trial_id, lambda t: telemetry.token_opens(t, token))
        content = read_json(request, max_bytes=MAX_BATCH_BYTES, too_large=TOO_LARGE)
    except Http404:
        return _error(404, "not_found", "no such trial")
    except RequestError as exc:
        return _error(exc.status, "too_large" if exc.status == 413 else "bad_json", str(exc))
    if not isinstance(content, dict) or content.get("type", "batch") != "batch":
        return _error(400, "bad_batch", 'expected {"type": "batch", "events": [...]}')
    if not telemetry.accepts_events(trial, timezone.now()):
        return _error(409, "trial_closed", "this trial does not accept events")
    try:
        ack = telemetry.ingest(trial, content.get("events"))
    except BatchError as exc:
        return _error(BATCH_STATUSES.get(exc.code, 400), exc.code, str(exc))
    return JsonResponse(ack.as_message())


@researcher_only
@require_GET
def replay(request: HttpRequest, trial_id: int) -> HttpResponse:
    trial = get_trial_for_researcher(request.user, trial_id)
    flags = IntegrityFlag.objects.filter(trial=trial).order_by("event_seq", "pk")
    context: dict[str, Any] = {
        "trial": trial,
        "participant": trial.participant,
        "study": trial.participant.study,
        "flags": flags,
    }
    return render(request, "ide_bridge/replay.html", context)


@researcher_only
@require_GET
def replay_data(request: HttpRequest, trial_id: int) -> JsonResponse:
    trial = get_trial_for_researcher(request.user, trial_id)
    return JsonResponse(telemetry.replay_data(trial))


@researcher_only
@require_GET
def flags(request: HttpRequest) -> HttpResponse:
    studies = studies_for_researcher(request.user)
    slug = request.GET.get("study", "")
    study = get_study_for_researcher(request.user, slug) if slug else None
    rows = (
        IntegrityFlag.objects.filter(trial__in=trials_for_researcher(request.user))
        .select_related("trial__participant__study", "trial__arm")
        .order_by("-created_at", "-pk")
    )
    if study is not None:
        rows = rows.filter(trial__participant__study=study)
    kind = request.GET.get("kind", "")
    if kind in IntegrityFlag.Kind.values:
        rows = rows.filter(kind=kind)
    page = Paginator(rows, FLAGS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "studies": studies.order_by("title"),
        "study": study,
        "kind": kind,
        "kinds": IntegrityFlag.Kind.choices,
        "page": page,
        "thresholds": {
            "large_paste_chars": telemetry.LARGE_PASTE_CHARS,
            "long_blur_s": telemetry.LONG_BLUR_MS // 1000,
        },
    }
    return render(request, "ide_bridge/flags.html", context)
