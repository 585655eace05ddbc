"""The output of PostgreSQL ``COPY ... TO STDOUT`` statements, in order, two backends at a time.

A bulk table's fast path (``TableSpec.copy``) is one COPY per trial. The statements run on
``WORKERS`` extra connections in threads, each result spooled to a temporary file (in memory up
to ``SPOOL_BYTES``, then on disk) and handed over in statement order; at most ``WINDOW`` results
wait at a time, so memory stays flat. Inside a transaction (tests, an enclosing ``atomic``) other
connections would not see its rows, so the statements then run one by one on this connection.
"""

from __future__ import annotations

import queue
import tempfile
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from django.db import connection

WORKERS = 2
WINDOW = 4
SPOOL_BYTES = 8 << 20
READ_BYTES = 1 << 20
Statement = tuple[str, Sequence[Any]]


def copy_blocks(statements: Sequence[Statement]) -> Iterator[bytes]:
    """The concatenated CSV output of ``statements``, block by block, in order."""
    if connection.in_atomic_block or len(statements) < 2 or WORKERS < 2:
        yield from _serial(statements)
        return
    params = connection.get_connection_params()
    idle: queue.Queue[Any] = queue.Queue()
    opened = []
    try:
        for _ in range(WORKERS):
            raw = connection.get_new_connection(params)
            raw.autocommit = True
            opened.append(raw)
            idle.put(raw)
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="export-copy") as pool:
            todo = iter(statements)
            pending: deque[Future[IO[bytes]]] = deque()

            def submit() -> None:
                statement = next(todo, None)
                if statement is not None:
                    pending.append(pool.submit(_spool, idle, statement))

            for _ in range(WINDOW):
                submit()
            while pending:
                spool = pending.popleft().result()
                submit()
                with spool:
                    spool.seek(0)
                    while block := spool.read(READ_BYTES):
                        yield block
    finally:
        for raw in opened:
            raw.close()


def _serial(statements: Sequence[Statement]) -> Iterator[bytes]:
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        for statement, params in statements:
            with cursor.copy(statement, params) as copy:
                for block in copy:
                    yield bytes(block)


def _spool(idle: queue.Queue[Any], statement: Statement) -> IO[bytes]:
    raw = idle.get()
    try:
        spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
        with raw.cursor() as cursor, cursor.copy(statement[0], statement[1]) as copy:
            for block in copy:
                spool.write(block)
        return spool
    finally:
        idle.put(raw)
