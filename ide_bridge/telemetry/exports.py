"""Export tables of the IDE bridge: telemetry ``events``, per-trial ``aiusage`` and (internal
packages only) ``aitranscripts``. Registered with the study's export registry by
:func:`register_export_tables`, called from ``IdeBridgeConfig.ready()`` (study never imports
ide_bridge).

Events carry **whitelisted payload keys only** (:mod:`ide_bridge.telemetry.payloads`): numbers,
booleans and short lowercase tokens, plus sizes derived from text that never leaves the server
(code, run output, clipboard). Request ids, hashes, provider/model strings and extension ids are
internal only. Times are ``t_ms`` since the trial started: client timestamps moved onto the
server clock by the per-trial offset the researcher replay uses (the smallest observed server
receipt minus client time); an event whose client time falls outside the trial's span (e.g. a
rejected event with client time 0) gets its server receipt time instead, clamped to the span
(``TrialRef.span_ms``), so no ``t_ms`` reveals when a trial took place. On PostgreSQL the
public events table is written by COPY with the same rules compiled to SQL (1M events in
seconds; see bench/export_bench.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Avg, Count, Q, Sum

from ide_bridge.models import AIRequest, TrialEvent
from ide_bridge.telemetry.payloads import (
    CATEGORY,
    INTERNAL_ALL,
    PUBLIC_KEYS,
    SQL_CATEGORY,
    SQL_KIND,
    clean_kind,
    clean_payload,
    sql_from,
    sql_kinds_join,
    sql_payload,
)
from study.exports.registry import (
    Column,
    ExportContext,
    Row,
    TableSpec,
    Withheld,
    iso,
    register_table,
)


def clock_offsets(trial_ids: list[int]) -> dict[int, int]:
    """Per trial, min(server receipt ms - client ts): moves client times onto the server clock."""
    if not trial_ids:
        return {}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT trial_id, MIN(FLOOR(EXTRACT(EPOCH FROM server_ts) * 1000) - client_ts) "
                "FROM ide_bridge_trialevent WHERE trial_id = ANY(%s) GROUP BY trial_id",
                [trial_ids],
            )
            return {int(t): int(o) for t, o in cursor.fetchall()}
    offsets: dict[int, int] = {}
    rows = TrialEvent.objects.filter(trial_id__in=trial_ids).values_list(
        "trial_id", "client_ts", "server_ts"
    )
    for trial_id, client_ts, server_ts in rows.iterator(chunk_size=10_000):
        offset = int(server_ts.timestamp() * 1000) - client_ts
        offsets[trial_id] = min(offset, offsets.get(trial_id, offset))
    return offsets


EVENT_COLUMNS = (
    Column("participant_id", "string", "Pseudonymous participant id (see participants).", identifier_class="direct", deid_rule="hmac", source="Participant.internal_id"),  # noqa: E501
    Column("session_index", "integer", "Session of the trial.", source="Trial.session_index"),
    Column("period", "integer", "Period of the trial (joins taskattempts).", source="Trial.period"),
    Column("seq", "integer", "Event number within the trial (1-based, no gaps).", source="TrialEvent.seq"),  # noqa: E501
    Column("t_ms", "integer", "Milliseconds since the trial started (server clock; may be slightly negative for events sent while the page opened). Always within the trial's span widened by 10 minutes: an event whose client time lies outside it gets its server receipt time, clamped to that span.", units="ms", deid_rule="relative_time", missing="empty: the trial never started", source="TrialEvent.client_ts + clock offset - Trial.started_at (else TrialEvent.server_ts - Trial.started_at)"),  # noqa: E501
    Column("kind", "string", "Event type (the telemetry vocabulary of ide_bridge.protocol; 'rejected' = a malformed event the server tombstoned; 'invalid' = a kind outside the vocabulary).", source="TrialEvent.kind"),  # noqa: E501
    Column("category", "string", "Event group.", allowed=" | ".join(sorted({*CATEGORY.values(), "other"})), deid_rule="derived"),  # noqa: E501
    Column("payload", "object", "Whitelisted payload keys as JSON: numbers, booleans and short lowercase tokens, plus derived sizes (n_changes, chars_inserted, chars_deleted, code_length, output_length, n_extensions). Never code, output or clipboard text.", missing="empty: nothing releasable", deid_rule="whitelist", source="TrialEvent.payload"),  # noqa: E501
    Column("trial_id", "integer", "Internal trial id.", identifier_class="direct", tier="internal", source="Trial.id"),  # noqa: E501
    Column("client_ts_ms", "integer", "Client clock, ms since the Unix epoch.", identifier_class="quasi", tier="internal", units="ms", source="TrialEvent.client_ts"),  # noqa: E501
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Clock:
    """How one trial's events get ``t_ms``: the client time moved onto the server clock
    (``client_ts + shift``) while it lies within the trial's span; otherwise (a client clock
    at 0, or wildly off) the server's receipt time, clamped to the span. So no ``t_ms`` is
    further from the trial than ``SPAN_SLACK``, and none reveals when the trial took place."""

    shift: int
    origin: int
    low: int
    high: int

    def t_ms(self, client_ts: int, server_ts: datetime) -> int:
        t = client_ts + self.shift
        if self.low <= t <= self.high:
            return t
        return min(max(int(server_ts.timestamp() * 1000) - self.origin, self.low), self.high)

    def params(self) -> list[int]:
        """The values of ``SQL_T_MS``'s placeholders."""
        return [self.shift, self.low, self.high, self.shift, self.origin, self.low, self.high]


