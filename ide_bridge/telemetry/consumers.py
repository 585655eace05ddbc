"""The telemetry WebSocket: the workspace streams its event batches here and gets acks."""

from __future__ import annotations

import asyncio
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.http import Http404
from django.utils import timezone

from ide_bridge.http import loads
from ide_bridge.telemetry import services as telemetry
from ide_bridge.telemetry.protocol import MAX_BATCH_BYTES, BatchError
from study.access import get_own_trial
from study.models import Trial, User

# Close codes of the telemetry socket (the client stops reconnecting on these).
CLOSE_UNAUTHENTICATED = 4401  # not logged in
CLOSE_NOT_FOUND = 4404  # no such trial, or not this participant's ("missing" == "not yours")
CLOSE_NOT_ACCEPTING = 4409  # trial not started or closed beyond the grace; participation ended
# RFC 6455 "message too big", after an error message saying so; the client reconnects and sends
# smaller batches.
CLOSE_TOO_LARGE = 1009
TOO_LARGE = f"a message holds at most {MAX_BATCH_BYTES} bytes of UTF-8; send smaller batches"
# How often a long-lived connection re-reads whether its trial still accepts events.
RECHECK_SECONDS = 30.0
# A hello this soon after connecting is answered with the ack read while connecting (a
# reconnecting client says hello at once; this saves a query per reconnect).
HELLO_FRESH_SECONDS = 2.0


def _authorise(user: User | AnonymousUser, trial_id: int) -> tuple[Trial | None, int, int]:
    """(trial, 0, acknowledged seq) for the owner of an open trial, else (None, close code, 0)."""
    if not user.is_authenticated:
        return None, CLOSE_UNAUTHENTICATED, 0
    try:
        trial = get_own_trial(user, trial_id)
    except Http404:
        return None, CLOSE_NOT_FOUND, 0
    if not telemetry.accepts_events(trial, timezone.now()):
        return None, CLOSE_NOT_ACCEPTING, 0
    return trial, 0, telemetry.highest_contiguous_seq(trial.pk)


