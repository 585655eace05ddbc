"""Shared fixtures: personas, service requirements and the headless browser.

Environment switches:
- ``REQUIRE_SERVICES=1``: PostgreSQL (``DATABASE_URL``) and Redis (``REDIS_URL``) must be
  configured and reachable, otherwise the run fails at once instead of skipping.
- ``REQUIRE_BROWSER=1``: a missing chromium fails browser tests instead of skipping them.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.cache import cache

from tests.factories import ResearcherFactory, UserFactory

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def _flag(name: str) -> bool:
    return os.environ.get(name, "") in {"1", "true", "yes"}


def _service_problems() -> list[str]:
    problems = []
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://", "pgsql://")):
        problems.append("DATABASE_URL does not point at PostgreSQL")
    else:
        import psycopg

        try:
            psycopg.connect(
                database_url.replace("pgsql://", "postgres://"), connect_timeout=3
            ).close()
        except psycopg.Error as exc:
            problems.append(f"PostgreSQL at DATABASE_URL is unreachable ({exc})")
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        problems.append("REDIS_URL is not set")
    else:
        import redis

        try:
            redis.Redis.from_url(redis_url, socket_connect_timeout=3).ping()
        except (redis.RedisError, OSError) as exc:
            problems.append(f"Redis at REDIS_URL is unreachable ({exc})")
    return problems


def pytest_sessionstart(session: pytest.Session) -> None:
    if _flag("REQUIRE_SERVICES"):
        problems = _service_problems()
        if problems:
            pytest.exit("REQUIRE_SERVICES=1 but " + "; ".join(problems), returncode=1)


def pytest_report_header(config: pytest.Config) -> str:
    database = "PostgreSQL" if os.environ.get("DATABASE_URL", "").startswith("postg") else "SQLite"
    redis = "Redis" if os.environ.get("REDIS_URL") else "no Redis (in-memory layer, SQLite broker)"
    return f"haieval services: {database}, {redis}"


@pytest.fixture
def require_redis() -> str:
    """The Redis URL, or a skip (a failure under REQUIRE_SERVICES=1)."""
    url = os.environ.get("REDIS_URL", "")
    if not url:
        if _flag("REQUIRE_SERVICES"):
            pytest.fail("REDIS_URL is required (REQUIRE_SERVICES=1)")
        pytest.skip("REDIS_URL is not set")
    return url


# --- Shared state between tests ----------------------------------------------------------
@pytest.fixture
def fresh_cache() -> None:
    """Login and recruitment links are rate-limited per address in the cache, and many tests
    sign someone in from the same address: those tests start with an empty cache."""
    cache.clear()


@pytest.fixture
def repeatable_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """New participants draw their plan and task seeds from a short cycle, so rendered task
    instances come from ``get_instance``'s cache instead of being generated again (seconds
    each). Only speed depends on it."""
    seeds = itertools.cycle(range(1001, 1006))
    monkeypatch.setattr(
        "study.assignment.services.secrets", SimpleNamespace(randbelow=lambda n: next(seeds))
    )


# --- Personas -----------------------------------------------------------------------------
@pytest.fixture
def researcher(db: None) -> Any:
    """A staff user in the researcher group (can use the admin for their studies)."""
    return ResearcherFactory(username="rita@example.org")


@pytest.fixture
def admin_researcher(db: None) -> Any:
    return ResearcherFactory(username="ada@example.org", is_superuser=True)


@pytest.fixture
def participant(db: None) -> Any:
    """A participant account (later issues attach it to a study)."""
    return UserFactory(username="p-amber-fox")


@pytest.fixture
def other_participant(db: None) -> Any:
    """Another participant, whose data ``participant`` must never see."""
    return UserFactory(username="p-blue-owl")


# --- Browser ------------------------------------------------------------------------------
def find_chromium() -> str | None:
    configured = os.environ.get("HAIEVAL_CHROMIUM")
    if configured:
        return configured if os.path.exists(configured) else None
    for path in CHROMIUM_CANDIDATES:
        if os.path.exists(path):
            return path
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian chromium driven by Playwright (no downloaded browsers).

    Module-scoped: Playwright's sync API keeps an event loop running in the main thread while
    it is open, which would break asyncio tests in other modules.
    """
    executable = find_chromium()
    if executable is None:
        if _flag("REQUIRE_BROWSER"):
            pytest.fail(
                "REQUIRE_BROWSER=1 but no chromium at /usr/bin/chromium ($HAIEVAL_CHROMIUM)"
            )
        pytest.skip("no chromium found (apt-get install chromium, or set HAIEVAL_CHROMIUM)")
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls from the
    # test body are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=executable,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-quic",
            ],
        )
        yield chromium
        chromium.close()


# Reports every Content-Security-Policy violation of a page to its console (the browser also
# logs "Refused to ..." itself); injected by Playwright, so the policy does not apply to it.
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
});
"""


def is_csp_violation(text: str) -> bool:
    return text.startswith(("Refused to", "CSP violation:")) or "Content Security Policy" in text


@pytest.fixture
def csp_violations() -> list[str]:
    """What the browser refused under the Content-Security-Policy while the test ran."""
    return []


@pytest.fixture
def page(browser: Any, csp_violations: list[str]) -> Iterator[Any]:
    """A fresh browser page. Every browser test also checks that the page broke no rule of the
    Content-Security-Policy: a violation fails the test when it ends."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(CSP_LISTENER)
    page = context.new_page()
    page.set_default_timeout(15_000)

    def on_console(message: Any) -> None:
        if is_csp_violation(message.text):
            csp_violations.append(message.text)

    page.on("console", on_console)
    yield page
    context.close()
    assert csp_violations == [], "the page broke the Content-Security-Policy"
