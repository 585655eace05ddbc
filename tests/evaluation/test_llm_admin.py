"""Model endpoints in the admin: researchers configure them and test their connection against a
local server speaking chat completions; the key is never shown. The LLM arm's records are
visible and read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.llm.units import plan_sweep
from evaluation.models import (
    AgentRequest,
    AgentRun,
    Dataset,
    ExpertRating,
    Intervention,
    ModelEndpoint,
    Sweep,
    TemplateStatus,
    TemplateValidation,
)
from tests.evaluation.grading_fixtures import CHEAP_TEMPLATE
from tests.llm_server import Fail, ScriptedLLM, Text

pytestmark = pytest.mark.django_db
KEY = "sk-admin-test-9f8e7d6c5b4a"


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_a_researcher_adds_an_endpoint_and_tests_its_connection(
    researcher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAI_ADMIN_TEST_KEY", KEY)
    client = signed_in(researcher)
    script = [Text("ready", usage=(12, 1)), Fail(401, "Incorrect API key provided: {key}.")]
    with ScriptedLLM(script) as llm:
        added = client.post(
            reverse("admin:evaluation_modelendpoint_add"),
            {
                "name": "local-gpt",
                "base_url": llm.base_url,
                "model": "gpt-local",
                "api_key_env": "HAI_ADMIN_TEST_KEY",
                "supports_tools": "on",
                "supports_usage": "on",
                "price_input_per_mtok": "2.5",
                "price_output_per_mtok": "10",
                "requests_per_minute": "0",
            },
        )
        assert added.status_code == 302, added.content
        endpoint = ModelEndpoint.objects.get(name="local-gpt")
        page = client.get(reverse("admin:evaluation_modelendpoint_change", args=[endpoint.pk]))
        check_url = reverse("admin:evaluation_modelendpoint_test_connection", args=[endpoint.pk])
        assert page.status_code == 200
        assert check_url in page.content.decode()
        assert "HAI_ADMIN_TEST_KEY is set" in page.content.decode()
        assert client.get(check_url).status_code == 405  # GET changes nothing and asks nothing
        assert llm.requests == []

        answered = client.post(check_url, follow=True)
        failed = client.post(check_url, follow=True)
    assert answered.redirect_chain[-1][0].endswith(f"/{endpoint.pk}/change/")
    [success] = messages_of(answered)
    assert success.startswith("Connection test of local-gpt: it answered “ready” in ")
    assert success.endswith("ms, using 12 prompt and 1 completion tokens (provider).")
    sent = llm.requests[0]
    assert (sent["model"], sent["max_tokens"], sent["stream"]) == ("gpt-local", 8, True)
    assert llm.authorizations[0] == f"Bearer {KEY}"
    [error] = messages_of(failed)
    assert error.startswith("Connection test of local-gpt failed after ")
    assert "The AI provider refused the platform's API key (HTTP 401)." in error
    assert "Incorrect API key provided: [redacted]" in error
    for response in (page, answered, failed):
        assert KEY not in response.content.decode()


def test_testing_a_connection_needs_the_change_permission_and_a_real_endpoint(
    researcher: Any,
) -> None:
    endpoint = ModelEndpoint.objects.create(name="x", base_url="http://127.0.0.1:9/v1", model="m")
    check_url = reverse("admin:evaluation_modelendpoint_test_connection", args=[endpoint.pk])
    assert Client().post(check_url).status_code == 302  # to the admin's login
    missing = reverse("admin:evaluation_modelendpoint_test_connection", args=[endpoint.pk + 1])
    assert signed_in(researcher).post(missing).status_code == 404
    researcher.groups.clear()
    researcher.is_staff = True
    researcher.save(update_fields=["is_staff"])
    assert signed_in(researcher).post(check_url).status_code == 403


def test_the_llm_arms_records_are_visible_and_read_only(researcher: Any) -> None:
    endpoint = ModelEndpoint.objects.create(name="e", base_url="http://127.0.0.1:9/v1", model="m")
    sweep = plan_sweep(
        endpoint=endpoint, condition="C1", instances=[(CHEAP_TEMPLATE, 1)], samples=1, attempts=2
    )
    run = AgentRun.objects.get(sweep=sweep)
    AgentRequest.objects.create(
        run=run,
        index=0,
        status="ok",
        messages=[],
        reply="hi",
        prompt_tokens=5,
        usage_source="provider",
    )
    Intervention.objects.create(
        run=run, category="dependency", source="manual", message="numpy is not installed."
    )
    client = signed_in(researcher)
    for model in (
        Dataset,
        Sweep,
        AgentRun,
        AgentRequest,
        Intervention,
        TemplateValidation,
        TemplateStatus,
        ExpertRating,
    ):
        name = model._meta.model_name
        assert client.get(reverse(f"admin:evaluation_{name}_changelist")).status_code == 200, name
        assert client.get(reverse(f"admin:evaluation_{name}_add")).status_code == 403, name
    page = client.get(reverse("admin:evaluation_agentrun_change", args=[run.pk]))
    assert page.status_code == 200
    assert "numpy is not installed." in page.content.decode()
    assert 'name="_save"' not in page.content.decode()  # a view, not a form
    change = client.post(reverse("admin:evaluation_agentrun_change", args=[run.pk]), {})
    assert change.status_code == 403
