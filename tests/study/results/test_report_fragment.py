"""The report body as an htmx fragment (what the workspace and the upload page load after
grading): the same body as the page, without hidden tests or the plot, and the same rules."""

from __future__ import annotations

import pytest

from study.models import Participant, Study, Trial
from tests.study.results.report_helpers import (
    HIDDEN_MESSAGE,
    HIDDEN_NAME,
    VISIBLE_NAME,
    add_trial,
    fake_report,
    fragment,
    page,
    participant_client,
    researcher_client,
)

pytestmark = pytest.mark.django_db


# --- The htmx fragment --------------------------------------------------------------------
def test_fragment_is_the_report_body_without_hidden_tests_or_plot(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A", report=fake_report(overall=False))
    client = participant_client(amber)
    response = fragment(client, trial)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html  # a fragment, not a page
    assert "<body" not in html
    assert VISIBLE_NAME in html
    assert HIDDEN_NAME not in html
    assert "perf_hidden_large" not in html
    assert HIDDEN_MESSAGE not in html
    assert "Hidden tests" in html
    assert "Not passed" in html
    assert "4 of 5 checks passed" in html  # what the workspace's browser test waits for
    assert "Time check: <strong>passed</strong>" in html  # the efficiency sentence stays ...
    assert "data-figure" not in html  # ... but the plot (plotly) is only on the full page
    assert "plotly" not in html
    assert f'href="/study/results/trials/{trial.pk}/report/"' in html


def test_page_and_fragment_share_the_report_body(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A")
    client = participant_client(amber)
    page_html = page(client, trial).content.decode()
    fragment_html = fragment(client, trial).content.decode()
    for marker in ('<h2 class="h5">Tests you could see</h2>', "Hidden tests", "Partial pass"):
        assert marker in page_html
        assert marker in fragment_html
    tests = fragment_html[fragment_html.index("<table") : fragment_html.index("</table>")]
    assert tests in page_html
    assert 'data-figure="figure-efficiency"' in page_html


def test_fragment_of_another_participants_trial_is_a_404(
    amber: Participant, blue: Participant
) -> None:
    theirs = add_trial(blue, 1, "A")
    client = participant_client(amber)
    assert fragment(client, theirs).status_code == 404
    assert fragment(client, Trial(pk=999_999)).status_code == 404  # missing == not yours
    researcher = researcher_client(amber.study)  # a researcher is not the participant
    assert fragment(researcher, theirs).status_code == 404


def test_fragment_follows_the_release_policy_like_the_page(
    study: Study, amber: Participant
) -> None:
    queued = add_trial(amber, 1, "A", evaluation_status="queued")
    client = participant_client(amber)
    response = fragment(client, queued)
    assert response.status_code == 403
    html = response.content.decode().strip()
    assert html == '<p class="report-unavailable">Your solution is still being graded.</p>'

    Study.objects.filter(pk=study.pk).update(report_release=Study.ReleasePolicy.AFTER_SESSION)
    done = add_trial(amber, 2, "B")
    response = fragment(client, done)
    assert response.status_code == 403
    assert "finished this session" in response.content.decode()
    Participant.objects.filter(pk=amber.pk).update(stage=Participant.Stage.WAITING)
    assert fragment(client, done).status_code == 200

    Study.objects.filter(pk=study.pk).update(report_release=Study.ReleasePolicy.NEVER)
    response = fragment(client, done)
    assert response.status_code == 403
    assert "does not show score reports" in response.content.decode()
    assert page(client, done).status_code == 403  # the page agrees


def test_fragment_only_answers_get(amber: Participant) -> None:
    trial = add_trial(amber, 1, "A")
    client = participant_client(amber)
    response = client.post(f"/study/results/trials/{trial.pk}/report/fragment/")
    assert response.status_code == 405
