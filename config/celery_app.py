"""The Celery application (``celery -A config.celery_app worker``).

Broker and result backend come from Django settings (``CELERY_*``): Redis when ``REDIS_URL`` is
set, otherwise an SQLite file shared by the web and worker processes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

app = Celery("haieval")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

HEARTBEAT_KEY_PREFIX = "worker-heartbeat:"
logger = logging.getLogger(__name__)


@app.task(name="config.ping")
def ping(payload: str = "ping") -> dict[str, Any]:
    """Echo a payload with the worker's pid: proves a task round-trips through a real worker."""
    return {"payload": payload, "pid": os.getpid()}


def _beat_forever(hostname: str, interval: int, stop: threading.Event) -> None:
    from django.core.cache import cache
    from django.utils import timezone

    while not stop.is_set():
        try:
            cache.set(
                HEARTBEAT_KEY_PREFIX + hostname,
                timezone.now().isoformat(),
                timeout=interval * 6,
            )
            cache.set(HEARTBEAT_KEY_PREFIX + "latest", hostname, timeout=interval * 6)
        except Exception:  # a cache hiccup must not kill the worker; /healthz/ will notice
            logger.warning("could not write the worker heartbeat", exc_info=True)
        stop.wait(interval)


_heartbeat_stop = threading.Event()


@signals.worker_ready.connect
def _start_heartbeat(sender: Any = None, **_: Any) -> None:
    """Write a heartbeat into the shared cache so /healthz/ can tell a worker is alive."""
    from django.conf import settings

    hostname = getattr(sender, "hostname", None) or f"worker@{os.uname().nodename}"
    thread = threading.Thread(
        target=_beat_forever,
        args=(hostname, settings.WORKER_HEARTBEAT_INTERVAL, _heartbeat_stop),
        name="haieval-heartbeat",
        daemon=True,
    )
    thread.start()
    time.sleep(0)  # let the first beat go out before the worker reports ready


@signals.worker_shutdown.connect
def _stop_heartbeat(**_: Any) -> None:
    _heartbeat_stop.set()
