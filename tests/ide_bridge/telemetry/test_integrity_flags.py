"""Integrity flags raised while events are ingested (large paste from outside, long absence,
AI in a no-AI arm), exactly once per event, and the researchers' list of them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from ide_bridge.models import IntegrityFlag
from ide_bridge.telemetry.services import LARGE_PASTE_CHARS, LONG_BLUR_MS, ingest
from study.models import Trial
from tests.factories import ResearcherFactory
from tests.ide_bridge.telemetry_helpers import TS0, event, journey_trial, started_trial

pytestmark = pytest.mark.django_db

Kind = IntegrityFlag.Kind


def kinds(trial: Trial) -> list[str]:
    return list(IntegrityFlag.objects.filter(trial=trial).values_list("kind", flat=True))


def paste(seq: int, length: int, source: str = "outside") -> dict[str, Any]:
    return event(seq, "paste", length=length, lines=3, source=source)


def test_large_paste_from_outside_is_flagged_once() -> None:
    _, _, trial = started_trial()
    ack = ingest(trial, [paste(1, LARGE_PASTE_CHARS + 1), paste(2, LARGE_PASTE_CHARS)])
    assert ack.stored == 2
    flag = IntegrityFlag.objects.get(trial=trial)
    assert (flag.kind, flag.event_seq, flag.detail["length"]) == (
        Kind.LARGE_PASTE,
        1,
        LARGE_PASTE_CHARS + 1,
    )
    ingest(trial, [paste(1, LARGE_PASTE_CHARS + 1)])  # a re-sent batch raises nothing new
    assert kinds(trial) == [Kind.LARGE_PASTE]


def test_large_paste_copied_in_the_editor_or_ai_panel_is_not_flagged() -> None:
    _, _, trial = started_trial()
    ingest(trial, [paste(1, 5000, "editor"), paste(2, 5000, "ai_panel")])
    assert kinds(trial) == []


def test_long_absence_is_flagged_once_even_when_tab_and_window_both_report_it() -> None:
    _, _, trial = started_trial()
    away = LONG_BLUR_MS + 1
    items = [
        event(1, "window_focus", focused=False),
        event(2, "page_visibility", state="hidden"),
        event(3, "page_visibility", state="visible", hidden_ms=away),
        event(4, "window_focus", focused=True, away_ms=away + 40),
    ]
    ingest(trial, items[:3])
    ingest(trial, items[3:])  # the second report of the same absence, in the next batch
    flag = IntegrityFlag.objects.get(trial=trial)
    assert (flag.kind, flag.event_seq, flag.detail["away_ms"]) == (Kind.LONG_BLUR, 3, away)


def test_short_absence_and_separate_absences() -> None:
    _, _, trial = started_trial()
    ingest(
        trial,
        [
            event(1, "page_visibility", state="visible", hidden_ms=LONG_BLUR_MS),
            event(2, "window_focus", focused=True, away_ms=LONG_BLUR_MS + 1),
            {
                "seq": 3,
                "ts": TS0 + 10 * LONG_BLUR_MS,
                "kind": "window_focus",
                "data": {"focused": True, "away_ms": 2 * LONG_BLUR_MS},
            },
        ],
    )
    assert IntegrityFlag.objects.filter(trial=trial).count() == 2


def test_ai_requests_are_flagged_only_in_an_arm_without_ai() -> None:
    _, _, no_ai = journey_trial(ai_mode="none")  # the mode comes from the frozen snapshot
    _, _, with_ai = started_trial(ai_mode="inline_chat")
    requests = [
        event(1, "suggestion_request", request_id="r1"),
        event(2, "chat_user_message", request_id="r2", length=40),
        event(3, "suggestion_shown", request_id="r1", length=10),
    ]
    ingest(no_ai, requests)
    ingest(with_ai, requests)
    assert kinds(no_ai) == [Kind.AI_ATTEMPT, Kind.AI_ATTEMPT]
    assert kinds(with_ai) == []


def test_flags_page_lists_flags_of_the_researchers_studies_only() -> None:
    _, participant, trial = started_trial()
    _, _, elsewhere = started_trial()
    for t in (trial, elsewhere):
        ingest(t, [paste(1, 1000)])
    researcher = ResearcherFactory.create()
    participant.study.researchers.add(researcher)
    client = Client()
    client.force_login(researcher)
    page = client.get("/ide/telemetry/flags/")
    assert page.status_code == 200
    html = page.content.decode()
    assert participant.internal_id in html
    assert elsewhere.participant.internal_id not in html
    assert f"/ide/telemetry/replay/{trial.pk}/#seq=1" in html
    by_study = client.get(
        "/ide/telemetry/flags/", {"study": participant.study.slug, "kind": "large_paste"}
    )
    assert participant.internal_id in by_study.content.decode()
    assert (
        client.get("/ide/telemetry/flags/", {"study": elsewhere.participant.study.slug}).status_code
        == 404
    )


def test_flags_page_is_not_for_participants() -> None:
    client, _, _ = started_trial()
    assert client.get("/ide/telemetry/flags/").status_code == 403


def test_admin_lists_flags_and_events_read_only() -> None:
    _, _, trial = started_trial()
    ingest(trial, [paste(1, 1000)])
    researcher = ResearcherFactory.create(is_superuser=True)
    client = Client()
    client.force_login(researcher)
    for model in ("integrityflag", "trialevent"):
        page = client.get(f"/admin/ide_bridge/{model}/")
        assert page.status_code == 200
        assert f"/ide/telemetry/replay/{trial.pk}/#seq=1" in page.content.decode()
        assert client.get(f"/admin/ide_bridge/{model}/add/").status_code == 403
