"""What a ``benchmark_llm --jobs J`` worker process runs.

The processes are started with ``spawn``: each imports this module afresh, before Django is set
up, so it imports nothing of Django or the project at module level. The initializer sets Django
up on the parent's database (the parent passes its name: a test database under pytest), then
each task runs one unit through ``evaluation.llm.sweeps``.
"""

from __future__ import annotations

from typing import Any


def init(database_name: str) -> None:
    import django
    from django.conf import settings

    django.setup()
    settings.DATABASES["default"]["NAME"] = database_name
    from django.db import connections

    connections["default"].settings_dict["NAME"] = database_name


def run(run_id: int) -> Any:
    """One unit; returns a ``sweeps.UnitDone``. The connection is closed after each unit."""
    from django.db import connections

    from evaluation.llm.sweeps import run_one

    try:
        return run_one(run_id)
    finally:
        connections.close_all()
