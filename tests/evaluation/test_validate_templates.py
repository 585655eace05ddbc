"""``manage.py validate_templates`` against a scripted chat-completions server: a baseline that
solves the task rejects the template; models that write garbage accept it; a later model that
solves it marks it compromised. Bad input exits 2 with a sentence."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.instances import get_instance
from evaluation.models import AgentRun, ModelEndpoint, TemplateStatus, TemplateValidation
from tests.evaluation.grading_fixtures import CHEAP_TEMPLATE, store_calibration
from tests.llm_server import ScriptedLLM, Tools

pytestmark = pytest.mark.django_db

VERSION = get_instance(CHEAP_TEMPLATE, 1).template.version
# One instance each keeps the test to the one calibrated seed; the thresholds still apply to
# the rates (1/1 is over both, 0/1 within).
SMALL = ("--templates", CHEAP_TEMPLATE, "--fidelity-instances", "1",
         "--generalisation-instances", "1")  # fmt: skip


def validate(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("validate_templates", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _solution(body: dict[str, Any]) -> str:
    """The efficient reference of the instance whose README the model was given."""
    text = json.dumps(body["messages"])
    for seed in range(1, 21):
        instance = get_instance(CHEAP_TEMPLATE, seed)
        if json.dumps(instance.participant_files["README.md"])[1:-1] in text:
            return instance.references["efficient"]["solution.py"]
    raise AssertionError("the request holds no instance's README")


def models(solvers: set[str]) -> Callable[[dict[str, Any]], Tools]:
    """Models named in ``solvers`` write the reference solution; the others write garbage.
    Each writes once and then submits."""

    def reply(body: dict[str, Any]) -> Tools:
        if any(m["role"] == "tool" for m in body["messages"]):
            return Tools([("submit", {})])
        content = _solution(body) if body["model"] in solvers else "def nonsense(:\n"
        return Tools([("write_file", {"path": "solution.py", "content": content})])

    return reply


def endpoints(base_url: str, *names: str) -> None:
    for name in names:
        ModelEndpoint.objects.create(name=name, base_url=base_url, model=name)


@pytest.mark.timeout(300)
def test_garbage_models_accept_and_a_later_solver_compromises() -> None:
    store_calibration()
    with ScriptedLLM(models({"solver"})) as llm:
        endpoints(llm.base_url, "base", "other", "solver")
        out, err = validate("--baseline", "base", "--models", "other", *SMALL, "--json")
        result = json.loads(out)["templates"][CHEAP_TEMPLATE]
        assert (result["version"], result["status"]) == (VERSION, "accepted")
        assert [(v["endpoint"], v["role"], v["passed"], v["instances"], v["threshold"])
                for v in result["validations"]] == [
            ("base", "baseline", 0, 1, 0.05), ("other", "generalisation", 0, 1, 0.1)
        ]  # fmt: skip
        assert "base passed 0/1" in err

        requests = len(llm.requests)
        validate("--baseline", "base", "--models", "other", *SMALL)  # resumes: nothing to run
        assert len(llm.requests) == requests
        assert TemplateValidation.objects.count() == 2

        table, _ = validate("--baseline", "base", "--models", "other,solver", *SMALL)
        status = TemplateStatus.objects.get(slug=CHEAP_TEMPLATE, version=VERSION)
        assert status.status == "compromised"
        assert status.decided_by is not None
        assert status.decided_by.endpoint.name == "solver"
        assert "Accepted, then a later model solved too many: model solver passed 1/1" in (
            status.reason
        )
        row = next(line for line in table.splitlines() if " solver " in line)
        assert row.split()[3:] == ["1/1", "1.00", "0.10", "compromised"]
        settings = status.decided_by.endpoint_settings
        assert (settings["name"], settings["model"]) == ("solver", "solver")
        assert "api_key" not in settings


@pytest.mark.timeout(300)
def test_a_baseline_that_solves_rejects_and_the_other_models_are_not_run() -> None:
    store_calibration()
    with ScriptedLLM(models({"base"})) as llm:
        endpoints(llm.base_url, "base", "other")
        table, _ = validate("--baseline", "base", "--models", "other", *SMALL)
        assert all(body["model"] == "base" for body in llm.requests)
    status = TemplateStatus.objects.get(slug=CHEAP_TEMPLATE, version=VERSION)
    assert status.status == "rejected"
    assert status.reason == "Too easy: baseline base passed 1/1 (1.00, threshold 0.05)."
    assert "skipped: rejected" in table
    (run,) = AgentRun.objects.all()
    assert run.sweep.purpose == "validation"
    assert run.sweep.attempts == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--baseline", "nope", "--models", "other"), "Unknown endpoint 'nope'"),
        (("--baseline", "base", "--models", "other,gone"), "Unknown endpoint 'gone'"),
        (("--baseline", "base", "--models", "base"), "base is the baseline"),
        (("--baseline", "base", "--models", ""), "at least one endpoint"),
        (("--baseline", "base", "--models", "other", "--templates", "nope"), "Unknown template"),
        (("--baseline", "base", "--models", "other", "--fidelity-instances", "0"),
         "--fidelity-instances must be from 1 to 1000"),
        (("--baseline", "base", "--models", "other", "--generalisation-instances", "-1"),
         "--generalisation-instances must be from 1 to 1000"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_a_sentence(args: tuple[str, ...], message: str) -> None:
    endpoints("http://127.0.0.1:9/v1", "base", "other")
    with pytest.raises(CommandError, match=message) as caught:
        validate(*args)
    assert caught.value.returncode == 2
    assert not AgentRun.objects.exists()
