"""``/healthz/``: a JSON report on every component the platform needs.

HTTP 200 while the database answers (the web process can serve pages), 503 when it does not.
``status`` is ``ok`` when no component reports an error and ``degraded`` otherwise, so a
deploy probe can tell "serving" from "fully working".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from config.celery_app import HEARTBEAT_KEY_PREFIX
from config.celery_app import app as celery_app
from evaluation.health import diagrams_status, runtimes_status, sandbox_status

Check = dict[str, Any]


def check_database() -> Check:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"status": "ok", "vendor": connection.vendor}


def check_broker() -> Check:
    url = celery_app.conf.broker_url or ""
    kind = "redis" if url.startswith(("redis", "rediss")) else url.split(":", 1)[0]
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=3)
    return {"status": "ok", "transport": kind}


def check_channel_layer() -> Check:
    layer = get_channel_layer()
    if layer is None:
        return {"status": "error", "detail": "CHANNEL_LAYERS is not configured"}
    backend = f"{type(layer).__module__}.{type(layer).__name__}"

    async def round_trip() -> bool:
        channel = await layer.new_channel()
        token = uuid.uuid4().hex
        await layer.send(channel, {"type": "health.ping", "token": token})
        message = await layer.receive(channel)
        return bool(message.get("token") == token)

    ok = async_to_sync(round_trip)()
    result: Check = {"status": "ok" if ok else "error", "backend": backend}
    if "InMemory" in backend:
        result["note"] = "in-memory layer: messages stay inside this process"
    return result


def check_worker() -> Check:
    hostname = cache.get(HEARTBEAT_KEY_PREFIX + "latest")
    if not hostname:
        return {"status": "error", "detail": "no Celery worker heartbeat seen"}
    beat = cache.get(HEARTBEAT_KEY_PREFIX + hostname)
    if not isinstance(beat, dict):
        return {"status": "error", "detail": f"heartbeat of {hostname} expired"}
    age = (timezone.now() - datetime.fromisoformat(beat["at"])).total_seconds()
    fresh = age <= settings.WORKER_HEARTBEAT_INTERVAL * 3
    return {
        "status": "ok" if fresh else "error",
        "worker": hostname,
        "last_heartbeat_age_s": round(age, 1),
    }


def check_sandbox() -> Check:
    """Prefer the worker's own report (grading runs there, and a web container may lack the
    privileges bubblewrap needs); without a worker, test the sandbox here (cached a minute)."""
    hostname = cache.get(HEARTBEAT_KEY_PREFIX + "latest")
    beat = cache.get(HEARTBEAT_KEY_PREFIX + hostname) if hostname else None
    if isinstance(beat, dict) and beat.get("sandbox"):
        return {**beat["sandbox"], "checked_by": hostname}
    cached = cache.get(LOCAL_SANDBOX_KEY)
    if cached is None:
        cached = sandbox_status()
        cache.set(LOCAL_SANDBOX_KEY, cached, timeout=60)
    return {**cached, "checked_by": "web"}


LOCAL_SANDBOX_KEY = "health:sandbox:web"


CHECKS: dict[str, Callable[[], Check]] = {
    "database": check_database,
    "broker": check_broker,
    "channel_layer": check_channel_layer,
    "worker": check_worker,
    "sandbox": check_sandbox,
    "runtimes": runtimes_status,  # task runtimes installed on this host (same image as workers)
    "diagrams": diagrams_status,  # Graphviz, which draws the tasks' diagrams
}


def run_checks() -> dict[str, Check]:
    results: dict[str, Check] = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            result = check()
        except Exception as exc:
            result = {"status": "error", "detail": f"{exc.__class__.__name__}: {exc}"}
        result["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        results[name] = result
    return results


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    checks = run_checks()
    database_ok = checks["database"]["status"] == "ok"
    all_ok = all(c["status"] != "error" for c in checks.values())
    body = {
        "status": "ok" if all_ok else ("degraded" if database_ok else "down"),
        "version": settings.APP_VERSION,
        "time": timezone.now().isoformat(),
        "checks": checks,
    }
    return JsonResponse(body, status=200 if database_ok else 503)
