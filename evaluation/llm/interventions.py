"""C1's minimal interventions: the catalogue of procedural failures the harness fixes by itself,
and the researcher's manual ones, restricted to the same categories (the paper's appendix G).

Every intervention is an ``Intervention`` row with its category; catalogue ones are delivered
when they are recorded, manual ones at the agent's next step.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from evaluation.models import AgentRun, Intervention, Sweep

CATALOGUE = Path(__file__).with_name("interventions.toml")
MAX_MESSAGE = 2000
Where = Literal["tests", "action"]


class InterventionRefused(ValueError):
    """A manual intervention that may not be added; the message says why."""


@dataclass(frozen=True)
class Pattern:
    id: str
    category: str
    on: Where
    match: re.Pattern[str]
    message: str
    runtimes: frozenset[str] = frozenset()
    templates: frozenset[str] = frozenset()

    def applies(self, runtime: str, slug: str) -> bool:
        return (not self.runtimes or runtime in self.runtimes) and (
            not self.templates or slug in self.templates
        )

    def note(self, text: str) -> str | None:
        found = self.match.search(text)
        if found is None:
            return None
        return self.message.replace("{1}", found.group(1) if found.groups() else "")


def _pattern(entry: dict[str, Any], source: Path) -> Pattern:
    categories = set(Intervention.Category.values)
    if entry.get("category") not in categories:
        raise ValueError(f"{source}: {entry.get('id')!r} has an unknown category")
    if entry.get("on") not in ("tests", "action"):
        raise ValueError(f'{source}: {entry.get("id")!r} needs on = "tests" or "action"')
    return Pattern(
        id=str(entry["id"]),
        category=str(entry["category"]),
        on=entry["on"],
        match=re.compile(str(entry["match"])),
        message=str(entry["message"]),
        runtimes=frozenset(entry.get("runtimes", ())),
        templates=frozenset(entry.get("templates", ())),
    )


@cache
def catalogue(path: Path = CATALOGUE) -> tuple[Pattern, ...]:
    with path.open("rb") as handle:
        entries = tomllib.load(handle).get("pattern", [])
    return tuple(_pattern(entry, path) for entry in entries)


def catalogue_notes(
    text: str, *, on: Where, runtime: str, slug: str, given: set[str]
) -> list[tuple[Pattern, str]]:
    """Catalogue entries matching ``text`` that this run has not had yet (``given`` holds the
    ids already delivered and is updated)."""
    notes = []
    for pattern in catalogue():
        if pattern.on != on or pattern.id in given or not pattern.applies(runtime, slug):
            continue
        note = pattern.note(text)
        if note is not None:
            given.add(pattern.id)
            notes.append((pattern, note))
    return notes


@transaction.atomic
def record_catalogue_intervention(run_id: int, pattern: Pattern, message: str) -> None:
    Intervention.objects.create(
        run_id=run_id,
        category=pattern.category,
        source=Intervention.Source.CATALOGUE,
        pattern=pattern.id,
        message=message,
        delivered_at=timezone.now(),
    )


@transaction.atomic
def add_manual_intervention(
    run: AgentRun, category: str, message: str, author: Any
) -> Intervention:
    """A researcher's procedural fix for a C1 run that is still going; the agent gets it at its
    next step. Refused (with a sentence) for C0 runs, finished runs, other categories and empty
    or overlong messages."""
    run = AgentRun.objects.select_for_update().select_related("sweep").get(pk=run.pk)
    if run.sweep.condition != Sweep.Condition.C1:
        raise InterventionRefused(
            "Interventions are only allowed in C1 (minimally intervened) runs."
        )
    if run.status in (AgentRun.Status.DONE, AgentRun.Status.FAILED):
        raise InterventionRefused("This run has finished; an intervention can no longer reach it.")
    if category not in Intervention.Category.values:
        allowed = ", ".join(Intervention.Category.values)
        raise InterventionRefused(
            f"An intervention must be one of the procedural categories: {allowed}."
        )
    message = message.strip()
    if not message:
        raise InterventionRefused("Write the note the model should get.")
    if len(message) > MAX_MESSAGE:
        raise InterventionRefused(f"The note is longer than {MAX_MESSAGE} characters.")
    return Intervention.objects.create(
        run=run,
        category=category,
        source=Intervention.Source.MANUAL,
        message=message,
        author=author if getattr(author, "pk", None) else None,
    )


@transaction.atomic
def take_manual_interventions(run_id: int) -> list[tuple[str, str]]:
    """The run's manual interventions not yet delivered, marked delivered: (category, note)."""
    rows = list(
        Intervention.objects.select_for_update()
        .filter(run_id=run_id, source=Intervention.Source.MANUAL, delivered_at__isnull=True)
        .order_by("created_at")
    )
    Intervention.objects.filter(pk__in=[r.pk for r in rows]).update(delivered_at=timezone.now())
    return [(r.get_category_display(), r.message) for r in rows]
