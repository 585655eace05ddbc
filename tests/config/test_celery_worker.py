"""A task round-trips through a real Celery worker process, and the worker's heartbeat
reaches /healthz/."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from django.test import Client, override_settings

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.worker


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("worker")
    redis_url = os.environ.get("REDIS_URL", "")
    broker = redis_url or f"sqla+sqlite:///{tmp / 'broker.sqlite3'}"
    backend = redis_url or f"db+sqlite:///{tmp / 'results.sqlite3'}"
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": backend,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "HAIEVAL_TEST_CACHE_DIR": str(tmp / "cache"),
        "HAIEVAL_VAR_DIR": str(tmp / "var"),
        "WORKER_HEARTBEAT_INTERVAL": "1",
    }
    log = open(tmp / "worker.log", "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config.celery_app",
            "worker",
            "--pool=solo",
            "-Q",
            queue,
            "--hostname",
            f"{queue}@%h",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    # Not the current app: shared tasks elsewhere in the session must keep using ours.
    client_app = Celery("test-client", broker=broker, backend=backend, set_as_current=False)
    try:
        yield {
            "app": client_app,
            "queue": queue,
            "proc": proc,
            "cache_dir": tmp / "cache",
            "log": tmp / "worker.log",
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_task_round_trips_through_a_real_worker(worker: dict[str, Any]) -> None:
    result = worker["app"].send_task("config.ping", args=["hello"], queue=worker["queue"])
    try:
        value = result.get(timeout=60)
    except Exception:
        pytest.fail("worker did not answer; its log:\n" + worker["log"].read_text())
    assert value["payload"] == "hello"
    assert value["pid"] == worker["proc"].pid  # ran in the worker, not in this process
    assert value["pid"] != os.getpid()


@pytest.mark.django_db
def test_worker_heartbeat_appears_in_healthz(worker: dict[str, Any], client: Client) -> None:
    cache = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(worker["cache_dir"]),
        }
    }
    with override_settings(CACHES=cache):
        deadline = time.monotonic() + 60
        check: dict[str, Any] = {}
        while time.monotonic() < deadline:
            check = client.get("/healthz/").json()["checks"]["worker"]
            if check["status"] == "ok":
                break
            time.sleep(0.5)
    assert check["status"] == "ok", worker["log"].read_text()
    assert check["worker"].startswith(worker["queue"])
