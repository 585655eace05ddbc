"""Telemetry ingest benchmarks for docs/benchmarks.md (not a test; run by hand):

    .venv/bin/python bench/telemetry_ingest.py [--seconds 20] [--editors 100] [--conn-max-age 0]

Starts a real daphne server on 127.0.0.1 with the embedded defaults (no Redis: in-memory channel
layer, the web process serves WebSockets) against a fresh PostgreSQL database
``bench_telemetry`` (dropped and re-created with dropdb/createdb; ``BENCH_PG`` overrides the
server URL, default postgres://postgres@127.0.0.1:5432), and drives ``TelemetryConsumer`` with a
minimal asyncio WebSocket client (RFC 6455 text frames, masked) in this process:

1. Sustained ingest: a few editors stream 500-event batches with two batches in flight;
   events/s counted from acks, checked against rows in PostgreSQL. Target >= 10,000/s.
2. Ack latency: ``--editors`` editors x 10 events/s for ``--seconds``, flushing like
   static/js/telemetry.js (one batch a second, start times spread), and a stricter variant that
   sends every event at once (10 messages/s each). Target p99 < 100 ms.
3. Forced disconnects: every editor streams with a client-side buffer like telemetry.js, aborts
   its TCP connection twice mid-stream (batches in flight, acks unread), reconnects, says hello
   and re-sends everything unacked; then the server process is killed (SIGKILL) mid-stream and
   restarted. Every event carries a unique number: lost = sent numbers missing in the database,
   doubled = rows beyond one per number. Target 0 and 0.

Loopback only; every loop is bounded by a deadline. Prints the command and JSON results.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = "bench_telemetry"
DATABASE_URL = f"{PG}/{DB_NAME}"
os.environ.update(
    DATABASE_URL=DATABASE_URL, DJANGO_SETTINGS_MODULE="config.settings.dev", DJANGO_DEBUG="0"
)
TS0 = 1_760_000_000_000


# --- A minimal WebSocket client -------------------------------------------------------------------
class Closed(Exception):
    pass


def _mask(data: bytes, key: bytes) -> bytes:
    n = len(data)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(k, "little")).to_bytes(n, "little")


class WebSocket:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.acked = reader, writer, 0

    @classmethod
    async def connect(cls, host: str, port: int, path: str, cookie: str) -> WebSocket:
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://{host}:{port}\r\nCookie: sessionid={cookie}\r\n\r\n".encode()
        )
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            writer.transport.abort()
            raise Closed("handshake failed") from exc
        if not head.startswith(b"HTTP/1.1 101"):
            writer.transport.abort()
            raise Closed(head.split(b"\r\n")[0].decode())
        return cls(reader, writer)

    async def _frame(self, opcode: int, payload: bytes) -> None:
        n, mask = len(payload), os.urandom(4)
        if n < 126:
            head = bytes([0x80 | opcode, 0x80 | n])
        elif n < 65536:
            head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
        self.writer.write(head + mask + _mask(payload, mask))
        await self.writer.drain()

    async def send(self, text: str) -> None:
        await self._frame(0x1, text.encode())

    async def recv(self) -> str:
        while True:
            try:
                b0, b1 = await self.reader.readexactly(2)
                n = b1 & 0x7F
                if n >= 126:
                    n = int.from_bytes(await self.reader.readexactly(2 if n == 126 else 8), "big")
                mask = await self.reader.readexactly(4) if b1 & 0x80 else b""
                data = await self.reader.readexactly(n)
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                raise Closed("connection lost") from exc
            data = _mask(data, mask) if mask else data
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise Closed(f"closed {int.from_bytes(data[:2], 'big') if data else None}")
            if opcode == 0x9:
                await self._frame(0xA, data)
            elif opcode == 0x1:
                assert b0 & 0x80, "fragmented frames are not expected"
                return data.decode()

    async def close(self) -> None:
        try:
            await self._frame(0x8, (1000).to_bytes(2, "big"))
        except (ConnectionError, RuntimeError):
            pass
        self.abort()

    def abort(self) -> None:
        self.writer.transport.abort()


# --- Set-up -------------------------------------------------------------------------------------
def fresh_database() -> None:
    pg = shlex.split(f"-h {PG.split('@')[-1].split(':')[0]} -U postgres")
    subprocess.run(["dropdb", *pg, "--if-exists", "--force", DB_NAME], check=True)
    subprocess.run(["createdb", *pg, DB_NAME], check=True)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, check=True
    )


def make_editors(n: int) -> list[tuple[int, str]]:
    """``n`` active trials of new participants, each with a logged-in session: (trial id, cookie)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone

    from evaluation.instances import get_instance
    from evaluation.services import record_instance
    from study import participation
    from study.models import Arm, Trial, User
    from tests.study.factories_study import make_participant, make_study

    slug = "sde-binary-palindromes"
    study = make_study(
        templates=[(slug, "easy")], conditions="A", slug=f"bench-{os.urandom(4).hex()}"
    )
    Arm.objects.filter(study=study).update(ai_mode="inline_chat")
    arm = study.arms.get()
    instance = record_instance(get_instance(slug, 1))
    editors = []
    for _ in range(n):
        user = User.objects.create(username=f"bench-{os.urandom(6).hex()}", password="!")
        participant = make_participant(study, user=user)
        trial = Trial.objects.create(
            participant=participant, session_index=1, period=1, arm=arm,
            template_slug=slug, seed=1, instance=instance,
        )  # fmt: skip
        participation.start_trial(trial, timezone.now())
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        editors.append((trial.pk, str(session.session_key)))
    return editors


