"""Questionnaire tables: answers in long format, scale scores and the item dictionary.

Public packages release no free text, and from the screening questionnaire only items known to
be safe: its quasi-identifiers reach the package only generalised, in ``participants``; its other
items (multi-select tool and language lists, education, ...) single people out in small studies
and stay internal. Every withheld answer is counted in ``deid_report.json``.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby
from typing import Any

from study.exports import kanon
from study.exports.registry import (
    Column,
    ExportContext,
    Row,
    TableSpec,
    Withheld,
    iso,
    register_table,
)
from study.models import Answer, Item, Questionnaire, QuestionnaireVersion, Response, Study
from study.questionnaires.scoring import score_answers

FREE_TEXT_TYPES = frozenset({Item.Type.SHORT_TEXT, Item.Type.LONG_TEXT})
# Screening items of the shipped instrument that are released as answered in public packages.
SCREENING_PUBLIC = frozenset(
    {"python_skill", "python_recent", "ai_checks_output", "english_comfort", "track_preference"}
)
SCREENING_QI_ITEMS = frozenset(q.source.split(".", 1)[1] for q in kanon.SCREENING_QIS)
RELEASED = "yes"
WITHHELD_FREE_TEXT = "no: free text"
WITHHELD_QI = "no: quasi-identifier (released generalised in participants)"
WITHHELD_SCREENING = "no: screening item not classified as safe to release"


def release_rule(public: bool, kind: str, key: str, item_type: str) -> str:
    """Whether an item's answers go into a package of this profile, and if not, why."""
    if not public:
        return RELEASED
    if item_type in FREE_TEXT_TYPES:
        return WITHHELD_FREE_TEXT
    if kind == Questionnaire.Kind.SCREENING:
        if key in SCREENING_QI_ITEMS:
            return WITHHELD_QI
        if key not in SCREENING_PUBLIC:
            return WITHHELD_SCREENING
    return RELEASED


_COUNTER = {
    WITHHELD_FREE_TEXT: "n_free_text_dropped",
    WITHHELD_QI: "n_quasi_identifier_answers_withheld",
    WITHHELD_SCREENING: "n_screening_answers_withheld",
}


