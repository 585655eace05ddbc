"""The leak scan of public packages: what must never be in a file, looked for as it is written.

E-mail addresses and ISO date-times everywhere; participants' usernames and internal ids
everywhere except in bulk tables, whose values are whitelisted by construction (scanning
millions of rows for dozens of strings would cost more than the export itself). A hit aborts
the export: no package is better than a leaking one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
ISO_DATETIME = re.compile(r"-\d\d-\d\d[T ]\d\d:\d\d")  # starts with a literal: a fast scan
PATTERNS = ("e-mail address", "ISO date-time", "username", "internal id")


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
