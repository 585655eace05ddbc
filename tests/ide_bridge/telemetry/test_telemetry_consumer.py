"""The telemetry WebSocket through the full ASGI stack: who may connect, acks of the contiguous
prefix, idempotent re-sends, resuming after a reload, and what happens to invalid events."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.db import connections
from django.utils import timezone

from ide_bridge.models import TrialEvent
from ide_bridge.telemetry.consumers import (
    CLOSE_NOT_ACCEPTING,
    CLOSE_NOT_FOUND,
    CLOSE_UNAUTHENTICATED,
    GroupCommit,
)
from ide_bridge.telemetry.protocol import MAX_BATCH_BYTES, MAX_BATCH_EVENTS, REJECTED_KIND
from study.models import Participant, Trial
from tests.ide_bridge.telemetry_helpers import (
    batch,
    close_code,
    event,
    events,
    journey_trial,
    open_socket,
    started_trial,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest_asyncio.fixture(autouse=True)
async def release_connections() -> AsyncIterator[None]:
    """Close what the consumers opened in other threads: PostgreSQL cannot drop the test
    database while a connection is open, and an in-memory SQLite connection (which Django never
    closes) would make a later test without database access fail in channels' cleanup."""
    yield
    await sync_to_async(_forget_connections)()  # the shared thread-sensitive thread
    GroupCommit.close_connections()


def _forget_connections() -> None:
    connections.close_all()
    for alias in connections:
        with contextlib.suppress(AttributeError):
            del connections[alias]


def stored(trial: Trial) -> list[tuple[int, str]]:
    return list(TrialEvent.objects.filter(trial=trial).order_by("seq").values_list("seq", "kind"))


async def send(communicator: Any, message: dict[str, Any]) -> dict[str, Any]:
    await communicator.send_json_to(message)
    reply: dict[str, Any] = await communicator.receive_json_from(timeout=5)
    return reply


async def test_anonymous_connection_is_closed_with_4401() -> None:
    _, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, None)
    assert await close_code(communicator) == CLOSE_UNAUTHENTICATED


async def test_participant_cannot_open_other_participants_trial() -> None:
    _, participant, trial = await database_sync_to_async(started_trial)()
    other_client, _, _ = await database_sync_to_async(
        lambda: started_trial(study=participant.study)
    )()
    communicator = await open_socket(trial.pk, other_client)
    assert await close_code(communicator) == CLOSE_NOT_FOUND
    missing = await open_socket(trial.pk + 1000, other_client)
    assert await close_code(missing) == CLOSE_NOT_FOUND  # "missing" looks like "not yours"


async def test_trial_not_started_or_long_closed_refuses_events() -> None:
    client, participant, trial = await database_sync_to_async(journey_trial)()
    pending = await database_sync_to_async(
        lambda: participant.trials.filter(status=Trial.Status.PENDING).first()
    )()
    assert pending is not None  # the journey assigned four trials; only the first started
    assert await close_code(await open_socket(pending.pk, client)) == CLOSE_NOT_ACCEPTING
    long_ago = timezone.now() - timedelta(hours=2)
    await database_sync_to_async(Trial.objects.filter(pk=trial.pk).update)(
        status=Trial.Status.SUBMITTED, ended_at=long_ago
    )
    assert await close_code(await open_socket(trial.pk, client)) == CLOSE_NOT_ACCEPTING


async def test_recently_closed_trial_still_flushes_its_last_events() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    await database_sync_to_async(Trial.objects.filter(pk=trial.pk).update)(
        status=Trial.Status.SUBMITTED, ended_at=timezone.now() - timedelta(minutes=2)
    )
    communicator = await open_socket(trial.pk, client)
    ack = await send(communicator, batch(events(1, 3)))
    assert ack["seq"] == 3
    await communicator.disconnect()


async def test_batch_is_stored_and_acknowledged() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    ack = await send(communicator, batch(events(1, 50)))
    assert ack == {
        "type": "ack",
        "seq": 50,
        "last": 50,
        "stored": 50,
        "duplicates": 0,
        "rejected": 0,
        "dropped_keys": 0,
        "errors": [],
    }
    rows = await database_sync_to_async(stored)(trial)
    assert [seq for seq, _ in rows] == list(range(1, 51))
    await communicator.disconnect()


async def test_same_batch_twice_gives_the_same_ack_and_no_duplicate_rows() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    first = await send(communicator, batch(events(1, 20)))
    again = await send(communicator, batch(events(1, 20)))
    assert first["seq"] == again["seq"] == 20
    assert (again["stored"], again["duplicates"]) == (0, 20)
    assert len(await database_sync_to_async(stored)(trial)) == 20
    await communicator.disconnect()


