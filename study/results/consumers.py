"""Realtime pushes for the researchers' live monitor.

``MonitorConsumer`` (``ws/studies/<slug>/monitor/``) lets a researcher of the study join the
group ``monitor.<study id>`` and forwards ``{"type": "changed"}`` pings. The page then re-reads
the monitor's rows (the ``monitor_rows`` htmx partial); it also polls every few seconds, so a
lost push (another process on the in-memory channel layer, Redis down) only delays an update.

Pings come from signals, sent after the transaction commits (``transaction.on_commit``):
a trial or participant saved (autosaves of the draft and activity touches are ignored), and a
grading that starts or finishes (``evaluation.signals``). ``connect_monitor_signals()`` is
called once from ``StudyConfig.ready()``.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models.signals import post_save
from django.http import Http404
from django.urls import path

from evaluation.signals import evaluation_finished, evaluation_progress
from study.access import get_study_for_researcher
from study.models import Participant, Trial, User

logger = logging.getLogger(__name__)

CLOSE_FORBIDDEN = 4403  # not a researcher of this study (or no such study: the same answer)
# Saves that change nothing the monitor shows.
QUIET_TRIAL_FIELDS = frozenset({"draft_files", "draft_saved_at"})
QUIET_PARTICIPANT_FIELDS = frozenset({"last_activity_at"})


def group_name(study_id: int) -> str:
    return f"monitor.{study_id}"


def _send(study_id: int | None) -> None:
    if study_id is None:
        return
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group_name(study_id), {"type": "monitor.changed"})
    except Exception:  # a push is best effort: the page polls as well
        logger.warning("monitor push for study %s failed", study_id, exc_info=True)


def notify_monitor(study_id: int) -> None:
    """Ping the study's monitors once the current transaction commits."""
    transaction.on_commit(lambda: _send(study_id))


def _study_of_participant(participant_id: int) -> int | None:
    return Participant.objects.filter(pk=participant_id).values_list("study_id", flat=True).first()


def _trial_saved(sender: Any, instance: Trial, update_fields: Any = None, **kwargs: Any) -> None:
    if update_fields and frozenset(update_fields) <= QUIET_TRIAL_FIELDS:
        return
    if Trial._meta.get_field("participant").is_cached(instance):
        notify_monitor(instance.participant.study_id)
    else:  # look the study up only after the commit, outside the writer's transaction
        participant_id = instance.participant_id
        transaction.on_commit(lambda: _send(_study_of_participant(participant_id)))


def _participant_saved(
    sender: Any, instance: Participant, update_fields: Any = None, **kwargs: Any
) -> None:
    if update_fields and frozenset(update_fields) <= QUIET_PARTICIPANT_FIELDS:
        return
    notify_monitor(instance.study_id)


def _evaluation_changed(sender: Any, evaluation_id: int, **kwargs: Any) -> None:
    """Grading started (first progress report) or finished. Sent after commit already."""
    if "done" in kwargs and kwargs["done"] > 1:
        return
    study_ids = set(
        Trial.objects.filter(evaluation_id=evaluation_id).values_list(
            "participant__study_id", flat=True
        )
    )
    for study_id in study_ids:
        _send(study_id)


def connect_monitor_signals() -> None:
    """Subscribe the monitor's pushes (idempotent)."""

    post_save.connect(_trial_saved, sender=Trial, dispatch_uid="study-monitor-trial")
    post_save.connect(
        _participant_saved, sender=Participant, dispatch_uid="study-monitor-participant"
    )
    evaluation_progress.connect(_evaluation_changed, dispatch_uid="study-monitor-progress")
    evaluation_finished.connect(_evaluation_changed, dispatch_uid="study-monitor-finished")


def _authorise(user: User | AnonymousUser, slug: str) -> int | None:
    if not user.is_authenticated or not user.is_staff:
        return None
    try:
        return get_study_for_researcher(user, slug).pk
    except Http404:
        return None


class MonitorConsumer(AsyncJsonWebsocketConsumer):
    """Pushes ``{"type": "changed"}`` to researchers of one study; sends nothing else."""

    group: str | None = None

    async def connect(self) -> None:
        slug = str(self.scope["url_route"]["kwargs"]["slug"])
        user = self.scope.get("user") or AnonymousUser()
        study_id = await database_sync_to_async(_authorise)(user, slug)
        await self.accept()
        if study_id is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = group_name(study_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_json({"type": "hello"})

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def monitor_changed(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "changed"})


websocket_urlpatterns = [
    path(
        "ws/studies/<slug:slug>/monitor/",
        MonitorConsumer.as_asgi(),
        name="ws-study-monitor",
    ),
]
