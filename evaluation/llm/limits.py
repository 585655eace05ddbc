"""Request-rate limits of model endpoints, per process.

``throttle(name, per_minute, sleep)`` spaces the requests of one endpoint at least
``60 / per_minute`` seconds apart: each request books the next free slot and sleeps until it.
The booking is a plain lock around two numbers, never held across an ``await``, so it works
from any thread and any event loop (``chat_sync`` runs a new loop per call). Processes do not
share it: a sweep run with ``--jobs J`` gives each process a J-th of the endpoint's rate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

_lock = threading.Lock()
_next_free: dict[str, float] = {}  # endpoint -> monotonic time of its next free slot


def book(name: str, per_minute: float) -> float:
    """Seconds to wait before the next request to ``name`` may go (0 without a limit)."""
    if per_minute <= 0:
        return 0.0
    interval = 60.0 / per_minute
    with _lock:
        now = time.monotonic()
        slot = max(now, _next_free.get(name, now))
        _next_free[name] = slot + interval
    return slot - now


async def throttle(name: str, per_minute: float, sleep: Callable[[float], Awaitable[Any]]) -> None:
    if (wait := book(name, per_minute)) > 0:
        await sleep(wait)
