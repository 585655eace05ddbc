"""The client address the link rate limit counts cannot be chosen by the client.

The web process runs daphne exactly as ``deploy/start-web`` starts it (a real server on a free
port, against the test database), with no proxy in front: rotating ``X-Forwarded-For`` must not
buy a fresh budget of link POSTs. Behind proxies, only the configured number of hops from the
right of the header counts (``DJANGO_TRUSTED_PROXY_COUNT``). The server is a separate process
that needs the test database, so the daphne test runs on PostgreSQL only (SQLite's test
database lives in this process's memory) and fails under REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import http.client
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from study.models import Participant, Study

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 3

pytestmark = pytest.mark.django_db(transaction=True)


def start_web_daphne_args(port: int) -> list[str]:
    """The arguments ``deploy/start-web`` gives daphne, on ``port`` and localhost."""
    script = (ROOT / "deploy" / "start-web").read_text()
    command = script.split("\nexec daphne ", 1)[1].replace("\\\n", " ").splitlines()[0]
    args = shlex.split(command)
    args[args.index("-p") + 1] = str(port)
    args[args.index("-b") + 1] = "127.0.0.1"
    return args


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def web(tmp_path: Path) -> Iterator[int]:
    if connection.vendor != "postgresql":
        reason = (
            "the web process needs the test database on PostgreSQL (DATABASE_URL=postgres://...)"
        )
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "STUDY_LINK_POSTS_PER_MINUTE": str(LIMIT),
        "HAIEVAL_VAR_DIR": str(tmp_path / "var"),
    }
    env.pop("DJANGO_TRUSTED_PROXY_COUNT", None)  # the default: no proxy in front
    log = open(tmp_path / "daphne.log", "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", *start_web_daphne_args(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"daphne did not start: {(tmp_path / 'daphne.log').read_text()}")
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def join_from(port: int, path: str, forwarded_for: str) -> int:
    """A visitor's GET (for the CSRF cookie and token) and POST of the join page."""
    headers = {"Host": "localhost", "X-Forwarded-For": forwarded_for}
    http_connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        http_connection.request("GET", path, headers=headers)
        page = http_connection.getresponse()
        html = page.read().decode()
        assert page.status == 200, html
        cookie = page.getheader("Set-Cookie", "").split(";", 1)[0]
        match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert match is not None
        assert cookie.startswith("csrftoken=")
        body = f"csrfmiddlewaretoken={match.group(1)}"
        http_connection.request(
            "POST",
            path,
            body=body,
            headers={
                **headers,
                "Cookie": cookie,
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": "http://localhost",
                "Referer": f"http://localhost{path}",
            },
        )
        answer = http_connection.getresponse()
        answer.read()
        return answer.status
    finally:
        http_connection.close()


def test_rotating_x_forwarded_for_does_not_escape_the_link_rate_limit(web: int) -> None:
    study = Study.objects.create(
        slug="open", title="Open", status=Study.Status.RECRUITING, recruitment_token="join-open"
    )
    path = "/study/enrolment/join/join-open/"
    statuses = [join_from(web, path, f"198.51.100.{n}") for n in range(LIMIT + 1)]
    assert statuses == [302] * LIMIT + [429]
    assert Participant.objects.filter(study=study).count() == LIMIT


def test_behind_one_proxy_only_the_rightmost_hop_counts(settings: Any) -> None:
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    settings.ACCOUNT_RATE_LIMITS = {"study_link": f"{LIMIT}/m/ip", "study_join": "100/h/key"}
    Study.objects.create(
        slug="open", title="Open", status=Study.Status.RECRUITING, recruitment_token="join-open"
    )
    path = "/study/enrolment/join/join-open/"

    def join(forwarded_for: str) -> int:
        return Client(HTTP_X_FORWARDED_FOR=forwarded_for).post(path).status_code

    # What the client wrote (left) changes, the address the proxy added (right) does not.
    spoofed = [join(f"10.0.0.{n}, 203.0.113.5") for n in range(LIMIT + 1)]
    assert spoofed == [302] * LIMIT + [429]
    assert join("10.0.0.1, 203.0.113.6") == 302  # another client behind the proxy