async def test_ack_stays_at_the_contiguous_prefix_until_the_gap_is_filled() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    assert (await send(communicator, batch(events(1, 10))))["seq"] == 10
    ahead = await send(communicator, batch(events(21, 30)))  # 11..20 lost in flight
    assert (ahead["seq"], ahead["stored"], ahead["last"]) == (10, 10, 30)
    partly = await send(communicator, batch(events(11, 15)))
    assert partly["seq"] == 15
    filled = await send(communicator, batch(events(16, 20)))
    assert filled["seq"] == 30  # the gap closed: everything up to 30 is stored
    assert len(await database_sync_to_async(stored)(trial)) == 30
    await communicator.disconnect()


async def test_hello_tells_a_reloaded_client_where_to_resume() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    assert (await send(communicator, {"type": "hello"}))["seq"] == 0
    await send(communicator, batch([*events(1, 7), *events(9, 9)]))
    await communicator.disconnect()

    reloaded = await open_socket(trial.pk, client)
    hello = await send(reloaded, {"type": "hello"})
    assert (hello["type"], hello["seq"], hello["last"]) == ("ack", 7, None)
    ack = await send(reloaded, batch(events(8, 12)))  # re-sends 9: counted once
    assert (ack["seq"], ack["stored"], ack["duplicates"]) == (12, 4, 1)
    await reloaded.disconnect()


async def test_unknown_kind_takes_its_seq_as_a_counted_tombstone() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    items = [
        event(1),
        {"seq": 2, "ts": 1, "kind": "keylogger", "data": {"keys": "secret"}},
        event(3, "paste", length=5, source="outside", lines=1, clipboard="dropped"),
        event(4, "edit", changes="not a list"),
    ]
    ack = await send(communicator, batch(items))
    assert (ack["seq"], ack["stored"], ack["rejected"], ack["dropped_keys"]) == (4, 2, 2, 1)
    assert [e["seq"] for e in ack["errors"]] == [2, 4]
    assert "unknown kind" in ack["errors"][0]["reason"]
    rows = await database_sync_to_async(stored)(trial)
    assert rows == [(1, "selection"), (2, REJECTED_KIND), (3, "paste"), (4, REJECTED_KIND)]
    payloads = await database_sync_to_async(
        lambda: dict(TrialEvent.objects.filter(trial=trial).values_list("seq", "payload"))
    )()
    assert "secret" not in str(payloads[2])  # the rejected payload is not kept
    assert "clipboard" not in payloads[3]
    await communicator.disconnect()


async def test_broken_envelopes_are_refused_whole_and_the_socket_stays_open() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    too_many = await send(communicator, batch(events(1, MAX_BATCH_EVENTS + 1)))
    assert (too_many["type"], too_many["code"]) == ("error", "too_many_events")
    no_seq = await send(communicator, batch([{"ts": 1, "kind": "idle", "data": {}}]))
    assert no_seq["code"] == "bad_seq"
    await communicator.send_to(text_data="{not json")
    assert (await communicator.receive_json_from())["code"] == "bad_json"
    assert (await send(communicator, {"type": "nonsense"}))["code"] == "unknown_type"
    assert await database_sync_to_async(stored)(trial) == []
    assert (await send(communicator, batch(events(1, 2))))["seq"] == 2
    await communicator.disconnect()


