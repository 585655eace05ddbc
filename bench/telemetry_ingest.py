"""Telemetry ingest benchmarks for docs/benchmarks.md (not a test; run by hand):

    .venv/bin/python bench/telemetry_ingest.py [--seconds 20] [--editors 100] [--only NAME]

Starts a real daphne server on 127.0.0.1 with the embedded defaults (config.settings.dev with
DJANGO_DEBUG=0, no Redis: in-memory channel layer, the web process serves WebSockets) against a
fresh PostgreSQL database ``bench_telemetry`` (dropped and re-created with dropdb/createdb;
``BENCH_PG`` overrides postgres://postgres@127.0.0.1:5432), and drives ``TelemetryConsumer``
with the ``websockets`` asyncio client (a dev dependency) in this process:

1. latency: ``--editors`` editors x 10 events/s for ``--seconds``, flushing like
   static/js/telemetry.js (one batch a second; the editors' phases spread); send-to-ack
   latency of every batch. Target p99 < 100 ms.
2. disconnects (twice ``--seconds``, as reconnecting everyone takes a while): ``--editors``
   editors record 10 events/s whatever the connection does and keep them buffered until acked
   (telemetry.js's discipline); each aborts its own TCP connection twice right after sending
   (ack unread), then the server is killed with SIGKILL and restarted; after every reconnect:
   hello, then everything unacked again. Each event carries a unique number: lost = numbers
   made but not stored, doubled = rows beyond one per number. Target 0 and 0.
3. sustained: a few editors stream 500-event batches, two batches in flight each; events/s
   from acks over the window, checked against the rows in PostgreSQL. Target >= 10,000/s.

Loopback only; every loop has a deadline. Prints the command and the results as JSON, with the
load average (the machine may be shared) and the cores used by the server and the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DATABASE_URL = f"{PG}/bench_telemetry"
os.environ.update(
    DATABASE_URL=DATABASE_URL, DJANGO_SETTINGS_MODULE="config.settings.dev", DJANGO_DEBUG="0"
)
TS0 = 1_760_000_000_000

from telemetry_setup import (  # noqa: E402 - the bench folder is on sys.path; after the environment
    Closed,
    Editors,
    Server,
    WebSocket,
    fresh_database,
    make_editors,
)


def make_event(seq: int, number: int, rng: random.Random) -> dict[str, Any]:
    """Mostly one-change edits, some selections, a ~1.6 kB checkpoint every 50th event.
    ``number`` (unique per editor) is in the payload, to count losses and doubles."""
    ts = TS0 + 100 * seq
    if seq % 50 == 0:
        code = "def solve(data):\n    return sorted(data)\n" * 40
        data: dict[str, Any] = {"code": code, "versionId": number}
        return {"seq": seq, "ts": ts, "kind": "checkpoint", "data": data}
    if rng.random() < 0.75:
        change = {"rangeOffset": rng.randint(0, 400), "rangeLength": rng.randint(0, 1), "text": "x"}
        data = {"changes": [change], "versionId": number, "isUndoing": False, "isRedoing": False}
        return {"seq": seq, "ts": ts, "kind": "edit", "data": data}
    data = {"offset": number, "length": 0, "line": 3, "column": 7, "selections": 1}
    return {"seq": seq, "ts": ts, "kind": "selection", "data": data}


def batch_text(events: list[Any]) -> str:
    return json.dumps({"type": "batch", "events": events}, separators=(",", ":"))


def cores(server: Server, start: tuple[float, float], elapsed: float) -> dict[str, float]:
    return {
        "server_cores": round((server.cpu_seconds() - start[0]) / elapsed, 2),
        "client_cores": round((time.process_time() - start[1]) / elapsed, 2),
    }


async def connect_all(port: int, editors: Editors) -> list[WebSocket]:
    gate = asyncio.Semaphore(10)  # ten handshakes at a time: people do not all arrive at once

    async def one(trial_id: int, cookie: str) -> WebSocket:
        async with gate:
            return await WebSocket.connect(port, trial_id, cookie)

    return list(await asyncio.gather(*(one(t, c) for t, c in editors)))


# --- 1. Sustained ingest ----------------------------------------------------------------------
async def sustained(server: Server, editors: Editors, seconds: float) -> dict[str, Any]:
    rng = random.Random(1)
    # Pre-encoded events with seq and ts left open, so the client's CPU goes to the server.
    template = [
        json.dumps(make_event(s, s, rng), separators=(",", ":"))
        .replace(f'"seq":{s},', '"seq":%d,', 1)
        .replace(f'"ts":{TS0 + 100 * s},', '"ts":%d,', 1)
        for s in range(1, 501)
    ]
    sockets = await connect_all(server.port, editors)
    window: dict[str, Any] = {}
    acked = [0] * len(sockets)
    start = time.monotonic()
    t0, t1 = start + 3, start + 3 + seconds  # 3 s warm-up, then the measured window

    async def editor(i: int, ws: WebSocket) -> None:
        next_seq, in_flight = 1, 0

        async def send() -> None:
            nonlocal next_seq, in_flight
            events = [e % (next_seq + k, TS0 + next_seq + k) for k, e in enumerate(template)]
            next_seq, in_flight = next_seq + len(events), in_flight + 1
            await ws.send('{"type":"batch","events":[' + ",".join(events) + "]}")

        await send()
        await send()  # two in flight: the server never waits for this client
        while in_flight:
            acked[i] = json.loads(await ws.recv())["seq"]
            in_flight -= 1
            if time.monotonic() < t1:
                await send()
        await ws.close()

    async def meter() -> None:
        await asyncio.sleep(t0 - time.monotonic())
        window.update(acked=sum(acked), cpu=(server.cpu_seconds(), time.process_time()))
        await asyncio.sleep(t1 - time.monotonic())
        window.update(acked_end=sum(acked), usage=cores(server, window["cpu"], seconds))

    await asyncio.gather(meter(), *(editor(i, ws) for i, ws in enumerate(sockets)))
    in_window = window["acked_end"] - window["acked"]
    return {
        "editors": len(editors),
        "events_per_batch": 500,
        "window_s": seconds,
        "events_acked_in_window": in_window,
        "events_per_s": round(in_window / seconds),
        **window["usage"],
        "acked_total": sum(acked),
    }


# --- 2. Ack latency ---------------------------------------------------------------------------
async def latency(server: Server, editors: Editors, seconds: float) -> dict[str, Any]:
    samples: list[float] = []
    sockets = await connect_all(server.port, editors)
    begin = time.monotonic() + 0.5
    cpu = (server.cpu_seconds(), time.process_time())

    async def editor(index: int, ws: WebSocket) -> None:
        rng, sent_at = random.Random(index), dict[int, float]()
        start = begin + index / len(sockets)  # phases spread over the second

        async def reader() -> None:
            for _ in range(int(seconds)):
                ack = json.loads(await ws.recv())
                samples.append(time.perf_counter() - sent_at.pop(ack["last"]))

        reading = asyncio.create_task(reader())
        for k in range(int(seconds)):  # one flush a second with that second's 10 events
            await asyncio.sleep(max(0.0, start + k - time.monotonic()))
            events = [make_event(10 * k + i, 10 * k + i, rng) for i in range(1, 11)]
            sent_at[10 * k + 10] = time.perf_counter()
            await ws.send(batch_text(events))
        await asyncio.wait_for(reading, timeout=60)
        await ws.close()

    await asyncio.gather(*(editor(i, ws) for i, ws in enumerate(sockets)))
    elapsed = time.monotonic() - begin
    ms = sorted(1000 * s for s in samples)
    return {
        "editors": len(editors),
        "events_per_s_per_editor": 10,
        "batches": len(ms),
        "seconds": round(elapsed, 1),
        "ack_ms_p50": round(statistics.median(ms), 1),
        "ack_ms_p90": round(ms[int(0.90 * len(ms)) - 1], 1),
        "ack_ms_p99": round(ms[int(0.99 * len(ms)) - 1], 1),
        "ack_ms_max": round(ms[-1], 1),
        **cores(server, cpu, elapsed),
    }


# --- 3. Forced disconnects --------------------------------------------------------------------
async def disconnects(server: Server, editors: Editors, seconds: float) -> dict[str, Any]:
    stats: dict[str, Any] = {"aborts": 0, "connections": 0, "resent_events": 0}
    made: dict[int, int] = {}
    connected: set[int] = set()
    gate = asyncio.Semaphore(10)
    begin = time.monotonic()
    deadline = begin + seconds + 90

    async def editor(trial_id: int, cookie: str, index: int) -> None:
        rng = random.Random(1000 + index)
        aborts = sorted(begin + rng.uniform(0.1, 0.35) * seconds for _ in range(2))
        buffer: dict[int, dict[str, Any]] = {}  # seq -> event not acked yet
        acked, sent_upto, backoff = [0], 0, 0.2
        ws: WebSocket | None = None
        reader: asyncio.Task[None] | None = None

        async def record() -> None:
            for n in range(1, int(seconds * 10) + 1):
                await asyncio.sleep(max(0.0, begin + n / 10 - time.monotonic()))
                buffer[n] = make_event(n, n, rng)
                made[trial_id] = n

        def drop_acked(seq: int) -> None:
            acked[0] = max(acked[0], seq)
            for s in [s for s in buffer if s <= acked[0]]:
                del buffer[s]

        async def read(sock: WebSocket) -> None:
            while True:
                ack = json.loads(await sock.recv())
                if ack["type"] == "ack":
                    drop_acked(ack["seq"])

        recording = asyncio.create_task(record())
        while time.monotonic() < deadline and not (recording.done() and not buffer):
            try:
                if ws is None:
                    async with gate:
                        opening = WebSocket.connect(server.port, trial_id, cookie)
                        ws = await asyncio.wait_for(opening, 5)
                    drop_acked(ws.acked)
                    stats["connections"] += 1
                    stats["resent_events"] += len(buffer)
                    connected.add(trial_id)
                    reader, sent_upto, backoff = asyncio.create_task(read(ws)), 0, 0.2
                pending = [buffer[s] for s in sorted(buffer) if s > sent_upto]
                for i in range(0, len(pending), 500):
                    await ws.send(batch_text(pending[i : i + 500]))
                sent_upto = pending[-1]["seq"] if pending else sent_upto
                if aborts and time.monotonic() > aborts[0] and pending:
                    aborts.pop(0)
                    stats["aborts"] += 1
                    raise Closed("aborted")  # the batch just sent is in flight, its ack unread
                if reader is not None and reader.done():
                    reader.result()  # raises Closed when the server went away
            except (Closed, OSError, TimeoutError, ValueError) as exc:
                why = "aborted" if str(exc) == "aborted" else type(exc).__name__
                stats[f"lost:{why}"] = stats.get(f"lost:{why}", 0) + 1
                connected.discard(trial_id)
                if reader is not None:
                    reader.cancel()
                if ws is not None:
                    ws.abort()
                ws, reader = None, None
                await asyncio.sleep(backoff * (0.5 + random.random()))
                backoff = min(2.0, backoff * 2)
                continue
            await asyncio.sleep(0.5)  # telemetry.js flushes every second; twice as often here
        if reader is not None:
            reader.cancel()
        if ws is not None:
            await ws.close()
        assert not buffer, f"trial {trial_id}: {len(buffer)} events could not be flushed"

    async def killer() -> None:
        # Once every editor has reconnected after its aborts (by 85 % of the stream at most).
        await asyncio.sleep(max(0.0, begin + 0.6 * seconds - time.monotonic()))
        while len(connected) < len(editors) and time.monotonic() < begin + 0.85 * seconds:
            await asyncio.sleep(0.1)
        stats.update(killed_at_s=round(time.monotonic() - begin, 1), connected=len(connected))
        server.kill()
        await asyncio.sleep(1.0)
        await asyncio.to_thread(server.start)

    await asyncio.gather(killer(), *(editor(t, c, i) for i, (t, c) in enumerate(editors)))
    return {**stats, "made": made}


def count_losses(made: dict[int, int]) -> dict[str, int]:
    """lost = numbers made but not stored, doubled = rows beyond one per number, misplaced =
    rows whose number (versionId, or offset for selections) is not their seq."""
    from ide_bridge.models import TrialEvent

    lost = doubled = stored = misplaced = 0
    for trial_id, n in made.items():
        rows = TrialEvent.objects.filter(trial_id=trial_id).values_list("seq", "payload")
        numbers = {seq: p.get("versionId", p.get("offset")) for seq, p in rows}
        stored += len(numbers)
        lost += len(set(range(1, n + 1)) - set(numbers.values()))
        doubled += len(numbers) - len(set(numbers.values()))
        misplaced += sum(1 for seq, number in numbers.items() if seq != number)
    made_total = sum(made.values())
    return {"events_made": made_total, "rows_stored": stored, "lost": lost, "doubled": doubled,
            "misplaced": misplaced}  # fmt: skip


# --- Main -------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--editors", type=int, default=100, help="for latency and disconnects")
    parser.add_argument("--ingest-editors", type=int, default=4, help="for sustained")
    parser.add_argument("--only", choices=["sustained", "latency", "disconnects"])
    args = parser.parse_args()

    fresh_database()
    import django
    from django.conf import settings

    django.setup()
    server = Server()
    server.start()
    results: dict[str, Any] = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "database": "PostgreSQL " + DATABASE_URL.rsplit("@", 1)[-1],
        "server": "daphne, config.settings.dev, DJANGO_DEBUG=0, no Redis, "
        f"CONN_MAX_AGE={settings.DATABASES['default']['CONN_MAX_AGE']}",
        "cpus": os.cpu_count(),
        "loadavg_before": os.getloadavg(),
    }
    try:
        # Latency first: right after the sustained burst (hundreds of thousands of rows)
        # PostgreSQL's checkpoint and autovacuum would be measured too.
        if args.only in (None, "latency"):
            results["latency"] = asyncio.run(
                latency(server, make_editors(args.editors), args.seconds)
            )
        if args.only in (None, "disconnects"):
            result = asyncio.run(disconnects(server, make_editors(args.editors), 2 * args.seconds))
            made = result.pop("made")
            results["disconnects"] = {**result, **count_losses(made)}
        if args.only in (None, "sustained"):
            editors = make_editors(args.ingest_editors)
            result = asyncio.run(sustained(server, editors, args.seconds))
            from ide_bridge.models import TrialEvent

            rows = TrialEvent.objects.filter(trial_id__in=[t for t, _ in editors]).count()
            results["sustained"] = {**result, "rows_in_db": rows}
    finally:
        server.kill(signal.SIGTERM)
    results["loadavg_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
