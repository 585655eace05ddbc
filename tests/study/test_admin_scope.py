"""What a researcher sees in the admin: a matrix of two studies and one researcher of each, over
every admin the site registers (a new ModelAdmin is covered without touching this file).

For every registered model of study data: the changelist of researcher X shows none of study
Y's rows, Y's change pages are not found, and no form (add or change, inlines included) offers
one of Y's objects as a choice. ``SHARED`` lists the admins of records that belong to no study.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import (
    TOTP,
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
)
from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.db.models import Model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evaluation.models import (
    AgentRequest,
    AgentRun,
    Calibration,
    Dataset,
    Evaluation,
    ExpertRating,
    Intervention,
    ModelEndpoint,
    Sweep,
    TaskInstance,
    TaskTemplate,
    TemplateStatus,
    TemplateValidation,
)
from ide_bridge.models import IntegrityFlag, TrialEvent
from study.audit.withdrawal import withdraw_participant
from study.models import (
    AuditEvent,
    Participant,
    Questionnaire,
    QuestionnaireVersion,
    RetentionPolicy,
    Study,
    User,
)
from study.trials.services import start_trial, submit_trial
from study.vault.services import read_vault, store_contact
from tests.factories import DEFAULT_PASSWORD, ResearcherFactory
from tests.study.helpers import assigned, grading_queued, journey_study, logged_in

# Admins of records that belong to no study, with the reason.
SHARED: dict[type[Model], str] = {
    Group: "permission groups",
    Questionnaire: "instruments are shared by studies",
    QuestionnaireVersion: "instruments are shared by studies",
    TaskTemplate: "the task bank",
    TaskInstance: "generated task texts, shared by every trial with the same seed",
    Calibration: "per grading host",
    AuditEvent: "one hash chain for the platform; study.view_auditevent is the coordinator's",
    # The LLM arm knows nothing about participants (evaluation/): models, not people.
    ModelEndpoint: "model endpoints serve every study and the LLM arm",
    Dataset: "static datasets of the task bank",
    Sweep: "LLM sweeps",
    AgentRun: "LLM sweeps",
    AgentRequest: "LLM sweeps",
    Intervention: "LLM sweeps",
    TemplateValidation: "validation of the task bank",
    TemplateStatus: "validation of the task bank",
    ExpertRating: "expert review of the task bank",
}

pytestmark = [pytest.mark.usefixtures("fresh_cache"), pytest.mark.timeout(240)]


def everything() -> dict[type[Model], set[Any]]:
    return {
        model: set(model._default_manager.values_list("pk", flat=True))
        for model in admin.site._registry
    }


def build(slug: str) -> tuple[Study, User, str]:
    """A study with a researcher, a participant who consented, answered, submitted a trial
    (graded: a report), telemetry, a flag, a retention policy, a vault entry."""
    now = timezone.now()
    study = journey_study(slug=slug, title=f"Study {slug}")
    lead = ResearcherFactory.create(username=f"{slug}-lead@example.org")
    study.researchers.add(lead)
    EmailAddress.objects.create(user=lead, email=lead.email, primary=True, verified=True)
    secret = generate_totp_secret()
    TOTP.activate(lead, secret)
    RetentionPolicy.objects.create(study=study)
    _, participant = assigned(study)
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    with grading_queued():
        trial = submit_trial(
            start_trial(trial, now), {"solution.py": f"# {slug} solution\n"}, now, channel="editor"
        )
    assert trial.evaluation_id is not None
    Evaluation.objects.filter(pk=trial.evaluation_id).update(report={"note": f"{slug} report"})
    TrialEvent.objects.create(trial=trial, seq=1, kind="edit", client_ts=1, payload={"s": slug})
    IntegrityFlag.objects.create(trial=trial, kind=IntegrityFlag.Kind.choices[0][0])
    _, leaving = logged_in(study)
    withdraw_participant(leaving, channel="researcher", by=lead)
    lead.user_permissions.add(Permission.objects.get(codename="view_vault"))
    store_contact(participant.internal_id, slug, email=f"someone@{slug}.example.org")
    read_vault(lead, slug, "compensation")
    return study, lead, secret


@pytest.fixture
def matrix(db: None) -> dict[str, Any]:
    before = everything()
    x_study, x_lead, x_secret = build("xenon")
    between = everything()
    y_study, y_lead, y_secret = build("ypsilon")
    after = everything()
    # X sees with every view permission of the admin (more than researchers hold), so the
    # test checks the scoping, not the permissions.
    views = Permission.objects.filter(codename__startswith="view_")
    x_lead.user_permissions.add(*views)
    y_lead.user_permissions.add(*views)
    y_markers = ["ypsilon", *y_study.participants.values_list("user__username", flat=True)]
    return {
        "x": x_lead,
        "y": y_lead,
        "y_secret": y_secret,
        "x_secret": x_secret,
        "x_pks": {m: between[m] - before[m] for m in after},
        "y_pks": {m: after[m] - between[m] for m in after},
        "y_markers": y_markers,
        "x_participants": {p.user for p in x_study.participants.select_related("user")},
    }


def signed_in(user: User, secret: str | None = None) -> Client:
    """Signed in as a researcher does it: password, then the authenticator's code."""
    client = Client()
    if secret is None:
        client.force_login(user)
        return client
    client.post("/accounts/login/", {"login": user.email, "password": DEFAULT_PASSWORD})
    code = format_hotp_value(hotp_value(secret, int(time.time()) // 30))
    assert client.post("/accounts/2fa/authenticate/", {"code": code}).status_code == 302
    return client


def url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def form_choices(context: Any) -> list[forms.ModelChoiceField[Any]]:
    """Every model choice field of the page's form and of its inlines' forms."""
    found: list[Any] = []
    adminform = context.get("adminform")
    if adminform is not None:
        found.extend(adminform.form.fields.values())
    for inline in context.get("inline_admin_formsets") or []:
        found.extend(inline.formset.empty_form.fields.values())
    return [field for field in found if isinstance(field, forms.ModelChoiceField)]


def choice_problems(context: Any, y_pks: dict[type[Model], set[Any]], where: str) -> list[str]:
    found = []
    for field in form_choices(context):
        queryset = field.queryset
        assert queryset is not None
        offered = set(queryset.values_list("pk", flat=True))
        leaked = offered & y_pks.get(queryset.model, set())
        if leaked:
            found.append(f"{where}: {field.label} offers {leaked}")
    return found


def marker_problems(content: str, markers: list[str], where: str) -> list[str]:
    return [f"{where} shows {marker!r}" for marker in markers if marker in content]


def scoped_models() -> list[type[Model]]:
    return [model for model in admin.site._registry if model not in SHARED]


def test_every_admin_of_study_data_is_covered_by_the_data_set(matrix: dict[str, Any]) -> None:
    """Each scoped admin has rows of study Y, and Y's researcher sees some of them: the matrix
    below can fail for every admin (a new admin needs its rows in ``build``)."""
    client = signed_in(matrix["y"], matrix["y_secret"])
    for model in scoped_models():
        y_pks = matrix["y_pks"][model]
        assert y_pks, f"build() makes no {model._meta.label}"
        response = client.get(url(model, "changelist"))
        assert response.status_code == 200, model._meta.label
        shown = set(response.context["cl"].queryset.values_list("pk", flat=True))
        assert shown & y_pks, f"Y's researcher sees no {model._meta.label} of Y"


def test_a_researcher_sees_nothing_of_another_study(matrix: dict[str, Any]) -> None:
    client = signed_in(matrix["x"], matrix["x_secret"])
    problems: list[str] = []
    for model in scoped_models():
        problems += leaks(client, model, matrix)
    assert problems == []


def leaks(client: Client, model: type[Model], matrix: dict[str, Any]) -> list[str]:
    """What researcher X's admin pages of ``model`` reveal of study Y."""
    label, y_pks, markers = model._meta.label, matrix["y_pks"], matrix["y_markers"]
    found: list[str] = []
    changelist = client.get(url(model, "changelist"))
    if changelist.status_code != 200:
        return [f"{label}: list answers {changelist.status_code}"]
    shown = set(changelist.context["cl"].queryset.values_list("pk", flat=True))
    found += [f"{label}: list shows {pk}" for pk in shown & y_pks[model]]
    found += marker_problems(changelist.content.decode(), markers, f"{label} list")
    # Searching (the admin's autocomplete uses the same search) finds nothing of Y either.
    searched = client.get(url(model, "changelist"), {"q": "ypsilon"})
    shown = set(searched.context["cl"].queryset.values_list("pk", flat=True))
    found += [f"{label}: search finds {pk}" for pk in shown & y_pks[model]]

    for pk in y_pks[model]:
        page = client.get(url(model, "change", pk))
        if page.status_code != 302 or page["Location"] != reverse("admin:index"):
            found.append(f"{label}: change page of {pk} answers {page.status_code}")
    for pk in matrix["x_pks"][model]:
        own = client.get(url(model, "change", pk))
        if own.status_code == 200:  # X's researcher may not see every row made for X
            found += choice_problems(own.context, y_pks, f"{label} {pk}")
            found += marker_problems(own.content.decode(), markers, f"{label} {pk}")
    add = client.get(url(model, "add"))
    if add.status_code == 200:
        found += choice_problems(add.context, y_pks, f"{label} add form")
        found += marker_problems(add.content.decode(), markers, f"{label} add form")
    return found


def test_the_study_form_offers_only_own_objects_and_staff_researchers(
    matrix: dict[str, Any],
) -> None:
    client = signed_in(matrix["x"], matrix["x_secret"])
    form = client.get(url(Study, "add")).context["adminform"].form
    researchers = set(form.fields["researchers"].queryset)
    assert researchers == {matrix["x"]}  # not the participant, not Y's researcher
    consent_forms = form.fields["consent_form"].queryset
    assert {f.study.slug for f in consent_forms} == {"xenon"}
    # A superuser picks among every staff account, never a participant.
    superuser = ResearcherFactory.create(username="root@example.org", is_superuser=True)
    everyone = signed_in(superuser).get(url(Study, "add")).context["adminform"].form
    picked = set(everyone.fields["researchers"].queryset)
    assert {matrix["x"], matrix["y"], superuser} <= picked
    assert not any(user.is_staff is False for user in picked)
    assert not matrix["x_participants"] & picked


def test_the_user_admin_lists_only_the_researchers_own_studies(matrix: dict[str, Any]) -> None:
    client = signed_in(matrix["x"], matrix["x_secret"])
    page = client.get(url(User, "changelist"))
    shown = set(page.context["cl"].queryset)
    assert shown == {matrix["x"], *matrix["x_participants"]}
    assert "ypsilon-lead@example.org" not in page.content.decode()


def test_a_superuser_sees_both_studies(matrix: dict[str, Any]) -> None:
    superuser = ResearcherFactory.create(username="root@example.org", is_superuser=True)
    client = signed_in(superuser)
    for model in (Study, Participant, Evaluation, Authenticator):
        shown = set(client.get(url(model, "changelist")).context["cl"].queryset.values_list("pk"))
        assert len(shown) >= 2, model._meta.label
