"""The researcher's replay page (static/js/replay.js) in headless chromium: it loads data.json
with ``hai.fetchJSON``, rebuilds the recorded session up to its last event, draws the timeline
markers with ``hai.el`` and shows times with ``hai.formatDuration`` ("minutes" style)."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from ide_bridge.telemetry.services import ingest
from study.trials.services import save_draft
from tests.factories import ResearcherFactory
from tests.ide_bridge.ai.test_ai_panel_browser import with_session
from tests.ide_bridge.telemetry.test_replay import random_session
from tests.ide_bridge.telemetry_helpers import started_trial, starter_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_replay_rebuilds_the_recorded_session(live_server: Any, page: Any) -> None:
    from playwright.sync_api import expect

    _, _, trial = started_trial()
    items, final = random_session(starter_code(trial), random.Random(3), 60)
    ingest(trial, items)
    save_draft(trial, {"solution.py": final}, timezone.now())
    researcher = ResearcherFactory.create()
    trial.participant.study.researchers.add(researcher)
    client = Client()
    client.force_login(researcher)
    with_session(page, live_server, client)

    page.goto(f"{live_server.url}/ide/telemetry/replay/{trial.pk}/")
    expect(page.locator("#replay-ui")).to_be_visible()
    expect(page.locator("#replay-summary")).to_contain_text(f"{len(items)} events")
    expect(page.locator("#replay-summary")).to_contain_text("No missing sequence numbers.")
    expect(page.locator("#replay-code")).to_have_text(final)  # the last event, rebuilt
    expect(page.locator("#replay-clock")).to_have_text(re.compile(r"^\d+:\d\d$"))
    marker = page.locator("#replay-markers button").first
    expect(marker).to_have_attribute("aria-label", re.compile(r"^#\d+ [a-z_]+ at \d+:\d\d$"))
    # Stepping back shows an earlier moment and moves the clock with it.
    page.locator("#replay-prev").click()
    expect(page.locator("#replay-event")).to_contain_text(f"#{len(items) - 1} ")