class Server:
    """daphne serving config.asgi:application on a free loopback port."""

    def __init__(self, conn_max_age: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.env = {**os.environ, "DJANGO_CONN_MAX_AGE": str(conn_max_age)}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        daphne = str(Path(sys.executable).with_name("daphne"))
        self.proc = subprocess.Popen(
            [daphne, "-v", "0", "-b", "127.0.0.1", "-p", str(self.port), "config.asgi:application"],
            cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("daphne did not start")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) of the server process so far, all threads."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
            self.proc = None


async def connect(port: int, trial_id: int, cookie: str) -> WebSocket:
    ws = await WebSocket.connect("127.0.0.1", port, f"/ws/trials/{trial_id}/events/", cookie)
    await ws.send(json.dumps({"type": "hello"}))
    ack = json.loads(await ws.recv())
    assert ack["type"] == "ack", ack
    ws.acked = ack["seq"]
    return ws


def cpu_use(server: Server, start: dict[str, float], elapsed: float) -> dict[str, float]:
    """Cores used by the server and by this client over the window (1.0 = one full core)."""
    return {
        "server_cores": round((server.cpu_seconds() - start["server"]) / elapsed, 2),
        "client_cores": round((time.process_time() - start["client"]) / elapsed, 2),
    }


async def connect_all(port: int, editors: list[tuple[int, str]]) -> list[WebSocket]:
    """Open every editor's socket, ten handshakes at a time (people do not all arrive in the
    same millisecond; daphne's listen backlog is 50)."""
    gate = asyncio.Semaphore(10)

    async def one(trial_id: int, cookie: str) -> WebSocket:
        async with gate:
            return await connect(port, trial_id, cookie)

    return list(await asyncio.gather(*(one(t, c) for t, c in editors)))


def make_event(seq: int, number: int, rng: random.Random) -> dict[str, Any]:
    """A realistic mix: mostly one-change edits, selections, a checkpoint every 50th event.
    ``number`` is unique per editor and lands in the payload, to count losses and doubles."""
    ts = TS0 + 100 * seq
    if seq % 50 == 0:
        code = "def solve(data):\n    return sorted(data)\n" * 40  # ~1.6 kB of code
        return {"seq": seq, "ts": ts, "kind": "checkpoint", "data": {"code": code, "versionId": number}}  # fmt: skip
    if rng.random() < 0.75:
        change = {"rangeOffset": rng.randint(0, 400), "rangeLength": rng.randint(0, 1), "text": "x"}
        data = {"changes": [change], "versionId": number, "isUndoing": False, "isRedoing": False, "isFlush": False}  # fmt: skip
        return {"seq": seq, "ts": ts, "kind": "edit", "data": data}
    data = {"offset": number, "length": 0, "line": 3, "column": 7, "selections": 1}
    return {"seq": seq, "ts": ts, "kind": "selection", "data": data}


def batch_text(events: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "batch", "events": events}, separators=(",", ":"))


