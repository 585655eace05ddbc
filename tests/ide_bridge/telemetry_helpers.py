"""Helpers for the telemetry tests: a started trial, events, and WebSocket clients.

``journey_trial`` walks the real participant journey (link, consent, screening, assignment); it
instantiates four bank tasks, so it takes seconds. ``started_trial`` builds the same rows
directly around one cached task instance, for the many tests that only need an active trial.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from config.asgi import application
from evaluation.instances import Instance, get_instance
from evaluation.services import record_instance
from study.models import Arm, Participant, Study, Trial
from study.trials.services import start_trial
from tests.study.factories_study import make_participant, make_study
from tests.study.helpers import assigned, journey_study

TS0 = 1_760_000_000_000  # a client clock in ms
TEMPLATE = "sde-binary-palindromes"
SEED = 1


def journey_trial(*, ai_mode: str | None = None) -> tuple[Client, Participant, Trial]:
    """A participant's first trial after the real journey, started, with their client."""
    study = journey_study()
    if ai_mode is not None:
        Arm.objects.filter(study=study).update(ai_mode=ai_mode)  # before the snapshot freezes
    client, participant = assigned(study, seed=5)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    trial = start_trial(trial, timezone.now())
    return client, participant, trial


@cache
def cached_instance() -> Instance:
    return get_instance(TEMPLATE, SEED)


def started_trial(
    *, ai_mode: str = "inline_chat", study: Study | None = None
) -> tuple[Client, Participant, Trial]:
    """An active trial of a new participant (logged in with ``force_login``)."""
    if study is None:
        study = make_study(templates=[(TEMPLATE, "easy")], conditions="A")
        Arm.objects.filter(study=study).update(ai_mode=ai_mode)
    participant = make_participant(study)
    trial = Trial.objects.create(
        participant=participant,
        session_index=1,
        period=1,
        arm=study.arms.get(),
        template_slug=TEMPLATE,
        seed=SEED,
        instance=record_instance(cached_instance()),
    )
    trial = start_trial(trial, timezone.now())
    client = Client()
    client.force_login(participant.user)
    return client, participant, trial


def starter_code(trial: Trial) -> str:
    if (trial.template_slug, trial.seed) == (TEMPLATE, SEED):
        return cached_instance().participant_files["solution.py"]
    return get_instance(trial.template_slug, trial.seed).participant_files["solution.py"]


def event(seq: int, kind: str = "selection", **data: Any) -> dict[str, Any]:
    if kind == "selection" and not data:
        data = {"offset": seq, "length": 0, "line": 1, "column": seq}
    return {"seq": seq, "ts": TS0 + 100 * seq, "kind": kind, "data": data}


def events(first: int, last: int) -> list[dict[str, Any]]:
    return [event(seq) for seq in range(first, last + 1)]


def batch(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "batch", "events": items}


def ws_headers(client: Client | None) -> list[tuple[bytes, bytes]]:
    headers = [(b"origin", b"http://localhost")]
    if client is not None:
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return headers


async def open_socket(trial_id: int, client: Client | None) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application, f"/ws/trials/{trial_id}/events/", headers=ws_headers(client)
    )
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def close_code(communicator: WebsocketCommunicator) -> int | None:
    """The code the server closed with right after accepting (a refusal)."""
    message = await communicator.receive_output(timeout=3)
    assert message["type"] == "websocket.close", message
    return message.get("code")


def apply_edit(code: str, changes: list[dict[str, Any]]) -> str:
    """Monaco changes of one event refer to the text before it: apply from the end."""
    for change in sorted(changes, key=lambda c: c["rangeOffset"], reverse=True):
        offset, length = change["rangeOffset"], change["rangeLength"]
        code = code[:offset] + change["text"] + code[offset + length :]
    return code
