"""The agent harness end to end: a sweep's unit run by ``run_unit`` against a local server that
speaks chat completions (tests/llm_server.py), in the real sandbox, graded by the engine."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from evaluation.llm.interventions import InterventionRefused, add_manual_intervention
from evaluation.llm.sweeps import runnable_units
from evaluation.llm.units import STALE_AFTER_S, claim_run, plan_sweep, run_unit
from evaluation.models import AgentRun, Intervention, ModelEndpoint, Sweep
from evaluation.submissions import reference_files
from tests.evaluation.grading_fixtures import CHEAP_TEMPLATE, instance, store_calibration
from tests.llm_server import Fail, ScriptedLLM, Text, Tools

# The first test measures the cheap template's calibration (once per session, ~30 s).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture
def calibrated() -> None:
    store_calibration()


def _endpoint(llm: ScriptedLLM, **flags: Any) -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        name=f"scripted-{ModelEndpoint.objects.count()}",
        base_url=llm.base_url,
        model="scripted-model",
        price_input_per_mtok=2,
        price_output_per_mtok=8,
        **flags,
    )


def _one_run(endpoint: ModelEndpoint, condition: str = "C0", attempts: int = 5) -> AgentRun:
    sweep = plan_sweep(
        endpoint=endpoint,
        condition=condition,
        instances=[(CHEAP_TEMPLATE, 1)],
        samples=1,
        attempts=attempts,
    )
    return sweep.runs.get()


def _report(run: AgentRun) -> dict[str, Any]:
    assert run.evaluation is not None
    assert run.evaluation.report is not None
    return dict(run.evaluation.report)


def _verdict(run: AgentRun) -> bool:
    """The run's grading verdict (overall pass)."""
    return bool(_report(run)["overall_pass"])


def _solution() -> str:
    return reference_files(instance(), "efficient")["solution.py"]


def _sent_text(llm: ScriptedLLM) -> str:
    return json.dumps(llm.requests)


@pytest.fixture
def hidden_markers() -> list[str]:
    """Names of hidden cases: none may ever reach the model."""
    return [case.name for case in instance().hidden_cases]


def test_a_tool_using_agent_reads_writes_tests_and_submits_a_passing_solution(
    calibrated: None, hidden_markers: list[str]
) -> None:
    script = [
        Tools([("list_files", {})]),
        Tools([("read_file", {"path": "solution.py"})]),
        Tools([("write_file", {"path": "solution.py", "content": _solution()})]),
        Tools([("run_visible_tests", {})]),
        Tools([("submit", {})], usage=(300, 5)),
    ]
    with ScriptedLLM(script) as llm:
        run = run_unit(_one_run(_endpoint(llm)).pk)
    assert run.status == AgentRun.Status.DONE, run.error
    assert run.stop_reason == "submitted"
    assert _verdict(run) is True
    assert run.submission is not None
    assert run.submission.source_label.startswith("llm:scripted")
    assert (run.model_requests, run.attempts_used) == (5, 1)
    assert (run.prompt_tokens, run.completion_tokens) == (4 * 100 + 300, 4 * 10 + 5)
    assert float(run.cost) == pytest.approx((700 * 2 + 45 * 8) / 1e6)
    requests = list(run.requests.order_by("index"))
    assert [r.actions[0]["tool"] for r in requests] == [
        "list_files",
        "read_file",
        "write_file",
        "run_visible_tests",
        "submit",
    ]
    assert requests[3].actions[0]["status"] == "passed"
    # The model got the tools, the README and the visible-test output, never a hidden case.
    assert [t["function"]["name"] for t in llm.requests[0]["tools"]][-1] == "submit"
    last = llm.requests[-1]["messages"]
    tool_answers = [m["content"] for m in last if m["role"] == "tool"]
    assert any(a.startswith("Visible tests: passed") for a in tool_answers)
    sent = _sent_text(llm)
    assert not [name for name in hidden_markers if name in sent]


