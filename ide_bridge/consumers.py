"""WebSocket consumers of the IDE bridge."""

from __future__ import annotations

import json
import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from django.utils import timezone

from ide_bridge import telemetry
from ide_bridge.protocol import MAX_BATCH_BYTES, BatchError
from study.access import get_participant, get_trial_for_participant
from study.models import Trial, User

# Close codes of the telemetry socket (the client stops reconnecting on these).
CLOSE_UNAUTHENTICATED = 4401  # not logged in
CLOSE_NOT_FOUND = 4404  # no such trial, or not this participant's ("missing" == "not yours")
CLOSE_NOT_ACCEPTING = 4409  # the trial has not started, or closed more than the grace ago
# How often a long-lived connection re-reads whether its trial still accepts events.
RECHECK_SECONDS = 30.0


class PingConsumer(AsyncJsonWebsocketConsumer):
    """Answers ``{"type": "ping"}`` with ``{"type": "pong"}``: lets clients and probes check
    that WebSockets reach the server through proxies."""

    async def connect(self) -> None:
        await self.accept()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong", "echo": content.get("echo")})
        else:
            await self.send_json({"type": "error", "error": 'expected {"type": "ping"}'})


def _authorise(user: User | AnonymousUser, trial_id: int) -> tuple[Trial | None, int, int]:
    """(trial, 0, acknowledged seq) for the owner of an open trial, else (None, close code, 0)."""
    if not user.is_authenticated:
        return None, CLOSE_UNAUTHENTICATED, 0
    try:
        participant = get_participant(user)
        trial = get_trial_for_participant(participant, trial_id)
    except Http404:
        return None, CLOSE_NOT_FOUND, 0
    trial.participant = participant  # already loaded, with the frozen snapshot
    if not telemetry.accepts_events(trial, timezone.now()):
        return None, CLOSE_NOT_ACCEPTING, 0
    return trial, 0, telemetry.highest_contiguous_seq(trial.pk)


def _still_open(trial: Trial) -> bool:
    trial.refresh_from_db(fields=["status", "started_at", "deadline", "ended_at"])
    return telemetry.accepts_events(trial, timezone.now())


class TelemetryConsumer(AsyncJsonWebsocketConsumer):
    """Batched telemetry of one trial (protocol: :mod:`ide_bridge.protocol`).

    Only the participant who owns the trial may connect, while it accepts events (active, or
    closed less than ``telemetry.CLOSED_GRACE`` ago). Refusals accept and then close with a
    4xxx code, so the browser learns why and stops reconnecting. Batches are handled one at a
    time per connection, so acks arrive in order. No channel layer is needed.
    """

    trial: Trial | None = None
    acked = 0  # contiguous prefix known to be stored: the floor of the next ack query
    checked_at = 0.0

    async def connect(self) -> None:
        trial_id = int(self.scope["url_route"]["kwargs"]["trial_id"])
        user = self.scope.get("user") or AnonymousUser()
        trial, code, acked = await database_sync_to_async(_authorise)(user, trial_id)
        await self.accept()
        if trial is None:
            await self.close(code=code)
            return
        self.trial, self.acked, self.checked_at = trial, acked, time.monotonic()

    async def receive(
        self, text_data: str | None = None, bytes_data: Any = None, **kw: Any
    ) -> None:
        if self.trial is None:
            return
        if text_data is None:
            await self._error("bad_message", "messages are JSON text")
        elif len(text_data) > MAX_BATCH_BYTES:
            await self._error("too_large", f"a message holds at most {MAX_BATCH_BYTES} characters")
        else:
            try:
                content = json.loads(text_data)
            except ValueError:
                await self._error("bad_json", "the message is not valid JSON")
                return
            await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        trial = self.trial
        assert trial is not None
        if time.monotonic() - self.checked_at > RECHECK_SECONDS:
            if not await database_sync_to_async(_still_open)(trial):
                await self._error("trial_closed", "this trial no longer accepts events")
                await self.close(code=CLOSE_NOT_ACCEPTING)
                return
            self.checked_at = time.monotonic()
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "hello":
            self.acked = await database_sync_to_async(telemetry.highest_contiguous_seq)(
                trial.pk, self.acked
            )
            await self.send_json(telemetry.Ack(self.acked, 0, 0, 0).as_message())
        elif kind == "batch":
            try:
                ack = await database_sync_to_async(telemetry.ingest)(
                    trial, content.get("events"), floor=self.acked
                )
            except BatchError as exc:
                await self._error(exc.code, str(exc))
                return
            self.acked = ack.highest_contiguous_seq
            await self.send_json(ack.as_message())
        else:
            await self._error("unknown_type", 'expected {"type": "hello"} or {"type": "batch"}')

    async def _error(self, code: str, message: str) -> None:
        await self.send_json({"type": "error", "code": code, "error": message, "seq": self.acked})