# --- 1. Sustained ingest --------------------------------------------------------------------------
async def sustained(
    server: Server, editors: list[tuple[int, str]], seconds: float
) -> dict[str, Any]:
    port = server.port
    acked_total = 0
    measuring = {"start": 0.0, "acked": 0}
    rng = random.Random(1)
    # Pre-encoded events with the seq and ts left open: the client's CPU goes to the server.
    template = [
        json.dumps(make_event(s, s, rng), separators=(",", ":"))
        .replace(f'"seq":{s},', '"seq":%d,', 1)
        .replace(f'"ts":{TS0 + 100 * s},', '"ts":%d,', 1)
        for s in range(1, 501)
    ]

    async def editor(trial_id: int, cookie: str, stop_at: float) -> int:
        nonlocal acked_total
        ws = await connect(port, trial_id, cookie)
        next_seq, in_flight, last_ack = 1, 0, 0

        async def send_one() -> None:
            nonlocal next_seq, in_flight
            events = [e % (next_seq + i, TS0 + next_seq + i) for i, e in enumerate(template)]
            next_seq += len(events)
            in_flight += 1
            await ws.send('{"type":"batch","events":[' + ",".join(events) + "]}")

        await send_one()
        await send_one()  # two in flight: the server never waits for the client
        while in_flight:
            ack = json.loads(await ws.recv())
            in_flight -= 1
            acked_total += ack["seq"] - last_ack
            last_ack = ack["seq"]
            if time.monotonic() < stop_at:
                await send_one()
        await ws.close()
        return last_ack

    warmup = 3.0
    cpu: dict[str, float] = {}
    start = time.monotonic()
    stop_at = start + warmup + seconds

    async def meter() -> None:
        await asyncio.sleep(warmup)
        cpu.update(server=server.cpu_seconds(), client=time.process_time())
        measuring.update(start=time.monotonic(), acked=acked_total)

    tasks = [editor(t, c, stop_at) for t, c in editors]
    _, *per_editor = await asyncio.gather(meter(), *tasks)
    elapsed = time.monotonic() - measuring["start"]
    return {
        **cpu_use(server, cpu, elapsed),
        "editors": len(editors),
        "batch_events": 500,
        "in_flight_per_editor": 2,
        "measured_s": round(elapsed, 2),
        "events_acked_in_window": acked_total - measuring["acked"],
        "events_per_s": round((acked_total - measuring["acked"]) / elapsed),
        "acked_total": sum(per_editor),
    }


def count_rows(trial_ids: list[int]) -> int:
    from ide_bridge.models import TrialEvent

    return TrialEvent.objects.filter(trial_id__in=trial_ids).count()


