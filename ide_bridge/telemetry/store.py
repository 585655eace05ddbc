"""Event storage for telemetry ingestion: insert-if-absent for many trials at once, and the
acknowledged (contiguous) prefix.

Idempotence comes from the ``uniq_event_seq`` (trial, seq) constraint: a re-sent event is a
conflict, never a second row. On PostgreSQL a whole group of batches (several trials) is one
``INSERT ... SELECT FROM jsonb_array_elements(%s) ON CONFLICT DO NOTHING RETURNING``: what
``bulk_create(ignore_conflicts=True)`` does, without building and quoting thousands of model
rows in Python (about 5x the throughput, see docs/benchmarks.md), and RETURNING says exactly
which rows are new even when two tabs send the same events at once. On SQLite (the embedded
default) the ORM does it: read the seqs already stored, then ``bulk_create(
ignore_conflicts=True)``; SQLite runs one writer at a time, so that read stays true.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, Field, Max, Min, OuterRef

from ide_bridge.models import TrialEvent
from ide_bridge.telemetry.protocol import dumps_storable
from study.models import Participant

Row = list[Any]  # [trial_id, seq, client ts, kind, data]


def insert_absent(rows: list[Row], now: Any) -> set[tuple[int, int]]:
    """Store the rows whose (trial, seq) is not stored yet; returns those (trial, seq)."""
    if not rows:
        return set()
    rows, text = dumps_storable(rows)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_sql()["insert"], [now, text])
            return {(trial_id, seq) for trial_id, seq in cursor.fetchall()}
    by_trial: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        by_trial[row[0]].append(row)
    inserted: set[tuple[int, int]] = set()
    for trial_id, trial_rows in by_trial.items():
        seqs = [row[1] for row in trial_rows]
        stored = set(
            TrialEvent.objects.filter(
                trial_id=trial_id, seq__gte=min(seqs), seq__lte=max(seqs)
            ).values_list("seq", flat=True)
        )
        new: dict[int, Row] = {}
        for row in trial_rows:
            if row[1] not in stored:
                new.setdefault(row[1], row)
        TrialEvent.objects.bulk_create(
            [
                TrialEvent(trial_id=t, seq=s, client_ts=ts, kind=k, payload=d)
                for t, s, ts, k, d in new.values()
            ],
            ignore_conflicts=True,
        )
        inserted.update((trial_id, seq) for seq in new)
    return inserted


def participants_gone(participant_ids: set[int]) -> set[int]:
    """Those of the participants who withdrew or were excluded: their trials take no more
    events. On PostgreSQL the rows are locked FOR KEY SHARE for the rest of the transaction:
    that waits for a withdrawal in progress (it holds FOR UPDATE and deletes the telemetry),
    so no event can be stored after the deletion, yet ordinary updates are not blocked."""
    gone = (Participant.Stage.WITHDRAWN, Participant.Stage.EXCLUDED)
    if not participant_ids:
        return set()
    if connection.vendor != "postgresql":
        rows = Participant.objects.filter(pk__in=participant_ids, stage__in=gone)
        return set(rows.values_list("pk", flat=True))
    with connection.cursor() as cursor:
        cursor.execute(_sql()["participants"], [sorted(participant_ids)])
        return {pk for pk, stage in cursor.fetchall() if stage in gone}


def highest_contiguous_seq(trial_id: int, floor: int = 0) -> int:
    """The highest n such that events 1..n of the trial are all stored.

    ``floor`` is a value known to be contiguous already (events are append-only, so an earlier
    answer stays true); only rows above it are read. One aggregate answers the common case (no
    gap above the floor: count == max - floor); with a gap, an anti-join finds the end of the
    run that starts at ``floor + 1``. Both use the (trial, seq) unique index.
    """
    above = TrialEvent.objects.filter(trial_id=trial_id, seq__gt=floor)
    agg = above.aggregate(n=Count("*"), lo=Min("seq"), hi=Max("seq"))
    found = _prefix(floor, agg["n"], agg["lo"], agg["hi"])
    if found is not None:
        return found
    successor = TrialEvent.objects.filter(trial_id=trial_id, seq=OuterRef("seq") + 1)
    end = above.filter(~Exists(successor)).order_by("seq").values_list("seq", flat=True).first()
    return int(end) if end is not None else floor


def highest_contiguous_many(floors: dict[int, int]) -> dict[int, int]:
    """:func:`highest_contiguous_seq` for several trials (trial id -> floor), in one query on
    PostgreSQL for the common case."""
    if connection.vendor != "postgresql":
        return {t: highest_contiguous_seq(t, f) for t, f in floors.items()}
    _, text = dumps_storable([[t, f] for t, f in floors.items()])
    with connection.cursor() as cursor:
        cursor.execute(_sql()["stats"], [text])
        stats = {t: (n, lo, hi) for t, n, lo, hi in cursor.fetchall()}
    result = {}
    for trial_id, floor in floors.items():
        n, lo, hi = stats.get(trial_id, (0, None, None))
        found = _prefix(floor, n, lo, hi)
        result[trial_id] = found if found is not None else highest_contiguous_seq(trial_id, floor)
    return result


def _prefix(floor: int, n: int | None, lo: int | None, hi: int | None) -> int | None:
    """The answer from (count, min, max) of the rows above the floor; None when there is a gap
    somewhere above floor + 1 (then the run's end must be searched)."""
    if not n or lo != floor + 1:
        return floor
    assert hi is not None
    return int(hi) if hi - floor == n else None


@cache
def _sql() -> dict[str, str]:
    meta = TrialEvent._meta
    quote = connection.ops.quote_name
    columns = []
    for name in ("trial", "seq", "client_ts", "kind", "payload", "server_ts"):
        field = meta.get_field(name)
        assert isinstance(field, Field)
        assert field.column
        columns.append(quote(field.column))
    table, trial, seq = quote(meta.db_table), columns[0], columns[1]
    people = Participant._meta
    stage, pk = people.get_field("stage"), people.pk
    assert isinstance(stage, Field)
    assert stage.column
    assert pk is not None
    assert pk.column
    person, people_table = quote(pk.column), quote(people.db_table)
    # Table and column names come from the model, never from input; values are parameters.
    return {
        "participants": (
            f"SELECT {person}, {quote(stage.column)} FROM {people_table} "  # noqa: S608
            f"WHERE {person} = ANY(%s) ORDER BY {person} FOR KEY SHARE"
        ),
        "insert": (
            f"INSERT INTO {table} ({', '.join(columns)}) "  # noqa: S608
            "SELECT (r->>0)::bigint, (r->>1)::integer, (r->>2)::bigint, r->>3, r->4, %s "
            "FROM jsonb_array_elements(%s::jsonb) AS r "
            f"ON CONFLICT ({trial}, {seq}) DO NOTHING RETURNING {trial}, {seq}"
        ),
        # LATERAL: one index range scan per trial (a plain join would scan the whole table).
        "stats": (
            "SELECT f.trial, s.n, s.lo, s.hi FROM (SELECT (f->>0)::bigint AS trial, "  # noqa: S608
            "(f->>1)::integer AS floor FROM jsonb_array_elements(%s::jsonb) AS f) AS f "
            f"CROSS JOIN LATERAL (SELECT count(*) AS n, min(e.{seq}) AS lo, max(e.{seq}) AS hi "
            f"FROM {table} e WHERE e.{trial} = f.trial AND e.{seq} > f.floor) AS s"
        ),
    }
