"""The researchers' live monitor: rows, filters, pagination, bounded queries, access, pushes,
and the htmx partial of its rows (``monitor/rows/``) that the page refreshes itself with."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from study.models import Participant, Study, Trial
from study.results import consumers
from study.templatetags.durations import duration
from tests.factories import ResearcherFactory, UserFactory
from tests.study.factories_study import make_participant, make_study
from tests.study.results.report_helpers import add_trial, researcher_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def study() -> Study:
    return make_study(tracks=("SDE", "MLE"), status=Study.Status.RECRUITING)


def monitor_json(client: Client, study: Study, query: str = "") -> dict[str, Any]:
    response = client.get(f"/study/results/{study.slug}/monitor.json{query}")
    assert response.status_code == 200
    return response.json()


def monitor_rows(client: Client, study: Study, query: str = "") -> str:
    response = client.get(f"/study/results/{study.slug}/monitor/rows/{query}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    return response.content.decode()


def add_people(study: Study, n: int, start: int = 0) -> list[Participant]:
    """``n`` participants in session 1: one trial submitted (grading queued), one running."""
    people = []
    for i in range(start, start + n):
        p = make_participant(
            study,
            "SDE" if i % 2 else "MLE",
            user=UserFactory(username=f"p-crowd-{i:03d}"),
            stage=Participant.Stage.IN_SESSION,
            session_index=1,
        )
        add_trial(p, 1, "A", evaluation_status="queued")
        add_trial(p, 2, "B", status=Trial.Status.ACTIVE)
        people.append(p)
    return people


def test_rows_show_current_trial_time_left_grading_flags_and_withdrawals(study: Study) -> None:
    from ide_bridge.metrics import register
    from ide_bridge.models import IntegrityFlag

    register()
    working = make_participant(
        study, "SDE", user=UserFactory(username="p-amber-fox"), stage="in_session"
    )
    Participant.objects.filter(pk=working.pk).update(session_index=1)
    done = add_trial(working, 1, "A", evaluation_status="running")
    active = add_trial(working, 2, "B", status=Trial.Status.ACTIVE)
    Trial.objects.filter(pk=active.pk).update(deadline=timezone.now() + timedelta(minutes=30))
    add_trial(working, 3, "A", status=Trial.Status.PENDING, session=2)
    IntegrityFlag.objects.create(trial=active, kind="large_paste")
    IntegrityFlag.objects.create(trial=done, kind="long_blur")
    gone = make_participant(study, "MLE", user=UserFactory(username="p-blue-owl"))
    Participant.objects.filter(pk=gone.pk).update(
        stage=Participant.Stage.WITHDRAWN,
        exclusion_reason="withdrawn (participant button)",
        ended_at=timezone.now(),
    )

    data = monitor_json(researcher_client(study), study)
    rows = {r["pseudonym"]: r for r in data["participants"]}
    row = rows["p-amber-fox"]
    assert row["stage"] == "in_session"
    assert row["track"] == "SDE"
    assert row["session"] == 1
    assert row["current_trial"]["period"] == 2
    assert row["current_trial"]["condition"] == "B"
    assert 1790 <= row["current_trial"]["time_left_s"] <= 1800
    assert row["next_trial"] is None
    assert row["grading"] == {"running": 1}
    assert row["grading_pending"] == 1
    assert row["flags"] == 2
    assert [t["flags"] for t in row["trials"]] == [1, 1, 0]
    assert row["trials_ended"] == 1
    assert row["trials_total"] == 3
    assert row["trials"][0]["report_url"] == f"/study/results/researcher/trials/{done.pk}/report/"
    withdrawn = rows["p-blue-owl"]
    assert withdrawn["withdrawn"] is True
    assert withdrawn["active"] is False
    assert withdrawn["ended_reason"] == "withdrawn (participant button)"
    summary = data["summary"]
    assert summary["participants"] == 2
    assert summary["withdrawn"] == 1
    assert summary["active"] == 1
    assert summary["trials_active"] == 1
    assert summary["grading_running"] == 1
    assert summary["grading_queued"] == 0


def test_pages_hold_fifty_participants(study: Study) -> None:
    for i in range(60):
        make_participant(study, user=UserFactory(username=f"p-page-{i:03d}"))
    client = researcher_client(study)
    first = monitor_json(client, study)
    assert len(first["participants"]) == 50
    assert first["page"] == {
        "number": 1,
        "pages": 2,
        "count": 60,
        "size": 50,
        "has_next": True,
        "has_previous": False,
    }
    second = monitor_json(client, study, "?page=2")
    assert len(second["participants"]) == 10
    assert second["participants"][-1]["pseudonym"] == "p-page-059"
    assert monitor_json(client, study, "?page=99")["page"]["number"] == 2  # clamped
    assert monitor_json(client, study, "?page=nonsense")["page"]["number"] == 1
    html = client.get(f"/study/results/{study.slug}/monitor/").content.decode()
    assert 'href="?page=2"' in html
    assert "Page 1 of 2" in html


def test_filters_by_stage_track_and_search(study: Study) -> None:
    make_participant(study, "SDE", user=UserFactory(username="p-amber-fox"), stage="in_session")
    blue = make_participant(study, "MLE", user=UserFactory(username="p-blue-owl"))
    make_participant(study, "MLE", user=UserFactory(username="p-cyan-elk"), stage="withdrawn")
    client = researcher_client(study)

    def names(query: str) -> list[str]:
        return [r["pseudonym"] for r in monitor_json(client, study, query)["participants"]]

    assert names("?stage=in_session") == ["p-amber-fox"]
    assert names("?stage=active") == ["p-amber-fox", "p-blue-owl"]
    assert names("?track=mle") == ["p-blue-owl", "p-cyan-elk"]
    assert names("?track=MLE&stage=withdrawn") == ["p-cyan-elk"]
    assert names("?q=blue") == ["p-blue-owl"]
    assert names(f"?q={blue.internal_id[:6]}") == ["p-blue-owl"]
    assert names("?stage=bogus") == ["p-amber-fox", "p-blue-owl", "p-cyan-elk"]  # ignored
    html = client.get(f"/study/results/{study.slug}/monitor/?stage=withdrawn").content.decode()
    assert "p-cyan-elk" in html
    assert "p-amber-fox" not in html


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as context:
        assert client.get(url).status_code == 200
    return len(context.captured_queries)


def test_query_count_does_not_grow_with_participants(
    study: Study, django_assert_num_queries: Any
) -> None:
    from ide_bridge.metrics import register

    register()
    client = researcher_client(study)
    json_url = f"/study/results/{study.slug}/monitor.json"
    page_url = f"/study/results/{study.slug}/monitor/"
    add_people(study, 30)
    small = (count_queries(client, json_url), count_queries(client, page_url))
    add_people(study, 30, start=30)
    large = (count_queries(client, json_url), count_queries(client, page_url))
    assert small == large, (small, large)
    # session, user, the staff two-factor check (study/researchers/mfa.py), study, page count,
    # page, its trials, flags (one provider), stage counts, grading queue, active trials; the
    # page adds the study's tracks.
    with django_assert_num_queries(11):
        data = monitor_json(client, study)
    assert len(data["participants"]) == 50
    assert data["summary"]["grading_queued"] == 60
    assert data["summary"]["trials_active"] == 60
    with django_assert_num_queries(12):
        client.get(page_url)
    # The rows partial costs what the JSON costs (the same data, rendered).
    rows_url = f"/study/results/{study.slug}/monitor/rows/"
    assert count_queries(client, rows_url) == 11


# --- The htmx partial ---------------------------------------------------------------------
def test_rows_partial_renders_rows_with_the_summary_out_of_band(study: Study) -> None:
    working = make_participant(
        study,
        "SDE",
        user=UserFactory(username="p-amber-fox"),
        stage=Participant.Stage.IN_SESSION,
        session_index=1,
    )
    active = add_trial(working, 1, "A", status=Trial.Status.ACTIVE)
    Trial.objects.filter(pk=active.pk).update(deadline=timezone.now() + timedelta(minutes=30))
    waiting = make_participant(
        study, "MLE", user=UserFactory(username="p-blue-owl"), stage=Participant.Stage.WAITING
    )
    Participant.objects.filter(pk=waiting.pk).update(
        next_session_opens_at=timezone.now() + timedelta(hours=2, minutes=1)
    )
    client = researcher_client(study)

    html = monitor_rows(client, study)
    assert "<html" not in html  # a fragment, not a page
    assert "p-amber-fox" in html
    assert "p-blue-owl" in html
    assert working.internal_id in html
    assert "Task 1 · A · " in html
    # Time left is formatted on the server as monitor.js ticks it down ("short" style).
    assert re.search(r'<span data-deadline="[^"]+">(29 min 5\d s|30 min 00 s)</span>', html)
    assert "next session in 2 h 0" in html
    assert f'data-server-time="{monitor_json(client, study)["server_time"][:10]}' in html
    assert 'id="monitor-page">Page 1 of 1 · 2 participants</caption>' in html
    # The summary cards come along as an out-of-band swap.
    assert re.search(r'<dl [^>]*id="monitor-summary" hx-swap-oob="true">', html)
    assert '<dd class="h5 mb-0" data-summary="participants">2</dd>' in html
    assert '<dd class="h5 mb-0" data-summary="trials_active">1</dd>' in html

    assert "No participants match." in monitor_rows(client, study, "?q=nobody")


def test_page_and_partial_render_the_same_rows(study: Study) -> None:
    make_participant(study, "SDE", user=UserFactory(username="p-amber-fox"), stage="in_session")
    make_participant(study, "MLE", user=UserFactory(username="p-cyan-elk"), stage="withdrawn")
    client = researcher_client(study)
    page = client.get(f"/study/results/{study.slug}/monitor/?stage=withdrawn").content.decode()
    # The page refreshes itself from the partial with its own filters, polled and pushed.
    match = re.search(r'<div id="monitor-live" hx-get="([^"]+)" hx-trigger="([^"]+)"', page)
    assert match is not None
    assert match.group(1) == f"/study/results/{study.slug}/monitor/rows/?stage=withdrawn"
    assert match.group(2) == "every 5s [!document.hidden], monitor-changed"
    assert "hx-swap-oob" not in page  # the summary is in place on the page itself

    rows = monitor_rows(client, study, "?stage=withdrawn")
    assert "p-cyan-elk" in rows
    assert "p-amber-fox" not in rows
    body = rows[rows.index("<tbody") : rows.index("</tbody>")]
    assert body in page


def test_rows_partial_keeps_the_filters_in_its_page_links(study: Study) -> None:
    for i in range(60):
        make_participant(study, "SDE", user=UserFactory(username=f"p-page-{i:03d}"))
    client = researcher_client(study)
    first = monitor_rows(client, study, "?track=sde")
    assert 'href="?track=SDE&amp;page=2">Next page' in first
    second = monitor_rows(client, study, "?track=SDE&page=2")
    assert 'href="?track=SDE">Previous page' in second
    assert "Page 2 of 2 · 60 participants" in second
    page = client.get(f"/study/results/{study.slug}/monitor/?track=SDE&page=2").content.decode()
    assert f'hx-get="/study/results/{study.slug}/monitor/rows/?track=SDE&amp;page=2"' in page


def test_rows_partial_only_answers_get(study: Study) -> None:
    client = researcher_client(study)
    assert client.post(f"/study/results/{study.slug}/monitor/rows/").status_code == 405


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "0 min 00 s"),
        (-5, "0 min 00 s"),
        (9, "0 min 09 s"),
        (309, "5 min 09 s"),
        (3599, "59 min 59 s"),
        (3600, "1 h 00 min"),
        (3720, "1 h 02 min"),
        (90061, "25 h 01 min"),
    ],
)
def test_duration_filter_formats_like_the_monitor_script(seconds: int | None, text: str) -> None:
    assert duration(seconds) == text


def test_monitor_is_for_researchers_of_the_study_only(study: Study) -> None:
    for url in (
        f"/study/results/{study.slug}/monitor/",
        f"/study/results/{study.slug}/monitor/rows/",
        f"/study/results/{study.slug}/monitor.json",
    ):
        assert Client().get(url).status_code == 302  # sign in first
        participant = Client()
        participant.force_login(UserFactory.create(username="p-amber-fox"))
        assert participant.get(url).status_code == 403
        assert researcher_client(make_study()).get(url).status_code == 404
        assert researcher_client(study).get(url).status_code == 200
        assert researcher_client(is_superuser=True).get(url).status_code == 200


# --- Pushes -------------------------------------------------------------------------------
def test_saves_push_after_commit_but_autosaves_do_not(
    study: Study, django_capture_on_commit_callbacks: Any
) -> None:
    consumers.connect_monitor_signals()
    person = make_participant(study)
    trial = add_trial(person, 1, "A", status=Trial.Status.ACTIVE)
    with mock.patch.object(consumers, "_send") as send:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            trial.draft_files = {"solution.py": "print(1)"}
            trial.save(update_fields=["draft_files", "draft_saved_at"])
        assert callbacks == []
        assert not send.called
        with django_capture_on_commit_callbacks(execute=True):
            trial.status = Trial.Status.SUBMITTED
            trial.save(update_fields=["status"])
        send.assert_called_once_with(study.pk)
        send.reset_mock()
        with django_capture_on_commit_callbacks(execute=True):
            person.stage = Participant.Stage.WAITING
            person.save(update_fields=["stage"])
        send.assert_called_once_with(study.pk)


def test_a_failing_channel_layer_does_not_break_the_save(study: Study) -> None:
    layer = mock.Mock()
    layer.group_send = mock.AsyncMock(side_effect=OSError("redis is down"))
    with mock.patch.object(consumers, "get_channel_layer", return_value=layer):
        consumers._send(study.pk)  # logged, not raised
    layer.group_send.assert_awaited_once_with(f"monitor.{study.pk}", {"type": "monitor.changed"})


def session_headers(user: Any) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    return [(b"origin", b"http://localhost"), (b"cookie", f"sessionid={cookie}".encode())]


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_websocket_receives_a_push_after_a_change() -> None:
    from config.asgi import application

    def setup() -> tuple[Study, Trial, list[tuple[bytes, bytes]]]:
        consumers.connect_monitor_signals()
        study = make_study(status=Study.Status.RECRUITING)
        researcher = ResearcherFactory.create()
        study.researchers.add(researcher)
        trial = add_trial(make_participant(study), 1, "A", status=Trial.Status.ACTIVE)
        return study, trial, session_headers(researcher)

    study, trial, headers = await sync_to_async(setup)()
    communicator = WebsocketCommunicator(
        application, f"/ws/studies/{study.slug}/monitor/", headers=headers
    )
    connected, _ = await communicator.connect()
    assert connected
    assert await communicator.receive_json_from() == {"type": "hello"}

    def submit() -> None:
        with transaction.atomic():
            Trial.objects.filter(pk=trial.pk).update(status=Trial.Status.SUBMITTED)
            fresh = Trial.objects.get(pk=trial.pk)
            fresh.ended_at = timezone.now()
            fresh.save(update_fields=["ended_at"])

    await sync_to_async(submit)()
    assert await communicator.receive_json_from(timeout=3) == {"type": "changed"}
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_websocket_refuses_people_who_are_not_researchers_of_the_study() -> None:
    from config.asgi import application

    def setup() -> tuple[Study, list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
        study = make_study()
        outsider = ResearcherFactory.create()  # staff, but not on this study
        participant = UserFactory.create(username="p-amber-fox")
        return study, session_headers(outsider), session_headers(participant)

    study, outsider, participant = await sync_to_async(setup)()
    for headers in (outsider, participant, [(b"origin", b"http://localhost")]):
        communicator = WebsocketCommunicator(
            application, f"/ws/studies/{study.slug}/monitor/", headers=headers
        )
        connected, _ = await communicator.connect()
        assert connected  # accepted, then closed with a reason the page understands
        assert await communicator.receive_output() == {"type": "websocket.close", "code": 4403}
