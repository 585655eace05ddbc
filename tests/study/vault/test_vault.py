"""The contact vault: encrypted at rest, readable only with study.view_vault, every read audited."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test import Client
from django.urls import reverse

from study.models import Study, User
from study.vault.apps import _check_vault_keys
from study.vault.crypto import VaultDecryptError
from study.vault.models import ExternalIdDigest, VaultEntry, VaultRead
from study.vault.services import (
    add_external_id,
    add_typed_consent_name,
    delete_contact,
    find_internal_id,
    read_vault,
    rotate_vault_keys,
    store_contact,
)

ROOT = Path(__file__).resolve().parents[3]
EMAIL = "ada.lovelace@example.org"


def grant_vault_permission(user: User) -> User:
    user.user_permissions.add(Permission.objects.get(codename="view_vault"))
    return User.objects.get(pk=user.pk)  # fresh object: permissions are cached per instance


def raw_table_text(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
        return "\n".join(str(value) for row in cursor.fetchall() for value in row)


@pytest.fixture
def study(db: None) -> Study:
    return Study.objects.create(slug="pilot", title="Pilot study")


@pytest.fixture
def reader(researcher: User) -> User:
    return grant_vault_permission(researcher)


def test_ciphertext_does_not_contain_the_email(study: Study) -> None:
    store_contact("a1b2c3d4e5f60718", study.slug, name="Ada Lovelace", email=EMAIL)

    entry = VaultEntry.objects.get(internal_id="a1b2c3d4e5f60718")
    dump = raw_table_text(VaultEntry._meta.db_table)
    for secret in (EMAIL, "ada.lovelace", "Lovelace"):
        assert secret not in entry.ciphertext
        assert secret not in dump


def test_store_contact_merges_fields(study: Study, reader: User) -> None:
    store_contact("0000000000000001", study.slug, name="Ada Lovelace")
    store_contact("0000000000000001", study.slug, email=EMAIL, payment_notes="voucher")

    [row] = read_vault(reader, study.slug, "test")

    assert row["name"] == "Ada Lovelace"
    assert row["email"] == EMAIL
    assert row["payment_notes"] == "voucher"
    assert row["institution"] == ""


def test_store_contact_rejects_unknown_fields(study: Study) -> None:
    with pytest.raises(TypeError, match="phone"):
        store_contact("0000000000000001", study.slug, phone="123")


def test_external_ids_and_typed_consent_names_are_kept(study: Study, reader: User) -> None:
    add_external_id("0000000000000001", study.slug, "PROLIFIC_PID", "5f1e0c0ffee")
    add_typed_consent_name("0000000000000001", "Ada Lovelace")

    [row] = read_vault(reader, study.slug, "test")

    assert row["external_ids"] == {"PROLIFIC_PID": "5f1e0c0ffee"}
    assert row["typed_consent_names"] == ["Ada Lovelace"]
    assert find_internal_id(study.slug, "5f1e0c0ffee") == "0000000000000001"
    assert find_internal_id("another-study", "5f1e0c0ffee") is None


def test_reading_needs_the_vault_permission(study: Study, researcher: User) -> None:
    store_contact("0000000000000001", study.slug, email=EMAIL)

    with pytest.raises(PermissionDenied):
        read_vault(researcher, study.slug, "compensation")

    assert not VaultRead.objects.exists()


def test_every_read_is_audited(study: Study, reader: User) -> None:
    store_contact("0000000000000001", study.slug, email=EMAIL)
    store_contact("0000000000000002", study.slug, email="grace@example.org")

    rows = read_vault(reader, study.slug, "session 1 compensation")

    assert [row["email"] for row in rows] == [EMAIL, "grace@example.org"]
    audit = VaultRead.objects.get()
    assert (audit.who, audit.study_slug, audit.purpose, audit.n_entries) == (
        reader.username,
        "pilot",
        "session 1 compensation",
        2,
    )


def test_a_read_needs_a_purpose(study: Study, reader: User) -> None:
    with pytest.raises(ValueError, match="purpose"):
        read_vault(reader, study.slug, "  ")


def test_withdrawal_deletes_the_entry_and_its_lookup(study: Study) -> None:
    add_external_id("0000000000000001", study.slug, "PROLIFIC_PID", "5f1e0c0ffee")

    assert delete_contact("0000000000000001") is True

    assert not VaultEntry.objects.exists()
    assert not ExternalIdDigest.objects.exists()
    assert find_internal_id(study.slug, "5f1e0c0ffee") is None
    assert delete_contact("0000000000000001") is False


def test_key_rotation_with_multifernet(study: Study, reader: User, settings: Any) -> None:
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.VAULT_KEYS = [old_key]
    add_external_id("0000000000000001", study.slug, "PROLIFIC_PID", "5f1e0c0ffee")
    store_contact("0000000000000001", study.slug, email=EMAIL)
    before = VaultEntry.objects.get().ciphertext

    settings.VAULT_KEYS = [new_key, old_key]  # 1. add the new key first
    assert read_vault(reader, study.slug, "rotation check")[0]["email"] == EMAIL
    assert find_internal_id(study.slug, "5f1e0c0ffee") == "0000000000000001"
    assert rotate_vault_keys() == 1  # 2. re-encrypt under it

    settings.VAULT_KEYS = [new_key]  # 3. drop the old key
    assert VaultEntry.objects.get().ciphertext != before
    assert read_vault(reader, study.slug, "rotation check")[0]["email"] == EMAIL
    assert find_internal_id(study.slug, "5f1e0c0ffee") == "0000000000000001"

    settings.VAULT_KEYS = [old_key]
    with pytest.raises(VaultDecryptError):
        read_vault(reader, study.slug, "rotation check")


@pytest.mark.parametrize("keys", [[], ["not-a-fernet-key"]])
def test_missing_or_malformed_keys_fail_the_system_check(keys: list[str], settings: Any) -> None:
    settings.VAULT_KEYS = keys

    [error] = _check_vault_keys()

    assert error.id == "vault.E001"
    assert "VAULT_KEYS" in error.msg


def _production_check(**extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "HAIEVAL_")) and k not in {"VAULT_KEYS", "REDIS_URL"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(45)[:60],
        DJANGO_ALLOWED_HOSTS="x",
        HAIEVAL_VAR_DIR=str(ROOT / "var" / "test-settings"),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_vault_keys() -> None:
    result = _production_check()

    assert result.returncode == 1
    assert "VAULT_KEYS is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_production_refuses_a_malformed_vault_key() -> None:
    result = _production_check(VAULT_KEYS="too-short")

    assert result.returncode == 1
    assert "VAULT_KEYS entry 1 is not a Fernet key" in result.stderr
    assert "too-short" not in result.stderr


# --- Admin ------------------------------------------------------------------------------------
def test_vault_admin_lists_metadata_only(study: Study, admin_researcher: User) -> None:
    store_contact("0000000000000001", study.slug, email=EMAIL)
    client = Client()
    client.force_login(admin_researcher)

    response = client.get(reverse("admin:vault_vaultentry_changelist"))

    assert response.status_code == 200
    assert b"0000000000000001" in response.content
    assert EMAIL.encode() not in response.content
    assert VaultEntry.objects.get().ciphertext.encode() not in response.content


def test_admin_read_view_needs_the_permission(study: Study, researcher: User) -> None:
    client = Client()
    client.force_login(researcher)

    assert client.get(reverse("admin:vault_vaultentry_read")).status_code == 403
    assert client.get(reverse("admin:vault_vaultentry_changelist")).status_code == 403


def test_admin_read_view_shows_contacts_and_records_the_read(
    study: Study, admin_researcher: User
) -> None:
    store_contact("0000000000000001", study.slug, email=EMAIL)
    client = Client()
    client.force_login(admin_researcher)

    form = client.get(reverse("admin:vault_vaultentry_read"))
    assert EMAIL.encode() not in form.content
    assert not VaultRead.objects.exists()

    response = client.post(
        reverse("admin:vault_vaultentry_read"),
        {"study_slug": "pilot", "purpose": "pay session 1"},
    )

    assert response.status_code == 200
    assert EMAIL.encode() in response.content
    assert VaultRead.objects.get().who == admin_researcher.username