def test_a_model_without_tools_works_from_code_blocks_and_a_wrong_solution_fails(
    calibrated: None,
) -> None:
    wrong = "def " + instance().entry_point + "(*args, **kwargs):\n    return None\n"
    script = [
        Text(f"Here is my solution:\n```python\n{wrong}```\n"),
        Text("I am not sure what to do."),
        Text("Still thinking."),
        Text("Hmm."),
    ]
    with ScriptedLLM(script) as llm:
        run = run_unit(_one_run(_endpoint(llm, supports_tools=False)).pk)
    assert run.status == AgentRun.Status.DONE, run.error
    assert run.stop_reason == "no_action"
    assert run.files["solution.py"] == wrong
    assert _verdict(run) is False
    assert "tools" not in llm.requests[0]
    feedback = llm.requests[1]["messages"][-1]["content"]
    assert feedback.startswith("Wrote solution.py")
    assert "Visible tests: failed" in feedback


def test_c1_gets_catalogue_and_manual_procedural_notes_and_counts_them(calibrated: None) -> None:
    uses_numpy = _solution() + "\nimport numpy\n"
    script = [
        Tools([("write_file", {"path": "solution.py", "content": uses_numpy})]),
        Tools([("run_visible_tests", {})]),
        Tools([("bash", {"command": "pip install numpy"})]),
        Tools([("write_file", {"path": "solution.py", "content": _solution()})]),
        Tools([("submit", {})]),
    ]
    with ScriptedLLM(script) as llm:
        run = _one_run(_endpoint(llm), condition="C1")
        add_manual_intervention(run, "env_vars", "DATA_DIR is set now.", author=None)
        run = run_unit(run.pk)
    assert run.status == AgentRun.Status.DONE, run.error
    assert _verdict(run) is True
    notes = {(i.source, i.category, i.pattern) for i in run.interventions.all()}
    assert notes == {
        ("manual", "env_vars", ""),
        ("catalogue", "dependency", "third-party-on-stdlib-runtime"),
        ("catalogue", "environment", "no-shell"),
    }
    assert all(i.delivered_at for i in run.interventions.all())
    first = llm.requests[0]["messages"][-1]["content"]
    assert first.startswith("Note from the researcher")
    assert "DATA_DIR is set now." in first
    tests_answer = llm.requests[2]["messages"][-1]["content"]
    assert "standard library only" in tests_answer
    with pytest.raises(InterventionRefused, match="finished"):
        add_manual_intervention(run, "env_vars", "too late", author=None)


def test_c0_never_gets_procedural_notes_and_refuses_manual_ones(calibrated: None) -> None:
    script = [
        Tools([("write_file", {"path": "solution.py", "content": "import numpy\n"})]),
        Tools([("run_visible_tests", {})], usage=None),
    ]
    with ScriptedLLM(script) as llm:
        run = _one_run(_endpoint(llm), attempts=1)
        with pytest.raises(InterventionRefused, match="C1"):
            add_manual_intervention(run, "dependency", "numpy is there", author=None)
        run = run_unit(run.pk)
    assert run.stop_reason == "attempts"  # one attempt, then graded as it is
    assert not Intervention.objects.filter(run=run).exists()
    last = run.requests.order_by("index").last()
    assert last is not None
    assert last.usage_source == "estimated"


def test_provider_trouble_is_retried_recorded_and_resumable(calibrated: None) -> None:
    queue: list[Any] = [
        Fail(429, "slow down", retry_after=0),
        Tools([("write_file", {"path": "solution.py", "content": _solution()})]),
        Tools([("read_file", "{not json")]),
        *[Fail(503, "overloaded", retry_after=0)] * 5,  # retried, then given up
    ]
    with ScriptedLLM(lambda body: queue.pop(0)) as llm:
        endpoint = _endpoint(llm)
        run = run_unit(_one_run(endpoint).pk)
        assert run.status == AgentRun.Status.FAILED
        assert "503" in run.error
        requests = list(run.requests.order_by("index"))
        assert requests[0].retries == 1
        assert "not valid JSON" in requests[1].actions[0]["error"]
        assert requests[-1].status == "error"
        sweep = Sweep.objects.get()
        assert runnable_units(sweep) == [run.pk]
        # Running the sweep again retries the failed unit from the start.
        queue[:] = [
            Tools([("write_file", {"path": "solution.py", "content": _solution()})]),
            Fail(400, "This model's maximum context length is 8192 tokens."),
        ]
        run = run_unit(run.pk)
    assert run.status == AgentRun.Status.DONE
    assert run.stop_reason == "context"
    assert _verdict(run) is True
    assert run.model_requests == 2
    assert runnable_units(sweep) == []
    # A finished unit is left alone.
    assert run_unit(run.pk).evaluation_id == run.evaluation_id


