"""The workspace's assistant panel (static/js/ai.js) in headless chromium, with the offline
demo assistant: a stored conversation is shown again with its code blocks (built with
``hai.el``, never innerHTML), a chat message gets the gateway's answer (``hai.fetchJSON`` with
the CSRF token), and in the feedback-only arm a revision shows its diff and lands in the editor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from ide_bridge.models import AIRequest
from study.models import Arm, Trial
from tests.ide_bridge.telemetry_helpers import journey_trial

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MONACO_LOADER = Path(django_settings.BASE_DIR) / "static" / "vendor" / "monaco" / "vs" / "loader.js"


@pytest.fixture(autouse=True)
def monaco() -> None:
    if not MONACO_LOADER.exists():
        pytest.skip('Monaco is not installed: run "npm ci && npm run vendor"')


def with_session(page: Any, live_server: Any, client: Client) -> None:
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies(
        [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )


def open_workspace(page: Any, live_server: Any, trial: Trial) -> None:
    page.goto(f"{live_server.url}/ide/workspace/{trial.pk}/")
    page.wait_for_function("() => window.haiEditor && window.haiEditorReady", timeout=30_000)
    # Keep telemetry's events in localStorage (no pagehide beacon after the test's database).
    page.evaluate("() => { delete document.getElementById('workspace').dataset.telemetryToken; }")


def test_chat_shows_stored_code_blocks_and_answers(live_server: Any, page: Any) -> None:
    from playwright.sync_api import expect

    client, _, trial = journey_trial(ai_mode=Arm.AIMode.CHAT)
    history = [
        {"role": "user", "content": "How do I print?"},
        {
            "role": "assistant",
            "content": "Like this:\n```python\nprint(1)\n```\nThen run it.",
            "id": 7,
        },
    ]
    page.add_init_script(
        f"localStorage.setItem('hai:chat:{trial.pk}', {json.dumps(json.dumps(history))})"
    )
    with_session(page, live_server, client)
    open_workspace(page, live_server, trial)
    page.get_by_role("tab", name="Assistant").click()
    panel = page.locator("#ai-panel")
    expect(panel.locator("pre code")).to_have_text("print(1)\n")
    expect(panel).to_contain_text("Like this:")
    expect(panel).to_contain_text("Then run it.")
    expect(panel.get_by_role("button", name="Copy")).to_have_count(1)
    expect(panel.locator(".badge")).to_contain_text("Demo assistant")

    page.locator("#ai-input").fill("What should I test first?")
    with page.expect_request(f"**/ide/ai/{trial.pk}/chat") as sent:
        panel.get_by_role("button", name="Send").click()
    expect(panel.get_by_role("log")).to_contain_text("You wrote", timeout=15_000)
    expect(panel).to_contain_text("Tokens used:")
    expect(panel.get_by_role("alert")).to_have_text("")
    page.goto("about:blank")
    # Only the new turn goes to the server: the stored conversation is shown, never sent, so
    # what the browser keeps cannot reach the model as the model's words.
    assert sent.value.post_data_json == {"message": "What should I test first?"}
    row = AIRequest.objects.get(trial=trial)
    assert [m["role"] for m in row.messages] == ["system", "user"]


def test_feedback_revision_shows_its_diff_and_reaches_the_editor(
    live_server: Any, page: Any
) -> None:
    from playwright.sync_api import expect

    client, _, trial = journey_trial(ai_mode=Arm.AIMode.FEEDBACK)
    with_session(page, live_server, client)
    open_workspace(page, live_server, trial)
    before = page.evaluate("() => window.haiEditor.getValue()")
    page.get_by_role("tab", name="Assistant").click()
    panel = page.locator("#ai-panel")
    page.locator("#ai-input").fill("Please add a docstring")
    panel.get_by_role("button", name="Send feedback").click()
    expect(panel).to_contain_text("Changes to solution.py", timeout=15_000)
    expect(panel.locator(".ai-diff .text-success").first).to_be_visible()
    page.wait_for_function("(old) => window.haiEditor.getValue() !== old", arg=before)
    assert "Please add a docstring" in page.evaluate("() => window.haiEditor.getValue()")
    page.goto("about:blank")
