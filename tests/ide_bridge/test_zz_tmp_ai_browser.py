# TEMPORARY smoke test of static/js/ai.js (deleted after the run).
from __future__ import annotations
import random
from typing import Any
import pytest
from django.core.cache import cache
from ide_bridge.models import AIRequest
from study import participation
from study.accounts import create_participants
from study.demo_answers import answers_for
from study.models import Arm
from tests.factories import ResearcherFactory
from tests.study.journey import journey_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

def setup(mode):
    cache.clear()
    study = journey_study()
    Arm.objects.filter(study=study).update(ai_mode=mode, ai_provider="demo")
    account = create_participants(study, 1, created_by=ResearcherFactory.create())[0]
    participant = account.participant
    form = study.consent_form
    participation.give_consent(participant, agree=True, checkboxes={b["id"]: True for b in form.checkboxes}, typed_name="T P")
    participant.refresh_from_db()
    participation.submit_screening(participant, answers_for(study.screening, random.Random(5), track_preference="SDE"))
    trial = participant.trials.order_by("period").first()
    return account.login_path, trial

def login(page, live_server, path, trial):
    page.goto(live_server.url + path)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"**/ide/trials/{trial.pk}/")
    page.wait_for_function("() => window.haiEditor && window.haiEditorReady", timeout=30_000)

@pytest.mark.parametrize("mode", ["inline_chat", "feedback"])
def test_ai_panel(live_server: Any, page: Any, mode) -> None:
    from playwright.sync_api import expect
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    events = []
    path, trial = setup(mode)
    page.route("**/autosave", lambda r: r.fulfill(status=200, content_type="application/json", body='{"saved_at": "2026-01-01T00:00:00+00:00", "status": "active"}'))
    page.route("**/events", lambda r: r.fulfill(status=200, content_type="application/json", body='{"type": "ack", "seq": 0}'))
    login(page, live_server, path, trial)
    page.evaluate("() => document.addEventListener('hai:telemetry', e => (window.__ev = window.__ev || []).push(e.detail.kind))")
    page.get_by_role("tab", name="Assistant").click()
    panel = page.locator("#ai-panel")
    if mode == "inline_chat":
        page.fill("#ai-input", "How do I start?")
        panel.get_by_role("button", name="Send").click()
        expect(panel).to_contain_text("Demo assistant — not a real AI", timeout=10_000)
        expect(panel).to_contain_text("Tokens used")
        page.screenshot(path="/tmp/aitest/chat.png")
        # inline completion
        page.locator("#editor .view-lines").click()
        page.keyboard.press("Control+End")
        page.keyboard.press("Enter")
        page.keyboard.type("def helper(")
        page.wait_for_timeout(3500)
        page.screenshot(path="/tmp/aitest/inline.png")
        page.keyboard.press("Tab")
        page.wait_for_timeout(800)
        page.keyboard.press("Enter")
        page.keyboard.type("    x = ")
        page.wait_for_timeout(3500)
        page.keyboard.press("Escape")
        page.wait_for_timeout(800)
        page.keyboard.type("1")
        page.wait_for_timeout(3500)
        page.keyboard.type("; y = 2")
        page.wait_for_timeout(1000)
        code = page.evaluate("() => window.haiEditor.getValue()")
        print("TAIL", repr(code[-40:]))
        rows = list(AIRequest.objects.filter(kind="complete").values_list("outcome", flat=True))
        print("OUTCOMES", rows)
    else:
        page.select_option("#ai-panel select", "debugging")
        page.fill("#ai-input", "Please handle empty input")
        panel.get_by_role("button", name="Send feedback").click()
        expect(panel).to_contain_text("Changes to solution.py", timeout=10_000)
        page.wait_for_timeout(500)
        code = page.evaluate("() => window.haiEditor.getValue()")
        assert "Please handle empty input" in code
        page.screenshot(path="/tmp/aitest/feedback.png")
        trial.refresh_from_db()
        assert trial.draft_code == code
    print("EVENTS", page.evaluate("() => window.__ev"))
    print("ERRORS", errors)
    assert not [e for e in errors if "favicon" not in e and "WebSocket" not in e and "404" not in e]