class GroupCommit:
    """Batches that arrive while the database is busy are stored together: one transaction and
    two statements for all of them (``telemetry.ingest_many``) instead of one each.

    At most ``WRITERS`` groups are written at once, each by its own long-lived thread that keeps
    its database connection between groups and closes it after ``IDLE_SECONDS`` without work
    (or after an error). That is deliberate: with ``CONN_MAX_AGE = 0`` (right for request
    threads under ASGI) a new PostgreSQL connection per group costs more CPU than the group
    itself, and at 100 batches/s it is what pushes ack latency past 100 ms on two cores. The
    threads are few and fixed, so their connections cannot leak.

    A consumer waits for its batch's ack before reading its next message, so one connection's
    batches are stored in order. The queue lives in one event loop; the threads are shared.
    """

    WRITERS = 4
    MAX_GROUP = 64  # batches per group (at most 32,000 events)
    IDLE_SECONDS = 30.0
    _executors: list[ThreadPoolExecutor] = []
    _instances: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupCommit] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        self.queue: list[tuple[telemetry.Job, asyncio.Future[telemetry.Ack | BatchError]]] = []
        self.busy: set[int] = set()  # writers draining; changed only between awaits
        self.idle_timers: dict[int, asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Task[None]] = set()  # references, so tasks are not collected

    @classmethod
    def for_loop(cls) -> GroupCommit:
        loop = asyncio.get_running_loop()
        if loop not in cls._instances:
            cls._instances[loop] = cls()
        return cls._instances[loop]

    @classmethod
    def executor(cls, writer: int) -> ThreadPoolExecutor:
        while len(cls._executors) <= writer:
            name = f"telemetry-writer-{len(cls._executors)}"
            cls._executors.append(ThreadPoolExecutor(1, thread_name_prefix=name))
        return cls._executors[writer]

    @classmethod
    def close_connections(cls) -> None:
        """Close the writers' database connections (idle timer; tests before the test database
        is dropped)."""
        for executor in cls._executors:
            executor.submit(_close_connection).result()

    async def ingest(self, trial: Trial, events: object, floor: int) -> telemetry.Ack:
        future: asyncio.Future[telemetry.Ack | BatchError] = (
            asyncio.get_running_loop().create_future()
        )
        self.queue.append(((trial, events, floor), future))
        free = [w for w in range(self.WRITERS) if w not in self.busy]
        if free:
            self.busy.add(free[0])
            task = asyncio.ensure_future(self._drain(free[0]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        result = await future
        if isinstance(result, BatchError):
            raise result
        return result

    async def _drain(self, writer: int) -> None:
        timer = self.idle_timers.pop(writer, None)
        if timer is not None:
            timer.cancel()
        try:
            while self.queue:
                group, self.queue = self.queue[: self.MAX_GROUP], self.queue[self.MAX_GROUP :]
                await self._write(writer, group)
        finally:
            self.busy.discard(writer)
            loop = asyncio.get_running_loop()
            self.idle_timers[writer] = loop.call_later(self.IDLE_SECONDS, self._idle, writer)

    def _idle(self, writer: int) -> None:
        if writer not in self.busy:
            self.idle_timers.pop(writer, None)
            self.executor(writer).submit(_close_connection)

    async def _write(
        self, writer: int, group: list[tuple[telemetry.Job, asyncio.Future[Any]]]
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(
                self.executor(writer), _write_group, [job for job, _ in group]
            )
        except Exception as exc:
            if len(group) == 1:
                _fail(group[0][1], exc)
            else:  # one batch may be poisonous: store the others one by one, fail only it
                for item in group:
                    await self._write(writer, [item])
            return
        for (_, future), result in zip(group, results, strict=True):
            if not future.done():
                future.set_result(result)


def _write_group(jobs: list[telemetry.Job]) -> list[telemetry.Ack | BatchError]:
    """In a writer thread: reuse its connection unless it is broken."""
    if connection.connection is not None and (
        connection.errors_occurred or not connection.is_usable()
    ):
        connection.close()
    try:
        return telemetry.ingest_many(jobs)
    except Exception:
        connection.close()
        raise


def _close_connection() -> None:
    connection.close()  # looked up here, in the writer thread: connections are per thread


def _fail(future: asyncio.Future[Any], exc: Exception) -> None:
    if not future.done():
        future.set_exception(exc)


def _still_open(trial: Trial) -> bool:
    trial.refresh_from_db(fields=["status", "started_at", "deadline", "ended_at"])
    return telemetry.accepts_events(trial, timezone.now())


class TelemetryConsumer(AsyncJsonWebsocketConsumer):
    """Batched telemetry of one trial (protocol: :mod:`ide_bridge.telemetry.protocol`).

    Only the participant who owns the trial may connect, while it accepts events (active, or
    closed less than ``telemetry.CLOSED_GRACE`` ago). Refusals accept and then close with a
    4xxx code, so the browser learns why and stops reconnecting. Batches are handled one at a
    time per connection, so acks arrive in order. No channel layer is needed.
    """

    trial: Trial | None = None
    acked = 0  # contiguous prefix known to be stored: the floor of the next ack query
    checked_at = connected_at = 0.0

    async def connect(self) -> None:
        trial_id = int(self.scope["url_route"]["kwargs"]["trial_id"])
        user = self.scope.get("user") or AnonymousUser()
        trial, code, acked = await database_sync_to_async(_authorise)(user, trial_id)
        await self.accept()
        if trial is None:
            await self.close(code=code)
            return
        self.trial, self.acked = trial, acked
        self.checked_at = self.connected_at = time.monotonic()

    async def receive(
        self, text_data: str | None = None, bytes_data: Any = None, **kw: Any
    ) -> None:
        if self.trial is None:
            return
        if text_data is None:
            await self._error("bad_message", "messages are JSON text")
        elif len(text_data) > MAX_BATCH_BYTES or len(text_data.encode()) > MAX_BATCH_BYTES:
            # Say why, then close with 1009 (message too big): the client sends smaller batches
            # after reconnecting instead of re-sending this one.
            await self._error("too_large", TOO_LARGE)
            self.trial = None  # nothing more on this connection
            await self.close(code=CLOSE_TOO_LARGE, reason=TOO_LARGE)
        else:
            try:  # the shared parser: no NaN or Infinity, and a nesting limit
                content = loads(text_data)
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
            if time.monotonic() - self.connected_at > HELLO_FRESH_SECONDS:
                self.acked = await database_sync_to_async(telemetry.highest_contiguous_seq)(
                    trial.pk, self.acked
                )
            await self.send_json(telemetry.Ack(self.acked, 0, 0, 0).as_message())
        elif kind == "batch":
            try:
                ack = await GroupCommit.for_loop().ingest(trial, content.get("events"), self.acked)
            except BatchError as exc:
                await self._error(exc.code, str(exc))
                if exc.code == "trial_closed":  # the participant withdrew or was excluded
                    await self.close(code=CLOSE_NOT_ACCEPTING)
                return
            self.acked = ack.highest_contiguous_seq
            await self.send_json(ack.as_message())
        else:
            await self._error("unknown_type", 'expected {"type": "hello"} or {"type": "batch"}')

    async def _error(self, code: str, message: str) -> None:
        await self.send_json({"type": "error", "code": code, "error": message, "seq": self.acked})
