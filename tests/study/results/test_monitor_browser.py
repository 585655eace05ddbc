"""The live monitor in headless chromium: its rows refresh themselves from the server's htmx
partial (polled; the test server speaks no WebSocket, so a push is simulated by the event the
page's socket handler sends), time left ticks down between refreshes, a signed-out refresh
keeps the rows instead of showing the sign-in page, and the browser formats durations exactly
like the server's ``duration`` filter.

A module of its own: the browser fixture is module-scoped and would break the asyncio tests of
``test_monitor.py``."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from study.models import Participant, Study, Trial
from study.templatetags.durations import duration
from tests.factories import ResearcherFactory, UserFactory
from tests.study.factories_study import make_participant, make_study
from tests.study.results.report_helpers import add_trial

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page: Any, live_server: Any, user: Any) -> None:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )


def is_rows_request(request: Any) -> bool:
    return "/monitor/rows/" in request.url


def test_rows_refresh_from_the_partial_and_time_left_ticks(live_server: Any, page: Any) -> None:
    from playwright.sync_api import expect

    study = make_study(tracks=("SDE", "MLE"), status=Study.Status.RECRUITING)
    researcher = ResearcherFactory.create()
    study.researchers.add(researcher)
    amber = make_participant(
        study,
        "SDE",
        user=UserFactory(username="p-amber-fox"),
        stage=Participant.Stage.IN_SESSION,
        session_index=1,
    )
    trial = add_trial(amber, 1, "A", status=Trial.Status.ACTIVE)
    Trial.objects.filter(pk=trial.pk).update(deadline=timezone.now() + timedelta(minutes=30))
    sign_in(page, live_server, researcher)

    page.goto(f"{live_server.url}/study/results/{study.slug}/monitor/")
    rows = page.locator("#monitor-rows")
    expect(rows).to_contain_text("p-amber-fox")
    left = rows.locator("[data-deadline]")
    before = left.inner_text()
    assert re.fullmatch(r"(29 min \d\d|30 min 00) s", before), before
    expect(left).not_to_have_text(before, timeout=5_000)  # ticks down in the browser

    # A new participant shows up without a reload: the partial is polled every 5 s.
    make_participant(study, "MLE", user=UserFactory(username="p-blue-owl"))
    expect(rows).to_contain_text("p-blue-owl", timeout=15_000)
    expect(page.locator('[data-summary="participants"]')).to_have_text("2")  # out of band
    expect(page.locator("#monitor-page")).to_contain_text("2 participants")
    expect(page.locator("#monitor-status")).to_contain_text("Updated")
    assert re.fullmatch(r"(29|30) min \d\d s", left.inner_text())

    # A push ({"type": "changed"} on the socket) turns into an immediate refresh.
    make_participant(study, "MLE", user=UserFactory(username="p-cyan-elk"))
    with page.expect_request(is_rows_request, timeout=5_000):
        page.evaluate("() => window.htmx.trigger('#monitor-live', 'monitor-changed')")
    expect(rows).to_contain_text("p-cyan-elk")

    # Signed out: the refresh is redirected to the sign-in page, which is never swapped in.
    page.context.clear_cookies()
    with page.expect_response(is_rows_request, timeout=5_000):
        page.evaluate("() => window.htmx.trigger('#monitor-live', 'monitor-changed')")
    expect(page.locator("#monitor-status")).to_contain_text("signed out")
    expect(rows).to_contain_text("p-cyan-elk")
    assert page.locator("#monitor-live form").count() == 0


def test_the_browser_formats_durations_like_the_server(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/")  # any page: common.js is on every one
    seconds = [0, 9, 59, 60, 309, 3599, 3600, 3720, 7265, 90061]
    short = page.evaluate("(xs) => xs.map((x) => window.hai.formatDuration(x, 'short'))", seconds)
    assert short == [duration(s) for s in seconds]
    styles = page.evaluate(
        """() => ["clock", "minutes", "words"].map((style) =>
             [59.9, 3725, -4].map((x) => window.hai.formatDuration(x, style)))"""
    )
    assert styles == [
        ["0:59", "1:02:05", "0:00"],
        ["0:59", "62:05", "0:00"],
        ["0 h 00 min 59 s", "1 h 02 min 05 s", "0 h 00 min 00 s"],
    ]
