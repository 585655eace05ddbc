"""``manage.py vault_dump``: the vault for compensation, only for holders of study.view_vault."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import CommandError

from study.enrolment.accounts import create_participants
from study.models import Study, User
from study.vault.models import VaultRead
from study.vault.services import add_external_id, store_contact


@pytest.fixture
def study(admin_researcher: User) -> Study:
    study = Study.objects.create(slug="pilot", title="Pilot study")
    for account in create_participants(study, 2, created_by=admin_researcher):
        internal_id = account.participant.internal_id
        store_contact(internal_id, study.slug, email=f"{account.username}@example.org")
        add_external_id(internal_id, study.slug, "PROLIFIC_PID", f"pid-{internal_id}")
    return study


@pytest.fixture
def coordinator(researcher: User) -> User:
    researcher.user_permissions.add(Permission.objects.get(codename="view_vault"))
    return researcher


def dump(*args: str) -> str:
    out = io.StringIO()
    call_command("vault_dump", *args, stdout=out)
    return out.getvalue()


def test_vault_dump_prints_json_with_pseudonymous_usernames(
    study: Study, coordinator: User
) -> None:
    records = json.loads(dump("--study", "pilot", "--json", "--user", coordinator.username))

    assert len(records) == 2
    participants = {p.internal_id: p.user.username for p in study.participants.all()}
    for record in records:
        assert record["username"] == participants[record["internal_id"]]
        assert record["email"] == f"{record['username']}@example.org"
        assert record["external_ids"] == {"PROLIFIC_PID": f"pid-{record['internal_id']}"}
        assert set(record) == {
            "internal_id", "username", "name", "email", "institution", "payment_notes",
            "external_ids", "typed_consent_names",
        }  # fmt: skip
    audit = VaultRead.objects.get()
    assert (audit.who, audit.study_slug, audit.purpose, audit.n_entries) == (
        coordinator.username,
        "pilot",
        "compensation",
        2,
    )


def test_vault_dump_prints_a_table_without_json(study: Study, coordinator: User) -> None:
    lines = dump("--study", "pilot", "--user", coordinator.username).splitlines()

    assert lines[0].split("\t")[:3] == ["internal_id", "username", "name"]
    assert len(lines) == 3


def test_vault_dump_needs_the_permission(study: Study, researcher: User) -> None:
    with pytest.raises(CommandError, match="may not read the vault") as refused:
        dump("--study", "pilot", "--json", "--user", researcher.username)

    assert refused.value.returncode == 1
    assert not VaultRead.objects.exists()


def test_vault_dump_with_an_unknown_user_is_a_usage_error(study: Study) -> None:
    with pytest.raises(CommandError, match="no user named") as refused:
        dump("--study", "pilot", "--json", "--user", "nobody")

    assert refused.value.returncode == 2


def test_vault_dump_with_an_unknown_study_is_a_usage_error(coordinator: User) -> None:
    with pytest.raises(CommandError, match="no study") as refused:
        dump("--study", "missing", "--json", "--user", coordinator.username)

    assert refused.value.returncode == 2
