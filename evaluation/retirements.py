"""``RETIRED.toml`` of a bank: which templates are retired, since when and why. A retired
template keeps its files, version and content hash (retiring it changes nothing in it), still
loads for the studies and exports that used it, and is offered for nothing new."""

from __future__ import annotations

import datetime
import tomllib
from pathlib import Path

from evaluation.spec import BankError

RETIRED = "RETIRED.toml"


def read_retirements(bank_dir: Path) -> dict[str, tuple[str, str]]:
    """slug -> (ISO date, reason); every problem is one sentence naming the file and field."""
    where = bank_dir / RETIRED
    if not where.is_file():
        return {}
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BankError(f"{where}: is not valid TOML ({exc}).") from exc
    out = {}
    for slug, table in data.items():
        if not isinstance(table, dict) or set(table) != {"on", "reason"}:
            raise _fail(where, slug, "must be a table with exactly 'on' (a date) and 'reason'")
        on, reason = table["on"], table["reason"]
        if not isinstance(on, datetime.date) or isinstance(on, datetime.datetime):
            raise _fail(where, f"{slug}.on", "must be a TOML date like 2026-12-02")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 300:
            raise _fail(where, "reason", "must be a non-empty string of at most 300 characters")
        out[slug] = (on.isoformat(), reason)
    return out


def _fail(where: Path, field: str, problem: str) -> BankError:
    return BankError(f"{where}: field '{field}' {problem}.")
