"""The Content-Security-Policy: every page sends it, it allows no inline script and no eval, our
templates need neither, and the browser tests' check of violations (the ``page`` fixture) works.

The pages that run the most script (the Monaco workspace, the live monitor, the report with its
Plotly figure) are checked by their own browser tests, whose ``page`` fails on any violation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

from study.models import Participant, Study
from tests.factories import ResearcherFactory, UserFactory
from tests.study.factories_study import make_participant, make_study
from tests.study.results.report_helpers import add_trial, fake_report
from tests.study.results.test_monitor_browser import sign_in

TEMPLATES = Path(settings.BASE_DIR) / "templates"
SAMPLE = {"int": "1", "uuid": "00000000-0000-0000-0000-000000000000"}
# Regular-expression routes, which cannot be filled in mechanically: one path for each.
REGEX_SAMPLES = ["/admin/study/", "/admin/no-such-page/", "/no-such-page/"]


def route_paths(patterns: list[Any], prefix: str = "") -> Iterator[str]:
    """One concrete path per route of the URL configuration (sample values for parameters)."""
    for entry in patterns:
        if not isinstance(entry.pattern, RoutePattern):
            continue
        route = re.sub(
            r"<(?:(\w+):)?\w+>",
            lambda match: SAMPLE.get(match.group(1) or "str", "x"),
            str(entry.pattern),
        )
        if isinstance(entry, URLResolver):
            yield from route_paths(entry.url_patterns, prefix + route)
        elif isinstance(entry, URLPattern):
            yield "/" + prefix + route


def directives(header: str) -> dict[str, list[str]]:
    parts = (part.split() for part in header.split(";") if part.strip())
    return {words[0]: words[1:] for words in parts}


def test_the_walk_reaches_every_app() -> None:
    paths = set(route_paths(get_resolver().url_patterns))
    assert len(paths) > 100
    for start in ("/admin/", "/accounts/", "/study/", "/ide/", "/healthz/"):
        assert any(path.startswith(start) for path in paths), start


@pytest.mark.timeout(300)
@pytest.mark.django_db
def test_every_page_sends_the_policy() -> None:
    paths = sorted({*route_paths(get_resolver().url_patterns), *REGEX_SAMPLES})
    anonymous = Client()
    staff = Client()
    staff.force_login(ResearcherFactory.create(is_superuser=True))
    missing = []
    for client in (anonymous, staff):
        for path in paths:
            response = client.get(path)
            if "Content-Security-Policy" not in response:
                missing.append(f"{path} ({response.status_code})")
    assert missing == []


def test_the_policy_allows_no_inline_script_and_no_eval() -> None:
    response = Client().get("/healthz/")
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert set(policy["worker-src"]) == {"'self'", "blob:"}  # Monaco's workers
    assert "'unsafe-inline'" in policy["style-src"]  # Monaco and Plotly set styles


def test_our_templates_have_no_inline_script() -> None:
    """Scripts are static files; htmx's ``hx-on`` and ``on...=`` attributes are inline script
    too, and a JSON data block is not script."""
    offences = []
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'type="application/json"' not in tag:
                offences.append(f"{template.relative_to(TEMPLATES)}: {tag}")
        for attribute in re.findall(r"\s(hx-on[\w:-]*|on[a-z]+)\s*=", text):
            offences.append(f"{template.relative_to(TEMPLATES)}: {attribute}=")
    assert offences == []


def test_htmx_runs_without_eval() -> None:
    base = (TEMPLATES / "base.html").read_text(encoding="utf-8")
    assert '<meta name="htmx-config"' in base
    assert "&quot;allowEval&quot;: false" in base


@pytest.mark.browser
@pytest.mark.timeout(method="thread")
def test_the_browser_refuses_an_inline_script_and_the_check_notices(
    live_server: Any, page: Any, csp_violations: list[str]
) -> None:
    page.goto(live_server.url + "/")
    page.evaluate(
        """() => {
          const script = document.createElement("script");
          script.textContent = "window.inlineRan = true;";
          document.body.append(script);
        }"""
    )
    page.wait_for_timeout(200)
    assert page.evaluate("window.inlineRan") is None
    assert any("script-src" in text for text in csp_violations), csp_violations
    csp_violations.clear()  # the violation was the point; the fixture fails on any other


@pytest.mark.browser
@pytest.mark.timeout(method="thread")
def test_htmx_refuses_eval_in_the_browser(live_server: Any, page: Any) -> None:
    page.goto(live_server.url + "/")
    page.wait_for_function("window.htmx !== undefined")
    assert page.evaluate("window.htmx.config.allowEval") is False
    assert page.evaluate("window.htmx.config.allowScriptTags") is False


@pytest.mark.browser
@pytest.mark.timeout(method="thread")
@pytest.mark.django_db(transaction=True)
def test_the_report_draws_its_figure_under_the_policy(live_server: Any, page: Any) -> None:
    """Plotly draws the efficiency figure of the full report (the ``page`` fixture fails on any
    violation, the workspace's and the monitor's browser tests do the same for theirs)."""
    study = make_study(report_release=Study.ReleasePolicy.IMMEDIATELY)
    amber = make_participant(
        study,
        user=UserFactory(username="p-amber-fox"),
        stage=Participant.Stage.IN_SESSION,
        session_index=1,
    )
    trial = add_trial(amber, 1, "A", slug="sde-binary-palindromes", report=fake_report())
    sign_in(page, live_server, amber.user)
    page.goto(f"{live_server.url}/study/results/trials/{trial.pk}/report/")
    page.wait_for_selector(".plotly-figure .main-svg")


@pytest.mark.browser
@pytest.mark.timeout(method="thread")
@pytest.mark.django_db(transaction=True)
def test_the_admin_scripts_run_under_the_policy(live_server: Any, page: Any) -> None:
    """The study form's researchers picker is built by the admin's SelectFilter2.js, its inlines
    by inlines.js: both static files, so they run (and nothing is refused)."""
    sign_in(page, live_server, ResearcherFactory.create(is_superuser=True))
    page.goto(f"{live_server.url}/admin/study/study/add/")
    page.wait_for_selector("#id_researchers_from")  # made by SelectFilter2.js
    page.wait_for_selector(".add-row a")  # inlines.js's "Add another"
