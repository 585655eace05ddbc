"""What a researcher sees in the admin: only their own studies' rows (superusers see all).

Every admin of study-owned records uses ``ScopedAdminMixin``; its querysets come from
``study/access/``'s ``scope_for_researcher``, the same chokepoint the views use. The mixin
narrows:

- the changelist, the change/history/delete views and the actions (``get_queryset``), and the
  search and autocomplete results (``get_search_results``);
- every foreign-key and many-to-many choice whose model belongs to a study
  (``ScopedChoicesMixin``, also for inlines);
- the related-object filters of the sidebar, which otherwise list every study's objects: a
  filter on a relation shows only what the narrowed changelist holds.

Admins of records that belong to no study (questionnaires, the task bank, calibrations) are not
scoped. ``tests/study/test_admin_scope.py`` walks the admin site's registry, so a new admin of
study data that forgets the mixin fails there.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import ForeignKey, ManyToManyField, Model, QuerySet
from django.http import HttpRequest

from study.access import is_study_owned, scope_for_researcher


class ScopedChoicesMixin:
    """Foreign-key and many-to-many choices limited to the researcher's studies."""

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        _scope_choices(db_field.related_model, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def formfield_for_manytomany(
        self, db_field: ManyToManyField[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        _scope_choices(db_field.related_model, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]


def _scope_choices(related: Any, request: HttpRequest, kwargs: dict[str, Any]) -> None:
    """Offer only the researcher's studies' rows of a study-owned related model."""
    if (
        "queryset" not in kwargs
        and isinstance(related, type)
        and issubclass(related, Model)
        and is_study_owned(related)
    ):
        kwargs["queryset"] = scope_for_researcher(request.user, related._default_manager.all())


class ScopedAdminMixin(ScopedChoicesMixin):
    """Rows of the researcher's studies only. ``study_path`` is the lookup from the model to its
    study, needed only for models ``study.access`` does not know (e.g. the IDE's telemetry)."""

    study_path: str | None = None

    def scope_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return scope_for_researcher(request.user, queryset, self.study_path)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.scope_queryset(request, super().get_queryset(request))  # type: ignore[misc]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        found, may_have_duplicates = super().get_search_results(  # type: ignore[misc]
            request, queryset, search_term
        )
        return self.scope_queryset(request, found), may_have_duplicates

    def get_list_filter(self, request: HttpRequest) -> Any:
        filters = super().get_list_filter(request)  # type: ignore[misc]
        model = self.model  # type: ignore[attr-defined]
        return [_related_only(model, entry) for entry in filters]


def _related_only(model: Any, entry: Any) -> Any:
    """A plain relation filter (``"study"``, ``"form__study"``) lists every object of the related
    model; ``RelatedOnlyFieldListFilter`` lists those the (scoped) changelist refers to."""
    if not isinstance(entry, str):
        return entry
    field = None
    current = model
    for part in entry.split("__"):
        field = current._meta.get_field(part)
        if not field.is_relation:
            return entry
        current = field.related_model
    return (entry, admin.RelatedOnlyFieldListFilter) if field is not None else entry