# --- 2. Ack latency ---------------------------------------------------------------------------------
async def latency(
    server: Server, editors: list[tuple[int, str]], seconds: float, per_event: bool
) -> dict[str, Any]:
    port = server.port
    rate = 10  # events per second per editor
    interval = 1 / rate if per_event else 1.0
    per_message = 1 if per_event else rate
    samples: list[float] = []
    sockets = await connect_all(port, editors)
    begin = time.monotonic() + 0.5
    cpu = {"server": server.cpu_seconds(), "client": time.process_time()}

    async def editor(ws: WebSocket, index: int) -> None:
        rng = random.Random(index)
        seq, sent_at = 0, {}
        start = begin + interval * index / len(editors)  # the editors' phases are spread
        n_messages = int(seconds / interval)

        async def reader() -> None:
            for _ in range(n_messages):
                ack = json.loads(await ws.recv())
                samples.append(time.perf_counter() - sent_at.pop(ack["last"]))

        reading = asyncio.create_task(reader())
        for k in range(n_messages):
            await asyncio.sleep(max(0.0, start + k * interval - time.monotonic()))
            events = [make_event(seq + i + 1, seq + i + 1, rng) for i in range(per_message)]
            seq += per_message
            sent_at[seq] = time.perf_counter()
            await ws.send(batch_text(events))
        await asyncio.wait_for(reading, timeout=60)
        await ws.close()

    await asyncio.gather(*(editor(ws, i) for i, ws in enumerate(sockets)))
    elapsed = time.monotonic() - begin
    usage = cpu_use(server, cpu, elapsed)
    ms = sorted(1000 * s for s in samples)
    return {
        "editors": len(editors),
        "events_per_s_per_editor": rate,
        "events_per_message": per_message,
        "messages": len(ms),
        "seconds": round(elapsed, 1),
        "ack_ms_p50": round(statistics.median(ms), 1),
        "ack_ms_p90": round(ms[int(0.90 * len(ms)) - 1], 1),
        "ack_ms_p99": round(ms[int(0.99 * len(ms)) - 1], 1),
        "ack_ms_max": round(ms[-1], 1),
        **usage,
    }


# --- 3. Forced disconnects ----------------------------------------------------------------
async def disconnects(
    server: Server, editors: list[tuple[int, str]], seconds: float
) -> dict[str, Any]:
    """Editors with telemetry.js's discipline: events are recorded at 10/s whatever the
    connection does, numbered and buffered until acked; a flush every 0.5 s sends what this
    connection has not sent; after a reconnect, hello, then everything unacked again. Each
    editor aborts its own TCP connection twice (right after sending, ack unread), and the
    server is killed with SIGKILL once for everyone and restarted."""
    stats = {"aborts": 0, "reconnects": 0, "resent_events": 0, "server_kills": 0}
    made: dict[int, int] = {}
    gate = asyncio.Semaphore(10)  # handshakes at a time
    begin = time.monotonic()
    stop_at, deadline = begin + seconds, begin + seconds + 90

    async def editor(trial_id: int, cookie: str, index: int) -> None:
        rng = random.Random(1000 + index)
        aborts = sorted(begin + rng.uniform(0.1, 0.5) * seconds for _ in range(2))
        buffer: dict[int, dict[str, Any]] = {}  # seq -> unacked event (telemetry.js's buffer)
        state = {"acked": 0}
        ws: WebSocket | None = None
        reader: asyncio.Task[None] | None = None
        sent_upto, backoff = 0, 0.2

        async def record() -> None:
            for n in range(1, int(seconds * 10) + 1):
                await asyncio.sleep(max(0.0, begin + n / 10 - time.monotonic()))
                buffer[n] = make_event(n, n, rng)  # seq == unique number here
                made[trial_id] = n

        async def read(sock: WebSocket) -> None:
            while True:
                ack = json.loads(await sock.recv())
                if ack["type"] == "ack":
                    state["acked"] = max(state["acked"], ack["seq"])
                    for seq in [s for s in buffer if s <= state["acked"]]:
                        del buffer[seq]

        recording = asyncio.create_task(record())
        while time.monotonic() < deadline and not (recording.done() and not buffer):
            try:
                if ws is None:
                    async with gate:
                        ws = await asyncio.wait_for(connect(server.port, trial_id, cookie), 5)
                    state["acked"] = max(state["acked"], ws.acked)
                    for seq in [s for s in buffer if s <= state["acked"]]:
                        del buffer[seq]
                    stats["reconnects"] += 1
                    stats["resent_events"] += len(buffer)
                    reader = asyncio.create_task(read(ws))
                    sent_upto, backoff = 0, 0.2
                pending = [buffer[s] for s in sorted(buffer) if s > sent_upto]
                for start in range(0, len(pending), 500):
                    await ws.send(batch_text(pending[start : start + 500]))
                if pending:
                    sent_upto = pending[-1]["seq"]
                if aborts and time.monotonic() > aborts[0] and pending:
                    aborts.pop(0)
                    stats["aborts"] += 1
                    raise Closed("aborted mid-stream")  # the batch just sent is in flight
                if reader is not None and reader.done():
                    reader.result()  # raises Closed when the server went away
            except (Closed, OSError, TimeoutError, AssertionError, ValueError):
                if reader is not None:
                    reader.cancel()
                if ws is not None:
                    ws.abort()
                ws, reader = None, None
                await asyncio.sleep(backoff * (0.5 + random.random()))
                backoff = min(2.0, backoff * 2)
                continue
            await asyncio.sleep(0.5)
        if reader is not None:
            reader.cancel()
        if ws is not None:
            await ws.close()
        assert not buffer, f"editor of trial {trial_id} could not flush {len(buffer)} events"

    async def killer() -> None:
        await asyncio.sleep(max(0.0, begin + 0.6 * seconds - time.monotonic()))
        server.kill()
        stats["server_kills"] += 1
        await asyncio.sleep(1.0)
        await asyncio.to_thread(server.start)

    await asyncio.gather(killer(), *(editor(t, c, i) for i, (t, c) in enumerate(editors)))
    return {**stats, "made": made}


