"""The table registry: what an export package may contain, column by column.

Every data file of a package comes from one registered :class:`TableSpec`. A spec lists its
columns with their codebook metadata (type, description, allowed values, identifier class,
export tier, de-identification rule) and a ``rows(context)`` generator that streams tuples in
column order. The codebook, ``datapackage.json`` and the de-identification report are generated
from these specs, so a column cannot reach a file without a codebook row.

Apps register their own tables: the study's are in :mod:`study.exports.tables` (loaded on first
use), ``ide_bridge`` registers ``events`` and ``aiusage`` from its ``AppConfig.ready()`` via
``ide_bridge.telemetry.exports.register_export_tables``. ``study`` never imports ``ide_bridge``.

Registration enforces the tier rules, so a mistake fails at start-up rather than in a release:

- a *public* column holding a direct identifier must be pseudonymised (``deid_rule="hmac"``);
- a *public* quasi-identifier must be generalised (``generalize:<scheme>``);
- free text and sensitive data are never public;
- vault data is never registered at all: it never leaves the server.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from study.models import Study

IdentifierClass = Literal["direct", "quasi", "sensitive", "free_text", "none"]
Tier = Literal["internal", "public"]
FieldType = Literal["string", "integer", "number", "boolean", "datetime", "object", "array"]

IDENTIFIER_CLASSES: tuple[str, ...] = ("direct", "quasi", "sensitive", "free_text", "none")
TIERS: tuple[str, ...] = ("internal", "public")
FIELD_TYPES: tuple[str, ...] = (
    "string", "integer", "number", "boolean", "datetime", "object", "array",
)  # fmt: skip
_RULE = re.compile(
    r"^(drop|hmac|generalize:[a-z0-9_]+|relative_time|redact|keep|whitelist|derived)$"
)
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# How far a relative time may lie before a trial's start or after its end: clock offsets, and
# events flushed after the trial closed (the IDE bridge accepts them for as long as this).
SPAN_SLACK = timedelta(minutes=10)
_TABLE = re.compile(r"^[a-z][a-z0-9]*$")  # Psych-DS keyword values are alphanumeric


@dataclass(frozen=True)
class Column:
    """One column of a data file and its codebook row."""

    name: str
    type: FieldType
    description: str
    allowed: str = ""  # "a | b | c", "0-100", or a pointer such as "see items table"
    identifier_class: IdentifierClass = "none"
    tier: Tier = "public"  # the widest tier that may see it
    deid_rule: str = "keep"
    units: str = ""
    missing: str = ""  # what an empty cell means
    source: str = ""  # model.field or the derivation

    @property
    def enum(self) -> list[str]:
        """Allowed values as a list when they are an enumeration ("a | b"), else []."""
        if " | " not in self.allowed and self.type != "boolean":
            return []
        return [v.strip() for v in self.allowed.split("|") if v.strip()]


@dataclass(frozen=True)
class Withheld:
    """A source field that exists in the database but is kept out of a table (deid report)."""

    field: str
    identifier_class: IdentifierClass
    rule: str
    reason: str


Row = Sequence[Any]


@dataclass(frozen=True)
class TableSpec:
    name: str
    title: str
    description: str
    columns: tuple[Column, ...]
    rows: Callable[[ExportContext], Iterable[Row]]
    tier: Tier = "public"
    order: int = 100
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[tuple[str, str, str], ...] = ()  # (column, table, column)
    withheld: tuple[Withheld, ...] = ()
    estimate: Callable[[ExportContext], int] | None = None  # expected rows, for progress
    # Optional PostgreSQL fast path: COPY statements (with client-side parameters) whose CSV
    # output is exactly the profile's visible columns, in order, one line per row; None from
    # the callable means "use rows()".
    copy: Callable[[ExportContext], list[tuple[str, Sequence[Any]]] | None] | None = None
    # A bulk table (millions of rows) is scanned for e-mail addresses and timestamps only; its
    # generator must guarantee that no identifier can appear (whitelisted values).
    bulk: bool = False

    def visible_columns(self, profile: Profile) -> list[Column]:
        return [c for c in self.columns if profile.sees(c.tier)]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


@dataclass(frozen=True)
class Profile:
    """An export right (REDCap-style): what one kind of package may contain."""

    name: Tier
    drop_identifier_fields: bool
    drop_free_text: bool
    drop_code_and_transcripts: bool
    generalize_quasi_identifiers: bool
    time_mode: Literal["absolute", "relative"]
    k: int = 5
    max_suppressed_share: float = 0.10
    pseudonymize_ids: bool = True

    def sees(self, tier: str) -> bool:
        return tier == "public" or self.name == "internal"

    def options(self) -> dict[str, Any]:
        return {
            "drop_identifier_fields": self.drop_identifier_fields,
            "pseudonymize_ids": self.pseudonymize_ids,
            "drop_free_text": self.drop_free_text,
            "drop_code_and_transcripts": self.drop_code_and_transcripts,
            "generalize_quasi_identifiers": self.generalize_quasi_identifiers,
            "k": self.k,
            "max_suppressed_share": self.max_suppressed_share,
            "time_mode": self.time_mode,
        }


PROFILES: dict[str, Profile] = {
    "public": Profile(
        name="public",
        drop_identifier_fields=True,
        drop_free_text=True,
        drop_code_and_transcripts=True,
        generalize_quasi_identifiers=True,
        time_mode="relative",
    ),
    "internal": Profile(
        name="internal",
        drop_identifier_fields=False,
        drop_free_text=False,
        drop_code_and_transcripts=False,
        generalize_quasi_identifiers=False,
        time_mode="absolute",
    ),
}


# --- What generators read ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ParticipantRef:
    pk: int
    pseudonym: str
    internal_id: str
    username: str
    status: str
    track: str
    sequence: str


@dataclass(frozen=True, slots=True)
class TrialRef:
    pk: int
    participant: ParticipantRef
    session_index: int
    period: int
    condition: str
    ai_mode: str  # from the participant's frozen configuration snapshot
    ide: str
    time_limit_s: int
    started_at: datetime | None  # the trial's time origin (server clock)
    ended_at: datetime | None

    @property
    def origin_ms(self) -> int | None:
        return int(self.started_at.timestamp() * 1000) if self.started_at else None

    @property
    def span_ms(self) -> tuple[int, int] | None:
        """The range a relative time (ms since the start) of this trial may take: the trial
        from its start to its end (the deadline while it is open), widened by ``SPAN_SLACK`` on
        both sides. A time outside it could only come from a broken clock, and could reveal
        when the trial took place (a client time of 0 is minus the start)."""
        if self.started_at is None:
            return None
        end = self.ended_at or self.started_at + timedelta(seconds=self.time_limit_s)
        slack = int(SPAN_SLACK.total_seconds() * 1000)
        return -slack, int((end - self.started_at).total_seconds() * 1000) + slack


@dataclass
class ExportContext:
    """Everything a row generator may use. Participants and trials are only those included in
    the package, in release order (by pseudonym, then period), never in enrolment order."""

    study: Study
    profile: Profile
    scope: str
    pseudonymise: Callable[[str], str]
    participants: dict[int, ParticipantRef]
    trials: dict[int, TrialRef]
    quasi: dict[int, dict[str, str]] = field(default_factory=dict)  # participant pk -> QI values
    counters: Counter[str] = field(default_factory=Counter)  # de-identification tallies

    @property
    def public(self) -> bool:
        return self.profile.name == "public"

    def note(self, key: str, n: int = 1) -> None:
        self.counters[key] += n


def flag(value: bool | None) -> str | None:
    """Booleans as the codebook writes them (``true``/``false``; None stays missing)."""
    return None if value is None else ("true" if value else "false")


def iso(value: datetime | None) -> str | None:
    """An absolute UTC timestamp (internal tier only)."""
    return value.isoformat().replace("+00:00", "Z") if value else None


# --- Registration -------------------------------------------------------------------------------
_TABLES: dict[str, TableSpec] = {}


class RegistryError(ValueError):
    """A table spec breaks a tier rule or collides with another app's table."""


