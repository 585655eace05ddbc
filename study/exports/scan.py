"""The leak scan of public packages: what must never be in a file, looked for as it is written.

E-mail addresses and ISO date-times everywhere; participants' usernames and internal ids
everywhere except in bulk tables, whose values are whitelisted by construction (scanning
millions of rows for dozens of strings would cost more than the export itself); and, in every
table with per-trial rows, relative times (ms since a trial's start) outside the trial's span
(``TrialRef.span_ms``), which could give away when the trial took place. A hit aborts the
export: no package is better than a leaking one.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from study.exports.registry import Column, TrialRef

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
ISO_DATETIME = re.compile(r"-\d\d-\d\d[T ]\d\d:\d\d")  # starts with a literal: a fast scan
PATTERNS = (
    "e-mail address",
    "ISO date-time",
    "username",
    "internal id",
    "relative time outside its trial's span",
)


class LeakDetected(Exception):
    """A public package would contain something it must not; nothing is released."""


class Scanner:
    """Looks for what must never be in a public package, chunk by chunk."""

    def __init__(self, identifiers: Iterable[str]) -> None:
        self.identifiers = sorted({i for i in identifiers if len(i) >= 4})

    def check(self, text: str, where: str, *, identifiers: bool = True) -> None:
        if "@" in text and EMAIL.search(text):
            raise LeakDetected(f"Export refused: {where} would contain an e-mail address.")
        if ISO_DATETIME.search(text):
            raise LeakDetected(f"Export refused: {where} would contain an absolute timestamp.")
        if identifiers:
            for ident in self.identifiers:
                if ident in text:
                    raise LeakDetected(
                        f"Export refused: {where} would contain a participant's username or "
                        "internal id."
                    )


class SpanCheck:
    """Every relative time in milliseconds of a table with ``participant_id`` and ``period``
    columns lies within its trial's span (``TrialRef.span_ms``); checked row by row, on the
    rows or on the CSV text a COPY streams."""

    def __init__(
        self,
        where: str,
        key: tuple[int, int],
        times: list[int],
        spans: dict[tuple[str, str], tuple[int, int] | None],
    ) -> None:
        self.where, self.key, self.times, self.spans = where, key, times, spans
        self._tail = ""

    @classmethod
    def for_table(
        cls, columns: Sequence[Column], trials: Iterable[TrialRef], where: str
    ) -> SpanCheck | None:
        """The check for a table with these (visible) columns; None if it has nothing to check."""
        names = [c.name for c in columns]
        times = [
            i for i, c in enumerate(columns) if c.deid_rule == "relative_time" and c.units == "ms"
        ]
        if not times or "participant_id" not in names or "period" not in names:
            return None
        spans = {(t.participant.pseudonym, str(t.period)): t.span_ms for t in trials}
        return cls(where, (names.index("participant_id"), names.index("period")), times, spans)

    def rows(self, rows: Iterable[Sequence[Any]]) -> None:
        for row in rows:
            self._check(row)

    def text(self, block: str) -> None:
        """CSV text in blocks; a line cut by a block boundary is checked with the next one."""
        lines = (self._tail + block).split("\n")
        self._tail = lines.pop()
        for values in csv.reader(lines):
            self._check(values)

    def _check(self, row: Sequence[Any]) -> None:
        span = self.spans.get((str(row[self.key[0]]), str(row[self.key[1]])))
        for index in self.times:
            value = row[index]
            if value is None or value == "":
                continue
            if span is None or not span[0] <= int(value) <= span[1]:
                raise LeakDetected(
                    f"Export refused: {self.where} would contain a relative time outside its "
                    "trial's span, which could reveal when the trial took place."
                )
