"""Expert review over HTTP: researchers read an instance as a participant sees it, rate it on
the four criteria, and read the reviewers' kappa with the template's validation status."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation.bank import load_template
from evaluation.instances import get_instance
from evaluation.models import ExpertRating, TemplateStatus
from study.models import User
from tests.factories import ResearcherFactory, UserFactory
from tests.test_house_rules import assert_gets_change_nothing

pytestmark = pytest.mark.django_db

CHEAP = "sde-binary-palindromes"
CRITERIA = ("requirement_clarity", "code_framework", "difficulty", "collaboration")


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _rate(client: Client, base: str, seed: int, fails: tuple[str, ...] = ()) -> None:
    form = {c: "fail" if c in fails else "pass" for c in CRITERIA}
    form |= {f"{c}-comment": f"seed {seed} {c}" for c in fails}
    response = client.post(f"{base}{seed}/", form)
    assert response.status_code == 302, response.content.decode()[:500]


def test_reviewers_rate_instances_and_read_their_agreement() -> None:
    version = load_template(CHEAP).version
    base = f"/study/reviews/{CHEAP}/{version}/"
    first, second, third = (_client(ResearcherFactory.create()) for _ in range(3))

    page = first.get(base + "1/").content.decode()
    instance = get_instance(CHEAP, 1)
    assert instance.participant_files["README.md"].splitlines()[0].lstrip("# ") in page
    assert f"{base}1/files/legacy_codes.py" in page
    assert "Efficient reference" not in page  # never the references or the hidden tests
    download = first.get(base + "1/files/solution.py")
    assert download.content.decode() == instance.participant_files["solution.py"]
    assert first.get(base + "1/files/test_hidden.py").status_code == 404
    assert first.get(f"/study/reviews/{CHEAP}/0.0.1/1/").status_code == 404

    incomplete = first.post(base + "1/", {"requirement_clarity": "pass"})
    assert incomplete.status_code == 400
    assert "Judge every criterion" in incomplete.content.decode()
    assert not ExpertRating.objects.exists()

    _rate(first, base, 1)
    _rate(first, base, 2, fails=("collaboration",))
    _rate(second, base, 1)
    _rate(second, base, 2, fails=("difficulty", "collaboration"))
    _rate(third, base, 1, fails=("requirement_clarity",))  # fewer in common: not the pair
    _rate(first, base, 1)  # rating again replaces, never duplicates
    assert ExpertRating.objects.count() == 5 * 4
    comment = ExpertRating.objects.get(instance__seed=2, criterion="difficulty", passed=False)
    assert comment.comment == "seed 2 difficulty"

    TemplateStatus.objects.create(slug=CHEAP, version=version, status="accepted")
    summary = first.get(base + "summary/").content.decode()
    # Pooled over 2 instances x 4 criteria: p_o = 7/8, p_e = 7/8 * 6/8 + 1/8 * 2/8 = 44/64,
    # kappa = (56/64 - 44/64) / (20/64) = 0.60. Difficulty: p_o = 1/2, p_e = 1/2, kappa 0.
    # Collaboration: both failed seed 2, kappa 1; the other two: one category everywhere, 1.
    assert '<strong id="kappa-overall">0.60</strong>\n      (moderate)' in summary
    assert (
        "<td>Difficulty consistency</td>\n            <td>2</td>\n            <td>0.00</td>"
        in summary
    )
    assert summary.count("<td>1.00</td>") == 3
    assert "on the 2 instance(s) both rated" in summary
    assert "Not accepted by both" in summary
    assert '<strong id="validation-status">accepted</strong>' in summary
    assert "0 of 1 templates" in summary  # its first reviewed version was not accepted

    index = first.get("/study/reviews/").content.decode()
    assert f"{base}summary/" in index
    assert_gets_change_nothing(
        first, ["/study/reviews/", base, base + "1/", base + "summary/", base + "1/files/README.md"]
    )


def test_review_pages_are_for_researchers_with_the_review_permissions() -> None:
    version = load_template(CHEAP).version
    base = f"/study/reviews/{CHEAP}/{version}/"
    participant = _client(UserFactory.create())
    assert participant.get("/study/reviews/").status_code == 403
    staff = UserFactory.create(username="staff-without-group")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    outsider = _client(staff)
    assert outsider.get(base + "1/").status_code == 403
    assert outsider.post(base + "1/", {c: "pass" for c in CRITERIA}).status_code == 403
    assert Client().get("/study/reviews/").status_code == 302  # to the sign-in page
    assert not ExpertRating.objects.exists()