def _check(spec: TableSpec) -> None:
    if not _TABLE.match(spec.name):
        raise RegistryError(f"table name {spec.name!r} must be lowercase letters and digits")
    names = [c.name for c in spec.columns]
    if len(set(names)) != len(names):
        raise RegistryError(f"table {spec.name}: duplicate column names")
    for c in spec.columns:
        where = f"{spec.name}.{c.name}"
        if not _NAME.match(c.name):
            raise RegistryError(f"{where}: column names are snake_case")
        if c.type not in FIELD_TYPES or c.identifier_class not in IDENTIFIER_CLASSES:
            raise RegistryError(f"{where}: unknown type or identifier class")
        if c.tier not in TIERS:
            raise RegistryError(f"{where}: tier must be internal or public (vault never exports)")
        if not _RULE.match(c.deid_rule):
            raise RegistryError(f"{where}: unknown deid_rule {c.deid_rule!r}")
        if not c.description:
            raise RegistryError(f"{where}: every column needs a description")
        public = c.tier == "public" and spec.tier == "public"
        if public and c.identifier_class == "direct" and c.deid_rule != "hmac":
            raise RegistryError(f"{where}: a public direct identifier must be an HMAC pseudonym")
        if public and c.identifier_class == "quasi" and not c.deid_rule.startswith("generalize:"):
            raise RegistryError(f"{where}: a public quasi-identifier must be generalised")
        if public and c.identifier_class in ("free_text", "sensitive"):
            raise RegistryError(f"{where}: free text and sensitive data are never public")
        if public and c.type == "datetime":
            raise RegistryError(f"{where}: public packages carry relative times only")
    for column in spec.primary_key:
        if column not in names:
            raise RegistryError(f"table {spec.name}: primary key column {column} is missing")


