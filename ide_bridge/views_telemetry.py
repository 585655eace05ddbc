"""HTTP side of telemetry: the bearer-token batch endpoint, researcher replay and flag list.

``POST /ide/trials/<id>/events`` takes the same batch as the WebSocket (see
:mod:`ide_bridge.protocol`) and answers with the same ack. It is for non-browser clients and
for the browser's ``navigator.sendBeacon`` on ``pagehide``, which cannot set headers: the token
comes in ``Authorization: Bearer <token>`` or, for beacons, in ``?token=``. No cookies are used,
so the endpoint is CSRF-exempt. Status codes:

* 200 ack JSON (also for a batch that was entirely duplicates)
* 400 body is not JSON, or the batch envelope is broken (error JSON with a ``code``)
* 401 no token, or the token does not open this trial
* 404 no token was ever issued for this trial id (unknown trial)
* 405 not a POST
* 409 the trial does not accept events (not started, closed longer than the grace, or the
  participant withdrew or was excluded)
* 413 body over ``MAX_BATCH_BYTES`` or more than ``MAX_BATCH_EVENTS`` events
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from ide_bridge import telemetry
from ide_bridge.models import IntegrityFlag
from ide_bridge.protocol import MAX_BATCH_BYTES, BatchError, loads
from study.access import get_study_for_researcher, get_trial_for_researcher, studies_for_researcher

FLAGS_PER_PAGE = 200


def _error(status: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse({"type": "error", "code": code, "error": message}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="trial-events"'
    return response


def _token(request: HttpRequest) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.GET.get("token", "").strip()


@csrf_exempt
@require_POST
def events(request: HttpRequest, trial_id: int) -> JsonResponse:
    token = _token(request)
    if not token:
        return _error(401, "unauthenticated", "send Authorization: Bearer <trial token>")
    trial = telemetry.trial_for_token(trial_id, token)
    if trial is None:
        if not telemetry.trial_has_token(trial_id):
            return _error(404, "not_found", "no such trial")
        return _error(401, "bad_token", "this token does not open this trial")
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_BATCH_BYTES:
        return _error(413, "too_large", f"a batch holds at most {MAX_BATCH_BYTES} bytes")
    body = request.body
    if len(body) > MAX_BATCH_BYTES:
        return _error(413, "too_large", f"a batch holds at most {MAX_BATCH_BYTES} bytes")
    try:
        content = loads(body)
    except ValueError:
        return _error(400, "bad_json", "the body is not valid JSON")
    if not isinstance(content, dict) or content.get("type", "batch") != "batch":
        return _error(400, "bad_batch", 'expected {"type": "batch", "events": [...]}')
    if not telemetry.accepts_events(trial, timezone.now()):
        return _error(409, "trial_closed", "this trial does not accept events")
    try:
        ack = telemetry.ingest(trial, content.get("events"))
    except BatchError as exc:
        statuses = {"too_large": 413, "too_many_events": 413, "trial_closed": 409}
        return _error(statuses.get(exc.code, 400), exc.code, str(exc))
    return JsonResponse(ack.as_message())


def _staff_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise Http404("not a researcher")


@login_required
@require_GET
def replay(request: HttpRequest, trial_id: int) -> HttpResponse:
    _staff_only(request)
    trial = get_trial_for_researcher(request.user, trial_id)
    flags = IntegrityFlag.objects.filter(trial=trial).order_by("event_seq", "pk")
    context: dict[str, Any] = {
        "trial": trial,
        "participant": trial.participant,
        "study": trial.participant.study,
        "flags": flags,
    }
    return render(request, "ide_bridge/replay.html", context)


@login_required
@require_GET
def replay_data(request: HttpRequest, trial_id: int) -> JsonResponse:
    _staff_only(request)
    trial = get_trial_for_researcher(request.user, trial_id)
    return JsonResponse(telemetry.replay_data(trial))


@login_required
@require_GET
def flags(request: HttpRequest) -> HttpResponse:
    _staff_only(request)
    studies = studies_for_researcher(request.user)
    slug = request.GET.get("study", "")
    study = get_study_for_researcher(request.user, slug) if slug else None
    rows = (
        IntegrityFlag.objects.filter(trial__participant__study__in=studies)
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