def count_losses(made: dict[int, int]) -> dict[str, int]:
    """Each event's unique number is in its payload (versionId, or offset for selections):
    lost = numbers made but not stored, doubled = rows beyond one per number, misplaced = rows
    whose number is not their seq."""
    from ide_bridge.models import TrialEvent

    lost = doubled = stored = misplaced = 0
    for trial_id, n in made.items():
        rows = TrialEvent.objects.filter(trial_id=trial_id).values_list("seq", "payload")
        numbers = {seq: p.get("versionId", p.get("offset")) for seq, p in rows}
        values = list(numbers.values())
        stored += len(values)
        lost += len(set(range(1, n + 1)) - set(values))
        doubled += len(values) - len(set(values))
        misplaced += sum(1 for seq, number in numbers.items() if seq != number)
    return {
        "events_made": sum(made.values()),
        "rows_stored": stored,
        "lost": lost,
        "doubled": doubled,
        "misplaced": misplaced,
    }


# --- Main ---------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--editors", type=int, default=100)
    parser.add_argument("--ingest-editors", type=int, default=4)
    parser.add_argument("--conn-max-age", type=int, default=0, help="DJANGO_CONN_MAX_AGE")
    parser.add_argument(
        "--per-event", action="store_true", help="also: every event in its own message"
    )
    parser.add_argument("--only", choices=["sustained", "latency", "disconnects"])
    args = parser.parse_args()

    fresh_database()
    import django

    django.setup()
    server = Server(args.conn_max_age)
    server.start()
    results: dict[str, Any] = {
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "database": "PostgreSQL " + DATABASE_URL.rsplit("@", 1)[-1],
        "server": "daphne config.asgi:application, config.settings.dev with DJANGO_DEBUG=0, "
        f"no Redis (in-memory channel layer), DJANGO_CONN_MAX_AGE={args.conn_max_age}",
        "cpus": os.cpu_count(),
        "loadavg_before": os.getloadavg(),
    }
    try:
        if args.only in (None, "sustained"):
            editors = make_editors(args.ingest_editors)
            result = asyncio.run(sustained(server, editors, args.seconds))
            result["rows_in_db"] = count_rows([t for t, _ in editors])
            result["rows_match_acks"] = result["rows_in_db"] == result["acked_total"]
            results["sustained"] = result
        if args.only in (None, "latency"):
            results["latency_batched"] = asyncio.run(
                latency(server, make_editors(args.editors), args.seconds, per_event=False)
            )
            if args.per_event:
                results["latency_per_event"] = asyncio.run(
                    latency(server, make_editors(args.editors), args.seconds, per_event=True)
                )
        if args.only in (None, "disconnects"):
            result = asyncio.run(disconnects(server, make_editors(args.editors), args.seconds))
            made = result.pop("made")
            results["disconnects"] = {**result, **count_losses(made)}
    finally:
        server.stop()
    results["loadavg_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
