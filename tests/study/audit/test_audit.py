"""The audit log: a gapless hash chain that ``verify_audit`` checks, rows that cannot be changed,
and the audited actions (vault reads, exclusions, configuration changes, report releases,
assignment). Withdrawal events are in test_withdrawal.py, purge events in test_purge_expired.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse

from study.audit import log as audit
from study.audit.retention import close_study
from study.journey.services import exclude
from study.models import AuditEvent, Participant, RetentionPolicy, Study, User
from study.models.audit import GENESIS_HASH, AuditImmutableError
from study.vault.services import read_vault, store_contact
from tests.factories import ResearcherFactory
from tests.study.factories_study import make_participant, make_study
from tests.study.helpers import journey_study

pytestmark = pytest.mark.django_db
TABLE = "study_auditevent"
TRIGGER = "study_auditevent_append_only"


def on_postgresql_or_skip() -> None:
    if connection.vendor != "postgresql":
        reason = "needs PostgreSQL (DATABASE_URL=postgres://...)"
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)


def tamper(sql: str, params: list[Any]) -> None:
    """Run raw SQL against the log, past the PostgreSQL trigger (as a DBA could)."""
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute(f"ALTER TABLE {TABLE} DISABLE TRIGGER {TRIGGER}")
        cursor.execute(sql, params)
        if postgres:
            cursor.execute(f"ALTER TABLE {TABLE} ENABLE TRIGGER {TRIGGER}")


def json_param() -> str:
    return "%s::jsonb" if connection.vendor == "postgresql" else "%s"


def three_events() -> list[AuditEvent]:
    return [
        audit.record(
            audit.EXPORT, actor=None, object_type="study", object_id=n, details={"rows": n}
        )
        for n in (1, 2, 3)
    ]


def verify_command() -> str:
    out = io.StringIO()
    call_command("verify_audit", stdout=out)
    return out.getvalue()


# --- The chain ----------------------------------------------------------------------------
def test_events_form_a_chain_that_verifies() -> None:
    first, second, third = three_events()
    assert [first.seq, second.seq, third.seq] == [1, 2, 3]
    assert first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.hash
    assert third.prev_hash == second.hash
    assert audit.verify_chain() == audit.VerifyResult(True, 3, None, "", third.hash)
    assert verify_command().startswith("Audit chain intact: 3 events")


def test_an_empty_log_verifies() -> None:
    assert audit.verify_chain().ok
    assert verify_command().startswith("Audit chain intact: 0 events")


def test_hashes_survive_the_round_trip_through_the_database() -> None:
    event = audit.record(
        audit.EXPORT,
        actor=None,
        object_type="study",
        object_id="x",
        details={"b": [1.0, 0.25, 1e20, None, True], "a": {"z": "é", "y": 2}},
    )
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.compute_hash() == stored.hash == event.hash
    assert audit.verify_chain().ok


def test_a_tampered_row_is_detected_with_its_seq() -> None:
    three_events()
    tamper(f"UPDATE {TABLE} SET details = {json_param()} WHERE seq = 2", ['{"rows": 200}'])  # noqa: S608

    result = audit.verify_chain()
    assert (result.ok, result.first_bad_seq, result.n) == (False, 2, 1)
    assert "content does not match its hash" in result.reason
    with pytest.raises(CommandError, match="broken at seq 2") as excinfo:
        verify_command()
    assert excinfo.value.returncode == 1


def test_a_rewritten_row_with_a_recomputed_hash_breaks_the_next_link() -> None:
    three_events()
    forged = AuditEvent.objects.get(seq=2)
    forged.details = {"rows": 200}
    tamper(
        f"UPDATE {TABLE} SET details = {json_param()}, hash = %s WHERE seq = 2",  # noqa: S608
        [json.dumps(forged.details), forged.compute_hash()],
    )
    result = audit.verify_chain()
    assert (result.ok, result.first_bad_seq) == (False, 3)
    assert "prev_hash does not match the hash of event 2" in result.reason


def test_a_deleted_middle_row_is_detected() -> None:
    three_events()
    tamper(f"DELETE FROM {TABLE} WHERE seq = 2", [])  # noqa: S608
    result = audit.verify_chain()
    assert (result.ok, result.first_bad_seq) == (False, 2)
    assert "event 2 is missing" in result.reason


def test_a_deleted_first_row_is_detected() -> None:
    three_events()
    tamper(f"DELETE FROM {TABLE} WHERE seq = 1", [])  # noqa: S608
    assert audit.verify_chain().first_bad_seq == 1


def test_events_cannot_be_changed_or_deleted_through_django() -> None:
    event = three_events()[0]
    event.details = {"rows": 100}
    with pytest.raises(AuditImmutableError):
        event.save()
    with pytest.raises(AuditImmutableError):
        event.delete()
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.filter(seq=1).update(details={})
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.all().delete()
    copy = AuditEvent.objects.get(seq=1)
    copy._state.adding = True  # a forged "new" row with an existing primary key
    with pytest.raises(DatabaseError), transaction.atomic():
        copy.save()
    assert audit.verify_chain().ok


def test_the_postgresql_trigger_blocks_update_and_delete() -> None:
    on_postgresql_or_skip()
    three_events()
    for sql in (f"UPDATE {TABLE} SET actor_ref = 'x'", f"DELETE FROM {TABLE}"):  # noqa: S608
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
    assert AuditEvent.objects.count() == 3
    assert audit.verify_chain().ok


@pytest.mark.django_db(transaction=True)
def test_parallel_writers_keep_the_chain_gapless() -> None:
    on_postgresql_or_skip()
    threads_n, per_thread = 6, 5
    barrier = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            for i in range(per_thread):
                audit.record(
                    audit.EXPORT, actor=None, object_type="test", object_id=f"{n}-{i}", details={}
                )
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert audit.verify_chain() == audit.VerifyResult(
        True, threads_n * per_thread, None, "", AuditEvent.objects.order_by("-seq")[0].hash
    )


def test_details_refuse_free_text_and_non_json_values() -> None:
    with pytest.raises(ValueError, match="not free text"):
        audit.record(
            audit.EXCLUSION,
            actor=None,
            object_type="participant",
            object_id=1,
            details={"reason": "x" * 500},
        )
    with pytest.raises(TypeError):
        audit.record(
            audit.EXPORT, actor=None, object_type="study", object_id=1, details={"s": {1, 2}}
        )
    with pytest.raises(ValueError, match="Bad audit action"):
        audit.record("Drop Table", actor=None, object_type="study", object_id=1)
    assert not AuditEvent.objects.exists()


def test_actors_are_staff_participants_or_the_system(researcher: User) -> None:
    participant = make_participant(make_study())
    assert audit.actor_of(researcher) == ("staff", researcher.username)
    assert audit.actor_of(participant.user) == ("participant", participant.user.username)
    assert audit.actor_of(None) == ("system", "system")


# --- The admin ----------------------------------------------------------------------------
def test_admin_lists_verifies_and_exports_the_log(admin_client: Client) -> None:
    three_events()
    changelist = admin_client.get(reverse("admin:study_auditevent_changelist"))
    assert changelist.status_code == 200
    assert "Verify chain" in changelist.content.decode()
    page = admin_client.get(reverse("admin:study_auditevent_verify"))
    assert "Audit chain intact: 3 events" in page.content.decode()

    response = admin_client.get(reverse("admin:study_auditevent_export"))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["seq"] for row in rows] == ["1", "2", "3"]
    assert rows[1]["prev_hash"] == rows[0]["hash"]
    export = AuditEvent.objects.get(seq=4)
    assert (export.action, export.actor_ref, export.details["rows"]) == ("export", "admin", 3)

    tamper(f"UPDATE {TABLE} SET object_id = 'forged' WHERE seq = 1", [])  # noqa: S608
    page = admin_client.get(reverse("admin:study_auditevent_verify"))
    assert "Audit chain broken at seq 1" in page.content.decode()


def test_admin_action_exports_the_selected_events(admin_client: Client) -> None:
    events = three_events()
    response = admin_client.post(
        reverse("admin:study_auditevent_changelist"),
        {"action": "export_csv", "_selected_action": [events[0].pk, events[2].pk]},
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["seq"] for row in rows] == ["1", "3"]


def test_the_audit_log_is_hidden_from_researchers_without_the_permission(
    researcher: User,
) -> None:
    client = Client()
    client.force_login(researcher)
    assert client.get(reverse("admin:study_auditevent_verify")).status_code == 403
    assert client.get(reverse("admin:study_auditevent_export")).status_code == 403
    researcher.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    assert client.get(reverse("admin:study_auditevent_verify")).status_code == 200


# --- Audited actions ----------------------------------------------------------------------
def test_a_vault_read_is_audited_without_its_purpose(researcher: User) -> None:
    study = make_study()
    store_contact("00000000000000aa", study.slug, email="ada@example.org")
    researcher.user_permissions.add(Permission.objects.get(codename="view_vault"))
    reader = User.objects.get(pk=researcher.pk)
    read_vault(reader, study.slug, "compensation for Ada")
    event = AuditEvent.objects.get(action=audit.VAULT_READ)
    assert (event.actor_type, event.actor_ref) == ("staff", researcher.username)
    assert event.details["n_entries"] == 1
    assert "Ada" not in json.dumps(event.details)


def test_an_exclusion_is_audited_with_a_hash_of_the_reason(researcher: User) -> None:
    participant = make_participant(make_study())
    exclude(participant, "  technical failure ", by=researcher)
    event = AuditEvent.objects.get(action=audit.EXCLUSION)
    assert event.object_id == str(participant.pk)
    assert event.details["reason_sha256"] == audit.sha256_text("technical failure")
    assert event.details["stage_before"] == Participant.Stage.SCREENED


def test_assignment_is_audited_with_its_seed_and_plan() -> None:
    from study.assignment.services import assign_plan

    participant = make_participant(make_study())
    assignment = assign_plan(participant, rng_seed=42, create_trials=False)
    event = AuditEvent.objects.get(action=audit.ASSIGNMENT)
    assert event.actor_type == "system"
    assert event.details["seed"] == 42
    assert event.details["sequence"] == assignment.sequence
    assert event.details["tasks"] == assignment.tasks


def test_admin_configuration_changes_are_audited(admin_client: Client) -> None:
    study = journey_study(status=Study.Status.DRAFT)
    admin_client.post(
        reverse("admin:study_study_changelist"),
        {"action": "open_recruitment", "_selected_action": [study.pk]},
    )
    admin_client.post(
        reverse("admin:study_study_changelist"),
        {"action": "close_study", "_selected_action": [study.pk]},
    )
    changes = AuditEvent.objects.filter(action=audit.CONFIG_CHANGE, object_id=str(study.pk))
    assert [(e.details["status_before"], e.details["status"]) for e in changes] == [
        ("draft", "recruiting"),
        ("recruiting", "closed"),
    ]
    assert not AuditEvent.objects.filter(action=audit.REPORT_RELEASE).exists()


def test_closing_a_study_end_study_audits_the_report_release() -> None:
    study = make_study(status=Study.Status.RECRUITING, report_release=Study.ReleasePolicy.STUDY_END)
    staff = ResearcherFactory.create()
    assert close_study(study, actor=staff) is True
    assert close_study(study, actor=staff) is False  # already closed: nothing more
    release = AuditEvent.objects.get(action=audit.REPORT_RELEASE)
    assert release.details == {"study": study.slug, "policy": "study_end"}
    assert RetentionPolicy.objects.get(study=study).closed_at is not None
    assert audit.verify_chain().n == 2


def test_record_report_release_is_there_for_the_reports_page() -> None:
    study = make_study()
    event = audit.record_report_release(study, Study.ReleasePolicy.IMMEDIATELY, n_reports=3)
    assert event.details == {"study": study.slug, "policy": "immediately", "n_reports": 3}
