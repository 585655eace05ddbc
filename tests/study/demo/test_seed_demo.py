"""``seed_demo`` creates the demo study with participants at every stage, idempotently."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from study.models import Participant
from tests.study.helpers import grading_queued

pytestmark = pytest.mark.django_db(transaction=True)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    with grading_queued():
        call_command("seed_demo", "--json", *args)
    return json.loads(capsys.readouterr().out)


def test_demo_has_every_stage_and_both_arms(capsys: pytest.CaptureFixture[str]) -> None:
    summary = run(capsys)
    assert summary["study"] == "demo"
    by_name = {p["username"]: p for p in summary["participants"]}
    assert by_name["demo-invited"]["stage"] == "invited"
    assert by_name["demo-consented"]["stage"] == "consented"
    assert by_name["demo-waiting"]["stage"] == "waiting"
    for name, wanted in (("demo-ai-trial", "B"), ("demo-noai-trial", "A")):
        row = by_name[name]
        assert row["stage"] == "in_session"
        current = next(t for t in row["trials"] if t["status"] == "active")
        assert current["condition"] == wanted
        assert (current["ai_mode"] == "none") == (wanted == "A")
    assert all(
        p["login_url"].startswith("http") and "/study/enrolment/login/" in p["login_url"]
        for p in summary["participants"]
    )

    again = run(capsys)  # idempotent: same people, fresh one-time links
    assert Participant.objects.filter(study__slug="demo").count() == len(summary["participants"])
    assert again["participants"][0]["login_url"] != summary["participants"][0]["login_url"]


def test_completed_participants_go_through_the_whole_study(
    capsys: pytest.CaptureFixture[str],
) -> None:
    summary = run(capsys, "--completed", "1")
    done = [p for p in summary["participants"] if p["username"].startswith("demo-done-")]
    assert len(done) == 1
    assert done[0]["stage"] == "complete"
    assert all(t["status"] == "submitted" for t in done[0]["trials"])
    participant = Participant.objects.get(user__username="demo-done-01")
    assert participant.responses.count() == 1 + 4 + 1  # screening, four post-trial, post-study
    from study.vault.models import VaultEntry

    # Fake contact data exists, encrypted, and only in the vault.
    entry = VaultEntry.objects.get(internal_id=participant.internal_id)
    assert "@example.org" not in entry.ciphertext