def test_the_same_sweep_parameters_give_the_same_sweep(calibrated: None) -> None:
    with ScriptedLLM([]) as llm:
        endpoint = _endpoint(llm)
    first = plan_sweep(
        endpoint=endpoint, condition="C0", instances=[(CHEAP_TEMPLATE, 1)], samples=2, attempts=3
    )
    again = plan_sweep(
        endpoint=endpoint, condition="C0", instances=[(CHEAP_TEMPLATE, 1)], samples=2, attempts=3
    )
    assert first.pk == again.pk
    assert first.runs.count() == 2
    with pytest.raises(ValueError, match="C0 or C1"):
        plan_sweep(
            endpoint=endpoint,
            condition="C9",
            instances=[(CHEAP_TEMPLATE, 1)],
            samples=1,
            attempts=1,
        )


def test_identical_files_of_one_instance_are_graded_once(calibrated: None) -> None:
    solutions = [_solution(), _solution(), _solution() + "\n# another sample\n"]

    def reply(body: dict[str, Any]) -> Tools:
        if any(m["role"] == "tool" for m in body["messages"]):
            return Tools([("submit", {})])
        return Tools([("write_file", {"path": "solution.py", "content": solutions.pop(0)})])

    with ScriptedLLM(reply) as llm:
        sweep = plan_sweep(
            endpoint=_endpoint(llm),
            condition="C0",
            instances=[(CHEAP_TEMPLATE, 1)],
            samples=3,
            attempts=2,
        )
        runs = [run_unit(pk) for pk in sweep.runs.order_by("sample").values_list("pk", flat=True)]
    reports = [_report(run) for run in runs]
    assert [r["overall_pass"] for r in reports] == [True, True, True]
    assert "reused_from" not in reports[0]
    assert reports[1]["reused_from"] == runs[0].evaluation_id  # same files: same verdicts
    assert reports[1]["tests"] == reports[0]["tests"]
    assert reports[1]["completion_time_s"] == pytest.approx(runs[1].duration_s)
    assert "reused_from" not in reports[2]  # other files: measured again


def test_a_running_unit_is_taken_over_only_when_its_process_went_silent(calibrated: None) -> None:
    with ScriptedLLM([]) as llm:
        run = _one_run(_endpoint(llm))
    assert claim_run(run.pk)
    assert not claim_run(run.pk)  # running, and alive
    assert runnable_units(run.sweep) == []
    long_ago = timezone.now() - timedelta(seconds=STALE_AFTER_S + 60)
    AgentRun.objects.filter(pk=run.pk).update(started_at=long_ago)
    assert not claim_run(run.pk)  # started long ago, but its heartbeat is recent
    AgentRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    assert runnable_units(run.sweep) == [run.pk]
    assert claim_run(run.pk)


def test_the_token_budget_counts_the_prompt_too(calibrated: None) -> None:
    with ScriptedLLM([Tools([("list_files", {})])] * 3) as llm:
        sweep = plan_sweep(
            endpoint=_endpoint(llm),
            condition="C0",
            instances=[(CHEAP_TEMPLATE, 1)],
            samples=1,
            attempts=5,
            budget_tokens=50,  # less than the task message alone
        )
        run = run_unit(sweep.runs.get().pk)
    assert run.stop_reason == "budget"
    assert llm.requests == []
    assert run.model_requests == 0
