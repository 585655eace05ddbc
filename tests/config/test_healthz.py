"""``/healthz/`` reports every component as JSON."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_healthz_reports_each_component(client: Client) -> None:
    response = client.get("/healthz/")
    assert response.status_code == 200
    body = response.json()
    checks = {"database", "broker", "channel_layer", "worker", "sandbox", "runtimes", "diagrams"}
    assert set(body["checks"]) == checks
    # Graphviz is installed at set-up: the diagrams of ds-tariff-bills can be drawn.
    assert body["checks"]["diagrams"]["status"] == "ok", body["checks"]["diagrams"]
    assert "graphviz" in body["checks"]["diagrams"]["detail"].lower()
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"]["status"] == "ok"
    assert body["checks"]["channel_layer"]["status"] == "ok"
    assert body["version"]
    assert response["Cache-Control"].startswith("max-age=0")


@pytest.mark.django_db
def test_healthz_without_a_worker_is_degraded_and_says_why(client: Client) -> None:
    body = client.get("/healthz/").json()
    assert body["checks"]["worker"]["status"] == "error"
    assert "heartbeat" in body["checks"]["worker"]["detail"]
    assert body["status"] == "degraded"


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_fails(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from config import health

    def broken() -> dict[str, str]:
        raise RuntimeError("connection refused")

    monkeypatch.setitem(health.CHECKS, "database", broken)
    response = client.get("/healthz/")
    assert response.status_code == 503
    assert response.json()["status"] == "down"
    assert "connection refused" in response.json()["checks"]["database"]["detail"]


@pytest.mark.django_db
def test_healthz_reports_a_working_isolated_sandbox(client: Client) -> None:
    from tests.evaluation.grading_fixtures import sandbox_or_skip

    sandbox_or_skip()
    check = client.get("/healthz/").json()["checks"]["sandbox"]
    assert check["status"] == "ok", check
    assert check["backend"] == "bwrap"
    assert check["isolated"] is True
    assert check["checked_by"] == "web"  # no worker heartbeat in this test
    # These machines have cgroup v1: every run is measured with its whole process tree.
    assert check["accounting"] in ("cgroup-v1", "cgroup-v2"), check


@pytest.mark.django_db
def test_healthz_says_when_no_cgroup_measures_the_runs(client: Client, settings: object) -> None:
    from django.core.cache import cache

    from tests.evaluation.grading_fixtures import sandbox_or_skip

    sandbox_or_skip()
    settings.EVALUATION_CGROUPS = False  # type: ignore[attr-defined]
    cache.clear()
    check = client.get("/healthz/").json()["checks"]["sandbox"]
    assert check["status"] == "ok", check
    assert check["accounting"].startswith("none: "), check


@pytest.mark.django_db
def test_healthz_names_a_broken_sandbox(client: Client, settings: object) -> None:
    settings.EVALUATION_SANDBOX_BACKEND = "no-such-backend"  # type: ignore[attr-defined]
    from django.core.cache import cache

    cache.clear()
    check = client.get("/healthz/").json()["checks"]["sandbox"]
    assert check["status"] == "error"
    assert "no-such-backend" in check["detail"]