def register_table(spec: TableSpec) -> None:
    """Add (or re-register, e.g. after an app reload) a table. Idempotent per owner module."""
    _check(spec)
    existing = _TABLES.get(spec.name)
    if existing is not None and existing.rows.__module__ != spec.rows.__module__:
        raise RegistryError(
            f"table {spec.name} is already registered by {existing.rows.__module__}"
        )
    _TABLES[spec.name] = spec


def unregister_table(name: str) -> None:
    _TABLES.pop(name, None)


def registered_tables() -> list[TableSpec]:
    """Every registered table in package order (the apps register theirs in ``ready()``)."""
    return sorted(_TABLES.values(), key=lambda t: (t.order, t.name))


def tables_for(profile: Profile) -> list[TableSpec]:
    return [t for t in registered_tables() if profile.sees(t.tier)]


def project(spec: TableSpec, profile: Profile) -> Callable[[Row], Row] | None:
    """A function picking the profile's columns out of a full row (None: all columns)."""
    keep = [i for i, c in enumerate(spec.columns) if profile.sees(c.tier)]
    if len(keep) == len(spec.columns):
        return None
    if len(keep) == 1:
        only = keep[0]
        return lambda row: (row[only],)

    from operator import itemgetter

    getter = itemgetter(*keep)
    return lambda row: getter(row)


def iter_rows(spec: TableSpec, context: ExportContext) -> Iterator[Row]:
    """The table's rows for this context, projected onto the profile's columns."""
    width = len(spec.columns)
    pick = project(spec, context.profile)
    for row in spec.rows(context):
        if len(row) != width:
            raise RegistryError(f"table {spec.name}: a row has {len(row)} cells, not {width}")
        yield pick(row) if pick else row