async def test_a_message_over_the_size_limit_gets_an_error_and_close_code_1009() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    # Fewer characters than the limit, more bytes: the limit counts UTF-8 bytes.
    code = "é" * (MAX_BATCH_BYTES // 2 + 1)
    message = json.dumps(batch([event(1, "checkpoint", code=code)]), ensure_ascii=False)
    assert len(message) < MAX_BATCH_BYTES < len(message.encode())
    await communicator.send_to(text_data=message)
    error = await communicator.receive_json_from(timeout=5)
    assert error == {
        "type": "error",
        "code": "too_large",
        "error": f"a message holds at most {MAX_BATCH_BYTES} bytes of UTF-8; send smaller batches",
        "seq": 0,
    }
    closed = await communicator.receive_output(timeout=5)
    assert (closed["type"], closed["code"]) == ("websocket.close", 1009)
    assert closed["reason"] == error["error"]
    assert await database_sync_to_async(stored)(trial) == []
    # A new connection takes smaller batches as usual.
    again = await open_socket(trial.pk, client)
    assert (await send(again, batch(events(1, 2))))["seq"] == 2
    await again.disconnect()


async def test_deeply_nested_json_is_refused_by_the_shared_parser() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    nested = '{"type": "batch", "events": ' + "[" * 50_000 + "]" * 50_000 + "}"
    await communicator.send_to(text_data=nested)
    reply = await communicator.receive_json_from(timeout=5)
    assert (reply["code"], reply["error"]) == ("bad_json", "the message is not valid JSON")
    assert (await send(communicator, batch(events(1, 1))))["seq"] == 1  # the socket stays open
    await communicator.disconnect()


async def test_unstorable_characters_are_replaced_and_non_json_numbers_refused() -> None:
    client, _, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    # A NUL and a lone surrogate (JSON.stringify writes both) become U+FFFD, one unit each.
    text = (
        '{"type":"batch","events":[{"seq":1,"ts":1,"kind":"edit","data":{"changes":'
        '[{"rangeOffset":0,"rangeLength":0,"text":"a\\u0000b\\ud800c"}],"versionId":2}}]}'
    )
    await communicator.send_to(text_data=text)
    ack = await communicator.receive_json_from(timeout=5)
    assert (ack["seq"], ack["stored"]) == (1, 1)
    payload = await database_sync_to_async(
        lambda: TrialEvent.objects.get(trial=trial, seq=1).payload
    )()
    assert payload["changes"][0]["text"] == "a\ufffdb\ufffdc"
    await communicator.send_to(text_data='{"type":"batch","events":[{"seq":2,"ts":NaN}]}')
    assert (await communicator.receive_json_from())["code"] == "bad_json"
    await communicator.disconnect()


async def test_batches_arriving_together_are_stored_together_with_their_own_acks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ide_bridge.telemetry import services as telemetry

    groups: list[int] = []
    real = telemetry.ingest_many

    def ingest_many(jobs: list[Any]) -> list[Any]:
        groups.append(len(jobs))
        return real(jobs)

    monkeypatch.setattr(telemetry, "ingest_many", ingest_many)
    monkeypatch.setattr(GroupCommit, "WRITERS", 1)
    trials = [await database_sync_to_async(started_trial)() for _ in range(3)]
    sockets = [await open_socket(trial.pk, client) for client, _, trial in trials]
    for i, communicator in enumerate(sockets):  # all queued before the first write finishes
        await communicator.send_json_to(batch(events(1, 10 * (i + 1))))
    acks = [await communicator.receive_json_from(timeout=5) for communicator in sockets]
    assert [a["seq"] for a in acks] == [10, 20, 30]
    assert [a["stored"] for a in acks] == [10, 20, 30]
    assert sum(groups) == 3
    assert max(groups) > 1  # at least two batches went to the database together
    for communicator in sockets:
        await communicator.disconnect()


async def test_a_failing_batch_does_not_fail_the_others_of_its_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ide_bridge.telemetry import services as telemetry

    real = telemetry.ingest_many
    poison = object()

    sizes: list[int] = []

    def ingest_many(jobs: list[Any]) -> list[Any]:
        sizes.append(len(jobs))
        if any(events is poison for _, events, _ in jobs):
            raise RuntimeError("the database refused this one")
        return real(jobs)

    monkeypatch.setattr(telemetry, "ingest_many", ingest_many)
    monkeypatch.setattr(GroupCommit, "WRITERS", 1)  # so the three form one group
    (_, _, trial_a), (_, _, trial_b) = [
        await database_sync_to_async(started_trial)() for _ in range(2)
    ]
    writer = GroupCommit()
    good = asyncio.ensure_future(writer.ingest(trial_a, events(1, 5), 0))
    bad = asyncio.ensure_future(writer.ingest(trial_b, poison, 0))
    also_good = asyncio.ensure_future(writer.ingest(trial_b, events(1, 3), 0))
    assert (await good).highest_contiguous_seq == 5
    with pytest.raises(RuntimeError):
        await bad
    assert (await also_good).highest_contiguous_seq == 3
    assert sizes == [3, 1, 1, 1]  # the group failed, then each batch alone


async def test_an_open_socket_is_closed_when_the_participant_withdraws() -> None:
    client, participant, trial = await database_sync_to_async(started_trial)()
    communicator = await open_socket(trial.pk, client)
    assert (await send(communicator, batch(events(1, 2))))["seq"] == 2
    await database_sync_to_async(Participant.objects.filter(pk=participant.pk).update)(
        stage=Participant.Stage.WITHDRAWN
    )
    refused = await send(communicator, batch(events(3, 4)))
    assert refused["code"] == "trial_closed"
    assert await close_code(communicator) == CLOSE_NOT_ACCEPTING
    assert len(await database_sync_to_async(stored)(trial)) == 2