def cell(value: Any) -> Any:
    """An answer as one CSV cell: multiple choices joined with '|', booleans as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "|".join(sorted(str(v) for v in value))
    if value is None or isinstance(value, int | float | str):
        return value
    return str(value)


PID = Column(
    "participant_id",
    "string",
    "Pseudonymous participant id (see participants).",
    identifier_class="direct",
    deid_rule="hmac",
    source="Participant.internal_id",
)
FOREIGN = (("participant_id", "participants", "participant_id"),)
INSTRUMENT = (
    Column("instrument", "string", "Questionnaire (slug).", source="Questionnaire.slug"),
    Column("instrument_kind", "string", "When it is asked.", allowed="screening | post_trial | post_study", source="Questionnaire.kind"),  # noqa: E501
    Column("instrument_version", "integer", "Questionnaire version.", source="QuestionnaireVersion.version"),  # noqa: E501
)  # fmt: skip
WHEN = (
    Column("session_index", "integer", "Session of the trial the answer is about.", missing="empty: not about a trial (screening, post-study)", source="Response.trial"),  # noqa: E501
    Column("period", "integer", "Period of the trial the answer is about.", missing="empty: not about a trial (screening, post-study)", source="Response.trial"),  # noqa: E501
)  # fmt: skip

ITEM_COLUMNS = (
    PID,
    *INSTRUMENT,
    *WHEN,
    Column("item_id", "string", "Item key (see the items table for text and choices).", source="Item.key"),  # noqa: E501
    Column("item_type", "string", "Item type.", allowed=" | ".join(Item.Type.values), source="Item.type"),  # noqa: E501
    Column("value", "string", "The answer: a choice value, a number, several choices joined with '|', or (internal only) text.", allowed="see the items table", missing="empty: no answer", deid_rule="whitelist", source="Answer.value"),  # noqa: E501
    Column("answered_at_utc", "datetime", "When the questionnaire was submitted (UTC).", identifier_class="quasi", tier="internal", source="Response.submitted_at"),  # noqa: E501
)  # fmt: skip


def item_rows(ctx: ExportContext) -> Iterator[Row]:
    for pk, ref in ctx.participants.items():
        answers = (
            Answer.objects.filter(response__participant_id=pk)
            .order_by("response__submitted_at", "response__pk", "item__order", "item__pk")
            .values_list(
                "response__version__questionnaire__slug",
                "response__version__questionnaire__kind",
                "response__version__version",
                "response__trial_id",
                "item__key",
                "item__type",
                "value",
                "response__submitted_at",
            )
        )
        for slug, kind, version, trial_id, key, item_type, value, submitted in answers:
            rule = release_rule(ctx.public, kind, key, item_type)
            if rule != RELEASED:
                ctx.note(_COUNTER[rule])
                continue
            trial = ctx.trials.get(trial_id) if trial_id else None
            yield (
                ref.pseudonym,
                slug,
                kind,
                version,
                trial.session_index if trial else None,
                trial.period if trial else None,
                key,
                item_type,
                cell(value),
                iso(submitted),
            )


def _estimate_items(ctx: ExportContext) -> int:
    return Answer.objects.filter(response__participant_id__in=list(ctx.participants)).count()


# --- scales ---------------------------------------------------------------------------------------
SCALE_COLUMNS = (
    PID,
    *INSTRUMENT,
    *WHEN,
    Column("scale", "string", "Scale name (e.g. nasa_tlx = raw TLX, the unweighted mean).", source="Item.scale"),  # noqa: E501
    Column("score", "number", "Mean of the scale's answered items after reverse-scoring (':r'), as study.questionnaires.scale_scores computes it.", source="Answer.value, Item.scale"),  # noqa: E501
    Column("n_items_answered", "integer", "Items that entered the score.", source="Answer"),
)  # fmt: skip


def scale_rows(ctx: ExportContext) -> Iterator[Row]:
    for pk, ref in ctx.participants.items():
        answers = (
            Answer.objects.filter(response__participant_id=pk)
            .exclude(item__scale="")
            .select_related("item", "response__version__questionnaire")
            .order_by("response__submitted_at", "response__pk", "item__order", "item__pk")
        )
        for _, group in groupby(answers, key=lambda a: a.response_id):
            sheet = list(group)
            response = sheet[0].response
            kind = response.version.questionnaire.kind
            if ctx.public and any(
                release_rule(True, kind, a.item.key, a.item.type) != RELEASED for a in sheet
            ):
                ctx.note("n_scale_scores_withheld")
                continue
            trial = ctx.trials.get(response.trial_id) if response.trial_id else None
            version = response.version
            for name, (score, n) in score_answers((a.item, a.value) for a in sheet).items():
                yield (
                    ref.pseudonym,
                    version.questionnaire.slug,
                    version.questionnaire.kind,
                    version.version,
                    trial.session_index if trial else None,
                    trial.period if trial else None,
                    name,
                    round(score, 4),
                    n,
                )


# --- items (the instrument dictionary) ----------------------------------------------------------
DICTIONARY_COLUMNS = (
    *INSTRUMENT,
    Column("item_id", "string", "Item key.", source="Item.key"),
    Column("order", "integer", "Position in the questionnaire.", source="Item.order"),
    Column("item_type", "string", "Item type.", allowed=" | ".join(Item.Type.values), source="Item.type"),  # noqa: E501
    Column("text", "string", "Question text as shown (written by the research team).", source="Item.text"),  # noqa: E501
    Column("choices", "string", "Choices as 'value=label' joined with ' | ', or Likert anchors.", missing="empty: not a choice item", source="Item.choices"),  # noqa: E501
    Column("min_value", "number", "Smallest allowed number.", missing="empty: no bound", source="Item.min_value"),  # noqa: E501
    Column("max_value", "number", "Largest allowed number.", missing="empty: no bound", source="Item.max_value"),  # noqa: E501
    Column("scale", "string", "Scale the item scores into (':r' = reverse-scored).", missing="empty: none", source="Item.scale"),  # noqa: E501
    Column("released", "string", "Whether this package contains the item's answers, and if not, why.", allowed=" | ".join((RELEASED, WITHHELD_FREE_TEXT, WITHHELD_QI, WITHHELD_SCREENING)), deid_rule="derived"),  # noqa: E501
)  # fmt: skip


def _choices(choices: Any) -> str | None:
    parts = []
    for choice in choices if isinstance(choices, list) else []:
        if isinstance(choice, dict) and "value" in choice:
            parts.append(f"{choice['value']}={choice.get('label', '')}")
        elif isinstance(choice, dict) and "low" in choice:
            parts.append(f"low={choice['low']}")
            parts.append(f"high={choice.get('high', '')}")
    return " | ".join(parts) or None


def _versions(ctx: ExportContext) -> list[QuestionnaireVersion]:
    study: Study = ctx.study
    ids = set(
        Response.objects.filter(participant_id__in=list(ctx.participants)).values_list(
            "version_id", flat=True
        )
    )
    ids |= {v for v in (study.screening_id, study.post_trial_id, study.post_study_id) if v}
    return list(
        QuestionnaireVersion.objects.filter(pk__in=ids)
        .select_related("questionnaire")
        .order_by("questionnaire__kind", "questionnaire__slug", "version")
    )


def dictionary_rows(ctx: ExportContext) -> Iterator[Row]:
    for version in _versions(ctx):
        q = version.questionnaire
        for item in version.items.order_by("order", "pk"):
            yield (
                q.slug,
                q.kind,
                version.version,
                item.key,
                item.order,
                item.type,
                item.text,
                _choices(item.choices),
                item.min_value,
                item.max_value,
                item.scale or None,
                release_rule(ctx.public, q.kind, item.key, item.type),
            )


def register_tables() -> None:
    """Register the questionnaire item, scale and dictionary tables (``StudyConfig.ready``)."""
    register_table(
        TableSpec(
            name="questionnaireitems",
            title="Questionnaire answers (long format)",
            description="One row per answered item.",
            columns=ITEM_COLUMNS,
            rows=item_rows,
            order=40,
            foreign_keys=FOREIGN,
            estimate=_estimate_items,
            withheld=(
                Withheld("Answer.value of short_text/long_text items", "free_text", "drop", "public: free text"),  # noqa: E501
                Withheld("Answer.value of screening quasi-identifier items", "quasi", "generalize:participants", "public: released generalised in participants"),  # noqa: E501
                Withheld("Answer.value of other screening items", "quasi", "drop", "public: not classified as safe to release"),  # noqa: E501
            ),
        )
    )  # fmt: skip
    register_table(
        TableSpec(
            name="scales",
            title="Scale scores",
            description="One row per questionnaire response and scale.",
            columns=SCALE_COLUMNS,
            rows=scale_rows,
            order=50,
            foreign_keys=FOREIGN,
        )
    )
    register_table(
        TableSpec(
            name="items",
            title="Questionnaire items",
            description="The instrument dictionary: every item of every questionnaire version "
            "answered in this study, with its choices and whether its answers are released.",
            columns=DICTIONARY_COLUMNS,
            rows=dictionary_rows,
            order=60,
            primary_key=("instrument", "instrument_version", "item_id"),
        )
    )
