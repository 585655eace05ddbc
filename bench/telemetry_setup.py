"""What the telemetry benchmark (``telemetry_ingest.py``) runs against: a fresh PostgreSQL
database, editors with logged-in sessions and active trials, a daphne server, and each editor's
telemetry socket (the ``websockets`` client). Django must be set up before ``make_editors``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.typing import Origin

ROOT = Path(__file__).resolve().parents[1]
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
ASGI_APP = "config.asgi:application"
Editors = list[tuple[int, str]]  # (trial id, session cookie)


class Closed(Exception):
    pass


class WebSocket:
    """One editor's telemetry socket: the ``websockets`` client plus the seq acked for hello.

    The library does the protocol (handshake, masking, control frames); this wrapper only turns
    its ConnectionClosed into ``Closed`` and can drop the TCP connection without a close frame.
    """

    def __init__(self, conn: ClientConnection, acked: int) -> None:
        self.conn, self.acked = conn, acked

    @classmethod
    async def connect(cls, port: int, trial_id: int, cookie: str) -> WebSocket:
        try:
            conn = await connect(
                f"ws://127.0.0.1:{port}/ws/trials/{trial_id}/events/",
                origin=Origin(f"http://127.0.0.1:{port}"),
                additional_headers={"Cookie": f"sessionid={cookie}"},
                compression=None,  # daphne accepts no permessage-deflate anyway
                ping_interval=None,  # answer the server's pings, send none
                open_timeout=30,
                proxy=None,  # loopback only, whatever the environment says
            )
        except InvalidStatus as exc:
            raise Closed(f"HTTP {exc.response.status_code}") from exc
        except InvalidHandshake as exc:  # the TCP connect's OSError goes to the caller
            raise Closed("handshake failed") from exc
        ws = cls(conn, 0)
        await ws.send('{"type":"hello"}')
        ack = json.loads(await ws.recv())
        if ack.get("type") != "ack":
            raise Closed(f"no ack for hello: {ack}")
        ws.acked = ack["seq"]
        return ws

    async def send(self, text: str) -> None:
        try:
            await self.conn.send(text)
        except ConnectionClosed as exc:
            raise Closed(f"closed {exc.rcvd.code if exc.rcvd else None}") from exc

    async def recv(self) -> str:
        try:
            message = await self.conn.recv()
        except ConnectionClosed as exc:
            raise Closed(f"closed {exc.rcvd.code if exc.rcvd else None}") from exc
        return message if isinstance(message, str) else message.decode()

    async def close(self) -> None:
        await self.conn.close()

    def abort(self) -> None:
        """Drop the TCP connection at once, as a lost network would (no close frame)."""
        self.conn.transport.abort()


def fresh_database() -> None:
    host = ["-h", PG.split("@")[-1].split(":")[0], "-U", "postgres"]
    drop = ["/usr/bin/dropdb", *host, "--if-exists", "--force", "bench_telemetry"]
    subprocess.run(drop, check=True)  # noqa: S603
    subprocess.run(["/usr/bin/createdb", *host, "bench_telemetry"], check=True)  # noqa: S603
    migrate = [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, check=True)  # noqa: S603


def make_editors(n: int) -> Editors:
    """``n`` active trials of new participants, each with a logged-in session."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone

    from evaluation.instances import get_instance
    from evaluation.services import record_instance
    from study.models import Arm, Trial, User
    from study.trials.services import start_trial
    from tests.study.factories_study import make_participant, make_study

    slug = "sde-binary-palindromes"
    study = make_study(templates=[(slug, "easy")], conditions="A", slug=f"b-{os.urandom(4).hex()}")
    Arm.objects.filter(study=study).update(ai_mode="inline_chat")
    arm, instance = study.arms.get(), record_instance(get_instance(slug, 1))
    editors = []
    for _ in range(n):
        user = User.objects.create(username=f"bench-{os.urandom(6).hex()}")
        trial = Trial.objects.create(
            participant=make_participant(study, user=user), session_index=1, period=1, arm=arm,
            template_slug=slug, seed=1, instance=instance,
        )  # fmt: skip
        start_trial(trial, timezone.now())
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        editors.append((trial.pk, str(session.session_key)))
    return editors


class Server:
    """daphne serving config.asgi:application on a free loopback port."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        daphne = str(Path(sys.executable).with_name("daphne"))
        argv = [daphne, "-v", "0", "-b", "127.0.0.1", "-p", str(self.port), ASGI_APP]
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL)  # noqa: S603
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            time.sleep(0.2)
        raise RuntimeError("daphne did not start")

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # all threads

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
            self.proc = None