# ``_Clock.t_ms`` in SQL (NULL for a trial that never started: every parameter is NULL).
SQL_T_MS = (
    "CASE WHEN client_ts + %s BETWEEN %s AND %s THEN client_ts + %s ELSE LEAST(GREATEST("
    "FLOOR(EXTRACT(EPOCH FROM server_ts) * 1000)::bigint - %s, %s), %s) END"
)


def _clocks(ctx: ExportContext) -> dict[int, _Clock | None]:
    """Per trial, its ``_Clock`` (None if it never started)."""
    offsets = clock_offsets(list(ctx.trials))
    clocks: dict[int, _Clock | None] = {}
    for trial_id, ref in ctx.trials.items():
        origin, span = ref.origin_ms, ref.span_ms
        clocks[trial_id] = (
            _Clock(offsets.get(trial_id, 0) - origin, origin, *span)
            if origin is not None and span is not None
            else None
        )
    return clocks


def _stored_events(trial_id: int) -> Iterator[tuple[int, int, datetime, str, Any]]:
    """(seq, client_ts, server_ts, kind, payload) of a trial in seq order, streamed
    (server-side cursor)."""
    rows = (
        TrialEvent.objects.filter(trial_id=trial_id)
        .order_by("seq")
        .values_list("seq", "client_ts", "server_ts", "kind", "payload")
    )
    yield from rows.iterator(chunk_size=5000)


def event_rows(ctx: ExportContext) -> Iterator[Row]:
    rules = PUBLIC_KEYS if ctx.public else INTERNAL_ALL
    clocks = _clocks(ctx)
    for trial_id, ref in ctx.trials.items():
        pid, session, period, clock = (
            ref.participant.pseudonym, ref.session_index, ref.period, clocks[trial_id],
        )  # fmt: skip
        for seq, client_ts, server_ts, kind, payload in _stored_events(trial_id):
            yield (
                pid,
                session,
                period,
                seq,
                clock.t_ms(client_ts, server_ts) if clock is not None else None,
                *clean_kind(kind),
                clean_payload(kind, payload, rules),
                trial_id,
                client_ts,
            )


def event_copy(ctx: ExportContext) -> list[tuple[str, Sequence[Any]]] | None:
    """PostgreSQL fast path of the public profile: one ``COPY ... TO STDOUT (FORMAT csv)`` per
    trial producing exactly the public columns, payloads cleaned in SQL (same rules and text
    as :func:`event_rows`). None elsewhere: the rows path applies."""
    payload = sql_payload(PUBLIC_KEYS)
    if not ctx.public or connection.vendor != "postgresql" or payload is None:
        return None
    # Assembled from constants; values travel as parameters (merged client-side by psycopg).
    statement = (
        f"COPY (SELECT %s, %s, %s, seq, {SQL_T_MS}, {SQL_KIND}, {SQL_CATEGORY}, {payload} "  # noqa: S608
        f"FROM {sql_from()} {sql_kinds_join()} WHERE trial_id = %s ORDER BY seq) "
        "TO STDOUT WITH (FORMAT csv)"
    )
    clocks = _clocks(ctx)
    no_clock: list[int | None] = [None] * 7
    return [
        (
            statement,
            [
                r.participant.pseudonym,
                r.session_index,
                r.period,
                *(clock.params() if (clock := clocks[t]) is not None else no_clock),
                t,
            ],
        )
        for t, r in ctx.trials.items()
    ]


