"""Headless chromium opens the home page and signs into the admin (no CSP violation: the
``page`` fixture checks that)."""

from __future__ import annotations

from typing import Any

import pytest

# A timeout here ends the run (thread method): SIGALRM inside Playwright's sync API leaves
# the main thread's event loop broken, and every later test would fail with it.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(method="thread")]


def test_home_page_renders_with_local_assets(live_server: Any, page: Any) -> None:
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    responses: list[tuple[int, str]] = []
    page.on("response", lambda response: responses.append((response.status, response.url)))
    page.goto(live_server.url + "/")
    assert page.get_by_role("heading", name="Welcome").is_visible()
    assert not failed
    assert all(status < 400 for status, _ in responses), responses
    assert all(url.startswith(live_server.url) for _, url in responses)  # nothing from a CDN
    # Bootstrap's stylesheet applied (its reboot sets the body margin to 0).
    assert page.evaluate("getComputedStyle(document.body).marginTop") == "0px"


def test_admin_login_in_the_browser(live_server: Any, page: Any, admin_researcher: Any) -> None:
    page.goto(live_server.url + "/admin/")  # the admin signs in through the accounts' login
    page.wait_for_url(live_server.url + "/accounts/login/?next=%2Fadmin%2F")
    page.fill("#id_login", "ada@example.org")
    page.fill("#id_password", "correct horse battery staple")
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + "/admin/")
    assert page.get_by_text("Studies, participants and the task bank").is_visible()
