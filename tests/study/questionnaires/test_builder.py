"""The questionnaire builder: its checks, publishing, copying, and the admin pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from study.models import Item
from study.questionnaires.builder import is_frozen, item_problems, version_problems
from study.questionnaires.services import copy_version, publish_version, save_response
from tests.study.fixtures_instruments import (
    make_participant,
    make_study,
    make_version,
)

pytestmark = pytest.mark.django_db


# --- Builder ------------------------------------------------------------------------------
def test_item_problems_explain_bad_configuration():
    assert "choices" in item_problems(Item(key="a", type="single", choices=[]))
    assert "choices" in item_problems(Item(key="a", type="likert5", choices=[{"x": 1}]))
    assert "max_value" in item_problems(Item(key="a", type="number", min_value=5, max_value=1))
    assert "show_if" in item_problems(Item(key="a", type="short_text", show_if={"item": "a"}))
    assert item_problems(Item(key="a", type="likert7", choices=[{"low": "L", "high": "H"}])) == {}


def test_publish_checks_order_of_conditions_and_freezes():
    draft = make_version(
        [
            {"key": "later", "type": "short_text", "show_if": {"item": "first", "in": ["x"]}},
            {"key": "first", "type": "short_text"},
        ],
        slug="draft",
        published=False,
    )
    assert any("earlier item" in p for p in version_problems(draft))
    with pytest.raises(ValueError, match="earlier item"):
        publish_version(draft)
    Item.objects.filter(version=draft, key="first").update(order=0)
    publish_version(draft)
    draft.refresh_from_db()
    assert draft.published
    assert is_frozen(draft)


def test_copy_version_makes_an_editable_draft_with_the_same_items(all_types):
    draft = copy_version(all_types)
    assert draft.version == 2
    assert not draft.published
    assert not is_frozen(draft)
    assert list(draft.items.values_list("key", "type", "choices")) == list(
        all_types.items.values_list("key", "type", "choices")
    )


# --- Admin builder ------------------------------------------------------------------------
def test_admin_pages_open_and_published_items_are_read_only(client, admin_researcher, all_types):
    client.force_login(admin_researcher)
    for name in ("questionnaire", "questionnaireversion", "response"):
        assert client.get(reverse(f"admin:study_{name}_changelist")).status_code == 200
    page = client.get(reverse("admin:study_questionnaireversion_change", args=[all_types.pk]))
    assert page.status_code == 200
    assert b"Published: frozen" in page.content
    assert b'name="items-0-key"' not in page.content  # inline shown read-only


def test_admin_draft_items_are_editable_and_publish_action_freezes(
    client, admin_researcher, all_types
):
    client.force_login(admin_researcher)
    draft = copy_version(all_types)
    page = client.get(reverse("admin:study_questionnaireversion_change", args=[draft.pk]))
    assert b'name="items-0-key"' in page.content
    response = client.post(
        reverse("admin:study_questionnaireversion_changelist"),
        {"action": "publish", "_selected_action": [draft.pk]},
    )
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.published


def test_admin_response_page_shows_answers_and_scores(client, admin_researcher, all_types):
    participant = make_participant(make_study())
    response = save_response(participant, all_types, {"agree5": 4, "nick": "fox"})
    client.force_login(admin_researcher)
    page = client.get(reverse("admin:study_response_change", args=[response.pk]))
    assert page.status_code == 200
    assert b"fox" in page.content


def _builder_post(draft, items: list[dict[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "questionnaire": draft.questionnaire_id,
        "version": draft.version,
        "intro": "",
        "items-TOTAL_FORMS": len(items),
        "items-INITIAL_FORMS": 0,
        "items-MIN_NUM_FORMS": 0,
        "items-MAX_NUM_FORMS": 1000,
    }
    for n, item in enumerate(items):
        fields = {"order": n, "required": "on", "choices": "[]", "show_if": "{}", **item}
        data.update({f"items-{n}-{k}": v for k, v in fields.items()})
    return data


def test_admin_builder_rejects_bad_items_with_messages(client, admin_researcher, conditional):
    Item.objects.filter(version=conditional).delete()
    conditional.published = False
    conditional.save(update_fields=["published"])
    client.force_login(admin_researcher)
    url = reverse("admin:study_questionnaireversion_change", args=[conditional.pk])
    bad = [
        {"key": "pick", "type": "single", "text": "Pick"},
        {
            "key": "later",
            "type": "short_text",
            "text": "T",
            "show_if": '{"item": "nowhere", "in": ["x"]}',
        },
    ]
    page = client.post(url, _builder_post(conditional, bad))
    assert page.status_code == 200
    assert b"List the options" in page.content
    assert b"must name an earlier item" in page.content
    good = [
        {
            "key": "pick",
            "type": "single",
            "text": "Pick",
            "choices": '[{"value": "a", "label": "A"}]',
        },
        {
            "key": "later",
            "type": "short_text",
            "text": "T",
            "show_if": '{"item": "pick", "in": ["a"]}',
        },
    ]
    assert client.post(url, _builder_post(conditional, good)).status_code == 302
    assert list(conditional.items.values_list("key", flat=True)) == ["pick", "later"]
    duplicate = [
        {"key": "x", "type": "short_text", "text": "A"},
        {"key": "x", "type": "short_text", "text": "B"},
    ]
    page = client.post(url, _builder_post(conditional, duplicate))
    assert page.status_code == 200
    assert b"duplicate" in page.content