def _estimate_events(ctx: ExportContext) -> int:
    return TrialEvent.objects.filter(trial_id__in=list(ctx.trials)).count()


# --- AI usage -------------------------------------------------------------------------------------
def _count(**filters: Any) -> Count:
    return Count("id", filter=Q(**filters))


AI_COUNTS: dict[str, Any] = {
    "n_requests": Count("id"),
    **{f"n_{k}": _count(kind=k) for k in AIRequest.Kind.values},
    **{f"n_{s}": _count(status=s) for s in AIRequest.Status.values},
    **{f"n_{o}": _count(outcome=o) for o in AIRequest.Outcome.values},
    **{f"n_stage_{s}": _count(stage=s) for s in AIRequest.Stage.values},
    "prompt_tokens": Sum("prompt_tokens"),
    "completion_tokens": Sum("completion_tokens"),
    "n_usage_estimated": _count(usage_source=AIRequest.UsageSource.ESTIMATED),
    "mean_latency_ms": Avg("latency_ms", filter=Q(status=AIRequest.Status.OK)),
}
_AI_TEXT = {
    "n_requests": "AI requests in the trial (all kinds and outcomes).",
    **{f"n_{k}": f"Requests of kind {k}." for k in AIRequest.Kind.values},
    **{f"n_{s}": f"Requests with status {s}." for s in AIRequest.Status.values},
    **{f"n_{o}": f"Requests whose recorded outcome is {o}." for o in AIRequest.Outcome.values},
    **{
        f"n_stage_{s}": f"Requests labelled with the {s} stage (ELABORATION)."
        for s in AIRequest.Stage.values
    },
    "prompt_tokens": "Prompt tokens, summed.",
    "completion_tokens": "Completion tokens, summed.",
    "n_usage_estimated": "Requests whose token counts were estimated (the provider gave none).",
    "mean_latency_ms": "Mean latency of successful requests.",
}
AIUSAGE_COLUMNS = (
    Column("participant_id", "string", "Pseudonymous participant id (see participants).", identifier_class="direct", deid_rule="hmac", source="Participant.internal_id"),  # noqa: E501
    Column("session_index", "integer", "Session of the trial.", source="Trial.session_index"),
    Column("period", "integer", "Period of the trial (joins taskattempts).", source="Trial.period"),
    Column("condition", "string", "Condition letter.", source="Arm.condition"),
    Column("ai_mode", "string", "AI assistance of the condition.", source="Arm.ai_mode (snapshot)"),
    *(
        Column(name, "number" if name == "mean_latency_ms" else "integer", _AI_TEXT[name], units="ms" if name == "mean_latency_ms" else ("tokens" if name.endswith("tokens") else ""), missing="empty: no successful request" if name == "mean_latency_ms" else "", source="AIRequest")  # noqa: E501
        for name in AI_COUNTS
    ),
    Column("total_tokens", "integer", "Prompt + completion tokens.", units="tokens", source="AIRequest"),  # noqa: E501
)  # fmt: skip


def aiusage_rows(ctx: ExportContext) -> Iterator[Row]:
    names = list(AI_COUNTS)
    stats: dict[int, dict[str, Any]] = {
        row["trial_id"]: dict(row)
        for row in AIRequest.objects.filter(trial_id__in=list(ctx.trials))
        .values("trial_id")
        .annotate(**AI_COUNTS)
        .order_by()
    }
    for trial_id, ref in ctx.trials.items():
        row = stats.get(trial_id)
        if row is None and ref.ai_mode == "none":
            continue  # AI rows only: trials of AI arms, and any trial that made a request
        found: dict[str, Any] = row or {}
        values: dict[str, Any] = {n: found.get(n) or 0 for n in names}
        latency = found.get("mean_latency_ms")
        values["mean_latency_ms"] = round(float(latency), 1) if latency is not None else None
        total = values["prompt_tokens"] + values["completion_tokens"]
        yield (
            ref.participant.pseudonym, ref.session_index, ref.period, ref.condition, ref.ai_mode,
            *values.values(), total,
        )  # fmt: skip


