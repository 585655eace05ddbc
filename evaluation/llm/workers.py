"""What a ``benchmark_llm --jobs J`` worker process runs.

The processes are started with ``spawn``: each imports this module afresh, before Django is set
up, so it imports nothing of Django or the project at module level. The initializer sets Django
up on the parent's database (the parent passes its name: a test database under pytest), then
each task runs one unit through ``evaluation.llm.sweeps``.
"""

from __future__ import annotations

from typing import Any

_failed_setup = ""  # why this worker could not set up (its units then raise it to the parent)


def init(database_name: str) -> None:
    """Never raises: a pool whose initializer fails restarts its workers forever."""
    global _failed_setup
    try:
        import django
        from django.conf import settings

        django.setup()
        settings.DATABASES["default"]["NAME"] = database_name
        from django.db import connections

        connections["default"].settings_dict["NAME"] = database_name
    except Exception as exc:  # reported with the first unit
        _failed_setup = f"{type(exc).__name__}: {exc}"


def run(run_id: int) -> Any:
    """One unit; returns a ``sweeps.UnitDone``. The connection is closed after each unit."""
    if _failed_setup:
        raise RuntimeError(f"A worker process could not set Django up ({_failed_setup}).")
    from django.db import connections

    from evaluation.llm.sweeps import run_one

    try:
        return run_one(run_id)
    finally:
        connections.close_all()
