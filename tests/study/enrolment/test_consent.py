"""Consent: immutable versions, recorded decisions, required boxes, typed names, re-consent."""

from __future__ import annotations

import hashlib

import pytest
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.urls import reverse

from study.enrolment.consent import (
    REQUIRED_CHECKBOX_MESSAGE,
    TYPED_NAME_MESSAGE,
    needs_consent,
    next_version_label,
    record_consent,
    render_consent,
    validate_checkboxes,
)
from study.enrolment.forms import ConsentDecisionForm
from study.models import ConsentEvent, ConsentForm, Participant
from study.vault import crypto
from study.vault.models import VaultEntry
from tests.study.fixtures_instruments import make_consent_form, make_participant, make_study

pytestmark = pytest.mark.django_db

ALL_REQUIRED = {"adult": True, "data_use": True}


@pytest.fixture
def study():
    return make_study()


@pytest.fixture
def form(study):
    consent_form = make_consent_form(study)
    study.consent_form = consent_form
    study.save(update_fields=["consent_form"])
    return consent_form


@pytest.fixture
def participant(study):
    return make_participant(study)


# --- Forms are immutable ------------------------------------------------------------------
def test_saving_a_changed_consent_form_raises(form):
    form.body_markdown += "\n\nA sneaky new paragraph."
    with pytest.raises(ValidationError, match="new version"):
        form.save()
    form.refresh_from_db()
    assert "sneaky" not in form.body_markdown


def test_saving_an_unchanged_form_is_allowed_and_keeps_its_hash(form):
    digest = form.content_sha256
    form.save()
    assert form.content_sha256 == digest == form.compute_hash()


def test_rendering_escapes_raw_html_and_shows_the_version(study):
    hostile = make_consent_form(
        study,
        "2.0",
        body_markdown="Hi <script>alert(1)</script> [x](javascript:alert(2))",
        irb_reference="IRB-7",
    )
    html = render_consent(hostile)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript' not in html
    assert "version 2.0" in html
    assert "IRB-7" in html
    assert render_consent(hostile) == html  # deterministic, so the hash is meaningful


# --- Recording decisions ------------------------------------------------------------------
def test_agree_records_version_hash_time_and_the_exact_text(participant, form):
    event = record_consent(
        participant, form, decision="agree", checkboxes={**ALL_REQUIRED, "public_code": True}
    )
    assert event.decision == ConsentEvent.Decision.AGREE
    assert event.form == form
    assert event.form_sha256 == form.content_sha256
    assert event.rendered_html == str(render_consent(form))
    assert event.rendered_sha256 == hashlib.sha256(event.rendered_html.encode()).hexdigest()
    assert event.checkboxes == {"adult": True, "data_use": True, "public_code": True}
    assert event.decided_at is not None
    assert not event.typed_name_given


def test_missing_required_checkbox_is_refused_with_a_message(participant, form):
    with pytest.raises(ValidationError) as caught:
        record_consent(participant, form, decision="agree", checkboxes={"adult": True})
    assert caught.value.message_dict == {"cb_data_use": [REQUIRED_CHECKBOX_MESSAGE]}
    assert not ConsentEvent.objects.exists()


def test_optional_checkbox_may_stay_unticked_and_unknown_ids_are_ignored(participant, form):
    event = record_consent(
        participant, form, decision="agree", checkboxes={**ALL_REQUIRED, "smuggled": True}
    )
    assert event.checkboxes == {"adult": True, "data_use": True, "public_code": False}


def test_decline_needs_no_ticks(participant, form):
    event = record_consent(participant, form, decision="decline", checkboxes={})
    assert event.decision == ConsentEvent.Decision.DECLINE
    assert needs_consent(participant)  # no agreement on record (the flow ends participation)


def test_double_submission_returns_the_first_event(participant, form):
    first = record_consent(participant, form, decision="agree", checkboxes=ALL_REQUIRED)
    again = record_consent(participant, form, decision="agree", checkboxes=ALL_REQUIRED)
    assert again.pk == first.pk
    assert ConsentEvent.objects.count() == 1


def test_ended_participant_cannot_record_a_new_decision(study, form):
    gone = make_participant(study, "p-gone", stage=Participant.Stage.WITHDRAWN)
    with pytest.raises(ValidationError, match="already ended"):
        record_consent(gone, form, decision="agree", checkboxes=ALL_REQUIRED)


