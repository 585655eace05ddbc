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
# Tasks live in the ``tasks.py`` of the capability package that owns them.
TASK_PACKAGES = ["evaluation", "study.trials", "study.exports", "study.previews"]
app.autodiscover_tasks(TASK_PACKAGES)

HEARTBEAT_KEY_PREFIX = "worker-heartbeat:"
logger = logging.getLogger(__name__)


@app.task(name="config.ping")
def ping(payload: str = "ping") -> dict[str, Any]:
    """Echo a payload with the worker's pid: proves a task round-trips through a real worker."""
    return {"payload": payload, "pid": os.getpid()}


SANDBOX_RECHECK_S = 600


def _sandbox_report() -> dict[str, Any]:
    """The grading sandbox as this worker sees it (it is the process that runs solutions)."""
    try:
        # Imported here: this module loads (config/__init__.py) before Django's settings are.
        from evaluation.health import sandbox_status

        return sandbox_status()
    except Exception as exc:  # reported, never fatal for the worker
        return {"status": "error", "detail": f"{exc.__class__.__name__}: {exc}"}


def _beat_forever(hostname: str, interval: int, stop: threading.Event) -> None:
    from django.core.cache import cache
    from django.utils import timezone

    sandbox: dict[str, Any] = {}
    checked = 0.0
    while not stop.is_set():
        if time.monotonic() - checked > SANDBOX_RECHECK_S or not checked:
            sandbox, checked = _sandbox_report(), time.monotonic()
        try:
            cache.set(
                HEARTBEAT_KEY_PREFIX + hostname,
                {"at": timezone.now().isoformat(), "sandbox": sandbox},
                timeout=interval * 6,
            )
            cache.set(HEARTBEAT_KEY_PREFIX + "latest", hostname, timeout=interval * 6)
        except Exception:  # a cache hiccup must not kill the worker; /healthz/ will notice
            logger.warning("could not write the worker heartbeat", exc_info=True)
        stop.wait(interval)


_heartbeat_stop = threading.Event()


class SandboxBroken(SystemExit):
    pass


@signals.worker_init.connect
def _refuse_without_sandbox(**_: Any) -> None:
    """A worker that cannot sandbox must not take grading tasks: never fall back silently."""
    report = _sandbox_report()
    if report.get("status") != "ok":
        logger.critical("grading sandbox unavailable: %s", report.get("detail"))
        raise SandboxBroken(
            f"Worker refused to start: the grading sandbox does not work ({report.get('detail')})."
        )
    # The start-up check is also where the runner (as root) delegates the per-run cgroups.
    accounting = str(report.get("accounting", ""))
    if accounting.startswith("none"):
        logger.warning(
            "grading sandbox works, but runs are not measured by a cgroup (%s): solutions may "
            "start no child process or thread",
            accounting,
        )
    else:
        logger.info("grading sandbox: %s", report.get("detail"))
    _log_runtimes()


def _log_runtimes() -> None:
    """Each task runtime's state; a missing one a shipped template needs is an error (its
    submissions are refused with that sentence), but the worker still grades the others."""
    try:
        from evaluation.health import runtimes_status

        report = runtimes_status()
    except Exception:  # reported, never fatal for the worker
        logger.exception("could not check the task runtimes")
        return
    for name, entry in report["runtimes"].items():
        level = {"ok": logging.INFO, "warning": logging.WARNING}.get(entry["status"], logging.ERROR)
        logger.log(level, "task runtime %s: %s (%s)", name, entry["state"], entry["detail"])


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