# --- AI transcripts (internal only) -----------------------------------------------------------
TRANSCRIPT_COLUMNS = (
    Column("participant_id", "string", "Pseudonymous participant id (see participants).", identifier_class="direct", deid_rule="hmac", source="Participant.internal_id"),  # noqa: E501
    Column("period", "integer", "Period of the trial.", source="Trial.period"),
    Column("t_ms", "integer", "Milliseconds since the trial started.", units="ms", deid_rule="relative_time", source="AIRequest.created_at"),  # noqa: E501
    Column("kind", "string", "Request kind.", allowed=" | ".join(AIRequest.Kind.values), source="AIRequest.kind"),  # noqa: E501
    Column("stage", "string", "ELABORATION stage.", missing="empty: not given", source="AIRequest.stage"),  # noqa: E501
    Column("status", "string", "Outcome of the call.", allowed=" | ".join(AIRequest.Status.values), source="AIRequest.status"),  # noqa: E501
    Column("model", "string", "Model that answered.", source="AIRequest.model"),
    Column("prompt_tokens", "integer", "Prompt tokens.", units="tokens", source="AIRequest.prompt_tokens"),  # noqa: E501
    Column("completion_tokens", "integer", "Completion tokens.", units="tokens", source="AIRequest.completion_tokens"),  # noqa: E501
    Column("outcome", "string", "What the participant did with the reply.", missing="empty: unknown", source="AIRequest.outcome"),  # noqa: E501
    Column("messages", "array", "What was sent (chat messages or prefix/suffix), as JSON.", identifier_class="free_text", tier="internal", source="AIRequest.messages"),  # noqa: E501
    Column("reply", "string", "The assistant's reply.", identifier_class="free_text", tier="internal", source="AIRequest.reply"),  # noqa: E501
    Column("created_at_utc", "datetime", "When the request was made (UTC).", identifier_class="quasi", tier="internal", source="AIRequest.created_at"),  # noqa: E501
)  # fmt: skip


def transcript_rows(ctx: ExportContext) -> Iterator[Row]:
    for trial_id, ref in ctx.trials.items():
        requests = AIRequest.objects.filter(trial_id=trial_id).order_by("created_at", "pk")
        for r in requests.iterator(chunk_size=500):
            t_ms = (
                round((r.created_at - ref.started_at).total_seconds() * 1000)
                if ref.started_at
                else None
            )
            yield (
                ref.participant.pseudonym, ref.period, t_ms, r.kind, r.stage or None, r.status,
                r.model, r.prompt_tokens, r.completion_tokens, r.outcome or None,
                json.dumps(r.messages, ensure_ascii=False), r.reply, iso(r.created_at),
            )  # fmt: skip


FOREIGN = (("participant_id", "participants", "participant_id"),)


def register_export_tables() -> None:
    """Register ``events``, ``aiusage`` and ``aitranscripts`` (idempotent)."""
    register_table(
        TableSpec(
            name="events",
            title="Telemetry events",
            description="One row per editor event: relative time, kind and whitelisted payload.",
            columns=EVENT_COLUMNS,
            rows=event_rows,
            order=70,
            primary_key=("participant_id", "period", "seq"),
            foreign_keys=FOREIGN,
            estimate=_estimate_events,
            copy=event_copy,
            bulk=True,
            withheld=(
                Withheld("TrialEvent.payload: code, changes[].text, output, selections", "free_text", "drop", "code and run output never leave the server; sizes are derived"),  # noqa: E501
                Withheld("TrialEvent.payload: request_id, sha256, provider, model, extension ids", "direct", "drop", "public: unique codes and rare tools"),  # noqa: E501
                Withheld("TrialEvent.server_ts, client_ts", "quasi", "relative_time", "public: replaced by t_ms"),  # noqa: E501
            ),
        )
    )  # fmt: skip
    register_table(
        TableSpec(
            name="aiusage",
            title="AI usage per trial",
            description="One row per trial of an AI condition (or with any AI request): "
            "request counts by kind, status, outcome and stage, and token totals.",
            columns=AIUSAGE_COLUMNS,
            rows=aiusage_rows,
            order=80,
            primary_key=("participant_id", "period"),
            foreign_keys=FOREIGN,
            withheld=(
                Withheld("AIRequest.messages, reply", "free_text", "drop", "public: prompts and replies are in internal packages only"),  # noqa: E501
            ),
        )
    )  # fmt: skip
    register_table(
        TableSpec(
            name="aitranscripts",
            title="AI transcripts",
            description="Every AI request with its prompt and reply (internal packages only).",
            columns=TRANSCRIPT_COLUMNS,
            rows=transcript_rows,
            tier="internal",
            order=90,
            foreign_keys=FOREIGN,
        )
    )
