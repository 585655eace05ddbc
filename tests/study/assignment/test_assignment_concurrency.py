"""Parallel enrolment on PostgreSQL: the per-study row lock serialises assignment.

Each thread has its own database connection (Django connections are per thread) and closes it
when done. A short sleep after counting widens the race window: with the lock, every
participant still sees the plans of all those assigned before them (as in a serial run);
without it, several read the same counts. SQLite cannot show this (SELECT ... FOR UPDATE is a
no-op there), so the module skips on SQLite, and fails under REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import pytest
from django.db import connection

from study.assignment import services as service
from study.assignment.minimiser import Counts
from study.assignment.services import assign_plan, plan_of
from study.models import Assignment, AssignmentLock, Participant
from tests.study.factories_study import make_participant, make_study

pytestmark = pytest.mark.django_db(transaction=True)
THREADS = 8
RACE_WINDOW_S = 0.25


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        reason = (
            "parallel enrolment needs PostgreSQL row locks (SELECT ... FOR UPDATE is a no-op "
            "on SQLite); set DATABASE_URL=postgres://..."
        )
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture
def slow_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    original = service.track_counts

    def counted_then_wait(*args: Any, **kwargs: Any) -> Counts:
        counts = original(*args, **kwargs)
        time.sleep(RACE_WINDOW_S)  # another enrolment would read the same counts now
        return counts

    monkeypatch.setattr(service, "track_counts", counted_then_wait)


def _enrol_in_parallel(participant_ids: list[int]) -> list[BaseException]:
    barrier = threading.Barrier(len(participant_ids))
    errors: list[BaseException] = []

    def enrol(pk: int) -> None:
        try:
            participant = Participant.objects.select_related("study", "track").get(pk=pk)
            barrier.wait(timeout=30)
            assign_plan(participant, rng_seed=pk, create_trials=False)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=enrol, args=(pk,)) for pk in participant_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


def test_parallel_enrolments_see_the_counts_a_serial_run_would(slow_counts: None) -> None:
    study = make_study(target_participants=45)
    ids = [make_participant(study).pk for _ in range(THREADS)]

    started = time.monotonic()
    assert _enrol_in_parallel(ids) == []
    elapsed = time.monotonic() - started

    rows = sorted(
        Assignment.objects.filter(study=study), key=lambda a: a.counts_before["participants"]
    )
    assert [a.counts_before["participants"] for a in rows] == list(range(THREADS))
    running = Counts()
    for a in rows:  # each saw exactly the plans assigned before it
        seen = Counts.from_json(a.counts_before)
        for cell, n in running.task_condition.items():
            assert seen.task_condition[cell] == n
        assert {k: v for k, v in seen.sequence.items() if v} == running.sequence
        running.add(plan_of(a))
    assert elapsed >= THREADS * RACE_WINDOW_S * 0.9  # they really waited for each other
    assert AssignmentLock.objects.filter(study=study).count() == 1


def test_without_the_lock_parallel_enrolments_read_the_same_counts(
    slow_counts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "lock_study", lambda study: None)
    study = make_study(target_participants=45)
    ids = [make_participant(study).pk for _ in range(THREADS)]

    assert _enrol_in_parallel(ids) == []

    seen = Counter(a.counts_before["participants"] for a in Assignment.objects.filter(study=study))
    assert max(seen.values()) > 1  # the race the lock prevents