def test_form_of_another_study_is_refused(participant):
    other = make_consent_form(make_study("other"))
    with pytest.raises(ValidationError, match="another study"):
        record_consent(participant, other, decision="agree", checkboxes=ALL_REQUIRED)


def test_unknown_decision_is_refused(participant, form):
    with pytest.raises(ValidationError, match="Unknown consent decision"):
        record_consent(participant, form, decision="maybe", checkboxes=ALL_REQUIRED)


# --- Typed-name mode ----------------------------------------------------------------------
@pytest.fixture
def typed_form(study):
    return make_consent_form(study, "1.1-typed", mode=ConsentForm.Mode.TYPED_NAME)


def vault_names() -> list[tuple[str, str]]:
    """Every typed consent name in the encrypted vault, with its participant's internal id."""
    return [
        (entry.internal_id, name)
        for entry in VaultEntry.objects.order_by("pk")
        for name in crypto.decrypt(entry.ciphertext).get("typed_consent_names", [])
    ]


@pytest.mark.parametrize("name", [None, "", "   ", "."])
def test_typed_name_mode_requires_a_name(participant, typed_form, name):
    with pytest.raises(ValidationError) as caught:
        record_consent(
            participant, typed_form, decision="agree", checkboxes=ALL_REQUIRED, typed_name=name
        )
    assert caught.value.message_dict == {"typed_name": [TYPED_NAME_MESSAGE]}
    assert vault_names() == []


def test_typed_name_goes_to_the_vault_never_to_research_tables(participant, typed_form):
    event = record_consent(
        participant,
        typed_form,
        decision="agree",
        checkboxes=ALL_REQUIRED,
        typed_name="  Ada Lovelace ",
    )
    assert vault_names() == [(participant.internal_id, "Ada Lovelace")]
    assert event.typed_name_given
    stored = ConsentEvent.objects.filter(pk=event.pk).values()[0]
    assert "Lovelace" not in repr(stored)


def test_a_vault_that_cannot_encrypt_records_nothing(participant, typed_form, settings):
    settings.VAULT_KEYS = "not-a-fernet-key"
    with pytest.raises(crypto.VaultKeyError):
        record_consent(
            participant, typed_form, decision="agree", checkboxes=ALL_REQUIRED, typed_name="Ada"
        )
    assert not ConsentEvent.objects.exists()


def test_declining_in_typed_name_mode_sends_no_name(participant, typed_form):
    record_consent(participant, typed_form, decision="decline", checkboxes={}, typed_name="Ada")
    assert vault_names() == []


# --- Re-consent ---------------------------------------------------------------------------
def test_needs_consent_until_agreeing_and_again_after_a_new_version(study, participant, form):
    assert needs_consent(participant)
    record_consent(participant, form, decision="agree", checkboxes=ALL_REQUIRED)
    assert not needs_consent(participant)

    newer = make_consent_form(study, next_version_label(form), body_markdown="Changed text.")
    assert newer.version == "1.1"
    study.consent_form = newer
    study.save(update_fields=["consent_form"])
    participant.refresh_from_db()
    assert needs_consent(participant)

    record_consent(participant, newer, decision="agree", checkboxes=ALL_REQUIRED)
    assert not needs_consent(participant)
    assert ConsentEvent.objects.filter(participant=participant).count() == 2  # both kept


def test_no_consent_needed_without_a_form_or_after_participation_ended(study):
    participant = make_participant(study)
    assert not needs_consent(participant)  # the study has no consent form yet
    study.consent_form = make_consent_form(study)
    study.save(update_fields=["consent_form"])
    done = make_participant(study, "p-done", stage=Participant.Stage.COMPLETE)
    assert not needs_consent(done)


# --- The participant form -----------------------------------------------------------------
def test_decision_form_enforces_required_boxes_only_for_agree(form):
    agree = ConsentDecisionForm(form, {"decision": "agree", "cb_adult": "on"})
    assert not agree.is_valid()
    assert agree.errors["cb_data_use"] == [REQUIRED_CHECKBOX_MESSAGE]
    decline = ConsentDecisionForm(form, {"decision": "decline"})
    assert decline.is_valid(), decline.errors


