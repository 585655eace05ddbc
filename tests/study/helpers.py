"""Helpers for participant-journey tests: a study on real bank templates, a logged-in client
and a participant brought as far as their assigned plan."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.test import Client

from config.celery_app import app as celery_app
from evaluation.bank import load_template
from study.demo.answers import answers_for
from study.enrolment.accounts import create_participants
from study.enrolment.services import give_consent, submit_screening
from study.models import Participant, Study
from study.questionnaires.instruments import attach_default_instruments
from tests.factories import ResearcherFactory
from tests.study.factories_study import make_study

JOURNEY_TEMPLATES = [
    ("sde-binary-palindromes", "easy"),
    ("mle-palindromic-path", "medium"),
    ("ds-window-top-segments", "hard"),
    ("sde-clickomania", "hard"),
]


def journey_study(**fields: Any) -> Study:
    fields.setdefault("status", Study.Status.RECRUITING)
    fields.setdefault("report_release", Study.ReleasePolicy.IMMEDIATELY)
    study = make_study(tracks=("SDE", "MLE"), templates=JOURNEY_TEMPLATES, **fields)
    # Both tracks share the four templates, so each pool holds some of another track's
    # (allowed, with a warning, when the entry says cross-track).
    for entry in study.pool.select_related("track"):
        if load_template(entry.template_slug).track != entry.track.code:
            entry.cross_track = True
            entry.save(update_fields=["cross_track"])
    attach_default_instruments(study)
    study.refresh_from_db()
    return study


def logged_in(study: Study) -> tuple[Client, Participant]:
    """A new participant who followed their personal link (confirm page, then POST)."""
    creator = ResearcherFactory.create()
    account = create_participants(study, 1, created_by=creator)[0]
    client = Client()
    assert client.get(account.login_path).status_code == 200
    response = client.post(account.login_path)
    assert response.status_code == 302
    return client, account.participant


def consent_and_screen(
    participant: Participant, *, seed: int = 3, track_preference: str | None = None
) -> None:
    """Consent (typing a name where the form asks for one) and answer the screening: the
    participant is ASSIGNED, with their trials created."""
    study = participant.study
    form = study.consent_form
    assert form is not None
    assert study.screening is not None
    give_consent(
        participant,
        agree=True,
        checkboxes={box["id"]: True for box in form.checkboxes},
        typed_name="Test Participant",
    )
    participant.refresh_from_db()
    answers = answers_for(study.screening, random.Random(seed), track_preference=track_preference)
    submit_screening(participant, answers)
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.ASSIGNED


def assigned(
    study: Study,
    client: Client | None = None,
    *,
    seed: int = 3,
    track_preference: str | None = None,
) -> tuple[Client, Participant]:
    """A participant who followed their link, consented and answered the screening."""
    logged_client, participant = logged_in(study)
    consent_and_screen(participant, seed=seed, track_preference=track_preference)
    return client or logged_client, participant


@contextmanager
def grading_queued() -> Iterator[None]:
    """Send grading tasks to an in-process broker instead of running them: the journey tests
    check the flow, the evaluation tests check grading."""
    saved = {k: celery_app.conf[k] for k in ("task_always_eager", "broker_url")}
    _reset_pool()
    celery_app.conf.update(task_always_eager=False, broker_url="memory://")
    try:
        yield
    finally:
        _reset_pool()
        celery_app.conf.update(**saved)


def _reset_pool() -> None:
    """Forget the app's pools so the next send uses the configured broker (kombu keeps pools
    per connection in its own registry, so nothing is closed here)."""
    celery_app._pool = None  # type: ignore[attr-defined]
    celery_app.amqp._producer_pool = None  # type: ignore[attr-defined]


def database_text() -> str:
    """Every value of every table, as text: what a database dump would reveal."""
    chunks: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            for row in cursor.fetchall():
                for value in row:
                    if isinstance(value, bytes | memoryview):
                        value = bytes(value).decode("latin-1")
                    chunks.append(str(value))
    return "\n".join(chunks)
