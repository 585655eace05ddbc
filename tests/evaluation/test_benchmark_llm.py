"""``manage.py benchmark_llm``: bad input exits 2 with a sentence; a real small sweep against a
scripted chat-completions server (one sample writes the reference solution, the other the naive
one) reports pass@k, writes results.json and runs.csv, and a second run skips finished units."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.models import AgentRun, ModelEndpoint
from evaluation.tasks import run_agent_unit
from tests.evaluation.grading_fixtures import CHEAP_TEMPLATE, instance, store_calibration
from tests.evaluation.llm_helpers import scripted_solver
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.django_db


def benchmark(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("benchmark_llm", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def endpoint() -> ModelEndpoint:
    return ModelEndpoint.objects.create(
        name="scripted", base_url="http://127.0.0.1:9/v1", model="scripted-1"
    )


BASE = ("--condition", "C0", "--samples", "2", "--attempts", "3", "--instances", "1")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--endpoint", "nope", *BASE), "Unknown endpoint 'nope'"),
        (("--endpoint", "scripted", *BASE, "--condition", "C7"), "--condition must be C0 or C1"),
        (("--endpoint", "scripted", *BASE, "--dataset", "0123456789"), "either --dataset or"),
        (("--endpoint", "scripted", *BASE, "--templates", "nope"), "Unknown template 'nope'"),
        (("--endpoint", "scripted", *BASE, "--samples", "0"), "--samples must be at least 1"),
        (("--endpoint", "scripted", *BASE, "--attempts", "0"), "--attempts must be at least 1"),
        (("--endpoint", "keyed", *BASE), r"takes its API key from \$HAI_TEST_UNSET_KEY"),
        (("--base-url", "not a url", "--model", "m", *BASE), "is not an http"),
        (("--endpoint", "scripted", *BASE, "--jobs", "2", "--queue"), "either --jobs or --queue"),
    ],
)
def test_bad_input_exits_2_with_a_sentence(
    endpoint: ModelEndpoint, args: tuple[str, ...], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HAI_TEST_UNSET_KEY", raising=False)
    ModelEndpoint.objects.create(
        name="keyed",
        base_url="https://example.org/v1",
        model="m",
        api_key_env="HAI_TEST_UNSET_KEY",
    )
    with pytest.raises(CommandError, match=message) as caught:
        benchmark(*args)
    assert caught.value.returncode == 2
    assert not AgentRun.objects.exists()


def test_an_adhoc_endpoint_is_recorded_once_under_a_derived_name() -> None:
    args = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--condition", "C0")
    for _ in range(2):
        with pytest.raises(CommandError, match="Unknown template 'nope'"):
            benchmark(*args, "--samples", "1", "--attempts", "1", "--instances", "1",
                      "--templates", "nope")  # fmt: skip
    (row,) = ModelEndpoint.objects.all()
    assert row.name.startswith("adhoc-")
    assert len(row.name) == len("adhoc-") + 8
    assert (row.base_url, row.model) == ("http://127.0.0.1:9/v1", "m")


@pytest.mark.timeout(120)
def test_a_small_sweep_reports_pass_at_k_writes_files_and_resumes(
    endpoint: ModelEndpoint, tmp_path: Path
) -> None:
    store_calibration()
    with ScriptedLLM(scripted_solver()) as llm:
        ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=llm.base_url)
        args = ("--endpoint", "scripted", "--condition", "C0", "--templates", CHEAP_TEMPLATE,
                "--instances", "1", "--samples", "2", "--attempts", "3", "--json")  # fmt: skip
        out, err = benchmark(*args, "--out", str(tmp_path))
        requests = len(llm.requests)
        assert requests == 4  # write, then submit, in each of the two runs

        results = json.loads(out)
        assert set(results) == {"endpoint", "model", "condition", "dataset", "templates", "overall"}
        assert (results["endpoint"], results["model"], results["condition"]) == (
            "scripted", "scripted-1", "C0"
        )  # fmt: skip
        assert results["dataset"] is None
        block = results["templates"][CHEAP_TEMPLATE]
        assert (block["n"], block["samples"], block["c"]) == (1, 2, 1)
        assert block["pass@1"] == pytest.approx(0.5)
        assert block["pass@3"] is None
        assert block["pass@10"] is None
        assert 0 < block["partial_pass"] < 1
        assert block["attempts_mean"] is not None
        assert (block["prompt_tokens"], block["completion_tokens"]) == (3000, 440)
        assert block["cost"] == 0
        assert block["interventions"] == {"count": 0, "by_category": {}}
        overall = results["overall"]
        assert overall["pass@1"] == pytest.approx(0.5)
        assert set(overall["by_difficulty"]) == {instance().template.difficulty}
        assert set(overall["by_track"]) == {instance().template.track}
        assert "2/2 done, 1 passed, 3,440 tokens" in err

        assert json.loads((tmp_path / "results.json").read_text()) == results
        rows = list(csv.DictReader((tmp_path / "runs.csv").open()))
        assert sorted((r["sample"], r["overall_pass"]) for r in rows) == [("0", "1"), ("1", "0")]
        assert {r["stop_reason"] for r in rows} == {"submitted"}

        again, err = benchmark(*args[:-1])
        for run in AgentRun.objects.all():  # a unit delivered again by the broker: left alone
            assert run_agent_unit.delay(run.pk).get()["status"] == "done"
        assert len(llm.requests) == requests  # nothing ran again
        assert "2 already done or running elsewhere, 0 to run" in err
        assert "sde-binary-palindromes" in again
        assert "50.0%" in again


def test_queue_plans_the_sweep_and_hands_its_units_to_the_workers(
    endpoint: ModelEndpoint, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        _, err = benchmark(
            "--endpoint", "scripted", "--condition", "C1", "--templates", CHEAP_TEMPLATE,
            "--instances", "1", "--samples", "3", "--attempts", "2", "--queue",
        )  # fmt: skip
    assert "Queued 3 units for the workers." in err
    assert len(callbacks) == 1  # sent once the sweep is committed
    assert list(AgentRun.objects.values_list("status", flat=True)) == ["pending"] * 3


@pytest.mark.django_db(transaction=True)  # the worker processes read committed rows only
@pytest.mark.timeout(120)
def test_jobs_run_the_units_in_worker_processes(endpoint: ModelEndpoint) -> None:
    store_calibration()
    with ScriptedLLM(scripted_solver()) as llm:
        ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=llm.base_url)
        out, err = benchmark(
            "--endpoint", "scripted", "--condition", "C0", "--templates", CHEAP_TEMPLATE,
            "--instances", "1", "--samples", "2", "--attempts", "3", "--jobs", "2", "--json",
        )  # fmt: skip
    assert "2/2 done, 1 passed" in err
    assert json.loads(out)["overall"]["c"] == 1
    assert sorted(AgentRun.objects.values_list("status", flat=True)) == ["done", "done"]