def test_decision_form_records_through_the_service(participant, form):
    data = {"decision": "agree", "cb_adult": "on", "cb_data_use": "on", "cb_public_code": "on"}
    decision = ConsentDecisionForm(form, data)
    assert decision.is_valid(), decision.errors
    event = decision.record(participant)
    assert event is not None
    assert event.checkboxes["public_code"] is True


def test_decision_form_in_typed_name_mode_has_a_name_field(typed_form):
    decision = ConsentDecisionForm(
        typed_form, {"decision": "agree", "cb_adult": "on", "cb_data_use": "on"}
    )
    assert "typed_name" in decision.fields
    assert not decision.is_valid()
    assert decision.errors["typed_name"] == [TYPED_NAME_MESSAGE]


def test_consent_page_shows_text_boxes_and_both_buttons(typed_form):
    decision = ConsentDecisionForm(typed_form, {"decision": "agree"})
    decision.is_valid()
    html = render_to_string(
        "study/consent.html",
        {
            "form": decision,
            "consent_form": typed_form,
            "consent_html": render_consent(typed_form),
            "action_url": "/consent/",
            "step_title": "Consent",
        },
    )
    assert "<h2>What we record</h2>" in html
    assert "<strong>code</strong>" in html
    assert 'name="cb_adult"' in html
    assert 'name="typed_name"' in html
    assert 'value="agree"' in html
    assert 'value="decline"' in html
    assert 'id="error-summary"' in html
    assert REQUIRED_CHECKBOX_MESSAGE in html


# --- Checkbox configuration ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("boxes", "fragment"),
    [
        ({"id": "a"}, "list"),
        ([{"id": "Bad Id", "label": "x"}], "lower-case"),
        ([{"id": "a", "label": ""}], "label"),
        ([{"id": "a", "label": "x"}, {"id": "a", "label": "y"}], "twice"),
        ([{"id": "a", "label": "x", "required": "yes"}], "true or false"),
        ([{"id": "a", "label": "x", "colour": "red"}], "unknown keys"),
    ],
)
def test_checkbox_configuration_is_validated(boxes, fragment):
    with pytest.raises(ValidationError, match=fragment):
        validate_checkboxes(boxes)


# --- Admin --------------------------------------------------------------------------------
def test_admin_consent_form_is_read_only_and_next_version_is_prefilled(
    client, admin_researcher, participant, form
):
    record_consent(participant, form, decision="agree", checkboxes=ALL_REQUIRED)
    client.force_login(admin_researcher)
    page = client.get(reverse("admin:study_consentform_change", args=[form.pk]))
    assert page.status_code == 200
    assert b'name="body_markdown"' not in page.content  # immutable: no editable fields
    assert b"What we record" in page.content  # the preview
    redirect = client.post(
        reverse("admin:study_consentform_changelist"),
        {"action": "create_next_version", "_selected_action": [form.pk]},
    )
    assert redirect.status_code == 302
    assert f"from={form.pk}" in redirect["Location"]
    add = client.get(redirect["Location"])
    assert b'value="1.1"' in add.content
    assert b"What we record" in add.content
    events = client.get(reverse("admin:study_consentevent_changelist"))
    assert events.status_code == 200
    event = ConsentEvent.objects.get()
    detail = client.get(reverse("admin:study_consentevent_change", args=[event.pk]))
    assert detail.status_code == 200
    assert b"&lt;h2&gt;" in detail.content


def test_admin_creates_a_consent_form_and_validates_checkboxes(client, admin_researcher, study):
    client.force_login(admin_researcher)
    url = reverse("admin:study_consentform_add")
    data = {
        "study": study.pk,
        "version": "9",
        "title": "T",
        "mode": "waiver",
        "irb_reference": "",
        "body_markdown": "Text",
        "checkboxes": '[{"id": "Bad Id"}]',
    }
    bad = client.post(url, data)
    assert bad.status_code == 200
    assert b"lower-case" in bad.content
    data["checkboxes"] = '[{"id": "adult", "label": "18+", "required": true}]'
    assert client.post(url, data).status_code == 302
    assert ConsentForm.objects.get(version="9").content_sha256
