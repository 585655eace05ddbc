"""Researcher pages of the expert review: pick a template version, read each instance as a
participant sees it (README and files, never the hidden tests or the references), judge it on
the four criteria, and read the summary (kappa between the two reviewers, first-attempt
acceptance, the template's validation status).

Staff only (``researcher_only``); reading needs ``evaluation.view_expertrating``, rating
``evaluation.add_expertrating`` and ``evaluation.change_expertrating`` (researchers hold them).
Only the bank's current version of a template can be rendered and rated; the summary of an
older version stays readable.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from evaluation.bank import BankError, list_templates, load_template
from evaluation.instances import get_instance
from evaluation.instantiate import MAX_SEED
from evaluation.llm.reviews import (
    CRITERIA,
    REVIEW_SEEDS,
    BadRating,
    agreement,
    first_attempt_acceptance,
    ratings_of,
    record_rating,
)
from evaluation.llm.validation import statuses, template_status, validations_of
from evaluation.models import ExpertRating
from evaluation.spec import Instance, TemplateSpec
from study.access import researcher_only
from study.instance_downloads import participant_file_download
from study.markdown import render_markdown

VIEW, ADD, CHANGE = (
    "evaluation.view_expertrating",
    "evaluation.add_expertrating",
    "evaluation.change_expertrating",
)


def _require(request: HttpRequest, *perms: str) -> None:
    if not request.user.has_perms(perms):
        raise PermissionDenied("You do not have the permission to review task instances.")


def _template(slug: str, version: str) -> TemplateSpec | None:
    """The bank's template if ``version`` is its current version; None for an older version
    that has ratings; 404 otherwise."""
    try:
        spec = load_template(slug)
    except BankError:
        spec = None
    if spec is not None and spec.version == version:
        return spec
    if ExpertRating.objects.filter(
        instance__template__slug=slug, instance__template__version=version
    ).exists():
        return None
    raise Http404("no such template version")


def _current_instance(slug: str, version: str, seed: int) -> Instance:
    if _template(slug, version) is None:
        raise Http404("this version is no longer in the bank")
    if not 0 <= seed <= MAX_SEED:
        raise Http404("no such instance")
    return get_instance(slug, seed)


@researcher_only
@require_GET
def review_index(request: HttpRequest) -> HttpResponse:
    _require(request, VIEW)
    templates = list_templates()
    found = statuses((t.slug, t.version) for t in templates)
    rated: dict[tuple[str, str], set[int]] = {}
    rows = ExpertRating.objects.values_list(
        "instance__template__slug", "instance__template__version", "instance__seed"
    )
    for slug, version, seed in rows:
        rated.setdefault((slug, version), set()).add(seed)
    current = {(t.slug, t.version) for t in templates}
    context = {
        "templates": [
            {
                "spec": t,
                "status": found[(t.slug, t.version)],
                "rated": len(rated.get((t.slug, t.version), ())),
            }
            for t in templates
        ],
        "older": sorted(key for key in rated if key not in current),
        "first_attempt": first_attempt_acceptance(),
        "seeds": len(REVIEW_SEEDS),
    }
    return render(request, "study/reviews/index.html", context)


@researcher_only
@require_GET
def review_template(request: HttpRequest, slug: str, version: str) -> HttpResponse:
    _require(request, VIEW)
    spec = _template(slug, version)
    if spec is None:
        return redirect("study:review_summary", slug=slug, version=version)
    mine: dict[int, int] = {}
    everyone: dict[int, set[int]] = {}
    for rating in ratings_of(slug, version):
        everyone.setdefault(rating.instance.seed, set()).add(rating.reviewer_id)
        if rating.reviewer_id == request.user.pk:
            mine[rating.instance.seed] = mine.get(rating.instance.seed, 0) + 1
    seeds = sorted({*REVIEW_SEEDS, *everyone})
    rows = [
        {"seed": s, "mine": mine.get(s, 0), "reviewers": len(everyone.get(s, ()))} for s in seeds
    ]
    context = {
        "spec": spec,
        "rows": rows,
        "criteria": len(CRITERIA),
        "status": template_status(slug, version),
    }
    return render(request, "study/reviews/template.html", context)


def _form_values(request: HttpRequest) -> dict[str, tuple[bool, str]]:
    """criterion -> (passed, comment) of the criteria judged in the POST (400 on a value
    other than pass or fail)."""
    judged: dict[str, tuple[bool, str]] = {}
    for criterion in CRITERIA:
        value = request.POST.get(criterion, "")
        if value not in ("", "pass", "fail"):
            raise BadRating(f"{criterion} must be pass or fail, not {value[:40]!r}.")
        if value:
            judged[criterion] = (value == "pass", request.POST.get(f"{criterion}-comment", ""))
    return judged


@researcher_only
@require_http_methods(["GET", "POST"])
def review_instance(request: HttpRequest, slug: str, version: str, seed: int) -> HttpResponse:
    _require(request, VIEW)
    instance = _current_instance(slug, version, seed)
    error, status = "", 200
    if request.method == "POST":
        _require(request, ADD, CHANGE)
        try:
            record_rating(instance, request.user, _form_values(request))
        except BadRating as exc:
            error, status = str(exc), 400
        else:
            messages.success(request, f"Saved your ratings of {slug} seed {seed}.")
            return redirect("study:review_template", slug=slug, version=version)
    mine = {
        r.criterion: r
        for r in ExpertRating.objects.filter(
            instance__template__slug=slug,
            instance__template__version=version,
            instance__seed=seed,
            reviewer=request.user.pk,
        )
    }
    posted = request.POST if request.method == "POST" else None
    form: list[dict[str, Any]] = []
    for value, label in ExpertRating.Criterion.choices:
        saved = mine.get(value)
        choice = (
            posted.get(value, "")
            if posted
            else ("" if saved is None else "pass" if saved.passed else "fail")
        )
        comment = posted.get(f"{value}-comment", "") if posted else (saved.comment if saved else "")
        form.append({"name": value, "label": label, "choice": choice, "comment": comment})
    files = sorted(
        name for name in {*instance.participant_files, *instance.images} if name != "README.md"
    )
    context = {
        "spec": instance.template,
        "seed": seed,
        "readme_html": render_markdown(instance.participant_files["README.md"]),
        "files": files,
        "form": form,
        "error": error,
    }
    return render(request, "study/reviews/instance.html", context, status=status)


@researcher_only
@require_GET
def review_file(
    request: HttpRequest, slug: str, version: str, seed: int, name: str
) -> HttpResponse:
    """A file of the instance as a participant gets it (text, or an image's bytes), as a
    download; hidden tests and references are not files of the participant's workspace."""
    _require(request, VIEW)
    instance = _current_instance(slug, version, seed)
    return participant_file_download(instance, name)


@researcher_only
@require_GET
def review_summary(request: HttpRequest, slug: str, version: str) -> HttpResponse:
    _require(request, VIEW)
    spec = _template(slug, version)
    result = agreement(slug, version)
    pair = [r.pk for r in result.reviewers]
    table: dict[int, dict[str, list[str]]] = {}
    for rating in ratings_of(slug, version):
        if rating.reviewer_id not in pair:
            continue
        cells = table.setdefault(rating.instance.seed, {c: ["", ""] for c in CRITERIA})
        cells[rating.criterion][pair.index(rating.reviewer_id)] = (
            "Pass" if rating.passed else "Fail"
        )
    context = {
        "slug": slug,
        "version": version,
        "spec": spec,
        "agreement": result,
        "instances": [
            {"seed": seed, "cells": [cells[c] for c in CRITERIA]}
            for seed, cells in sorted(table.items())
        ],
        "criteria": ExpertRating.Criterion.choices,
        "first_attempt": first_attempt_acceptance(),
        "status": template_status(slug, version),
        "validations": validations_of(slug, version),
    }
    return render(request, "study/reviews/summary.html", context)
