"""Task runtimes: a template's runtime decides which packages its solutions import, in the real
bwrap sandbox; a missing or stale runtime is refused with a sentence, never graded wrongly.

The data runtime is installed by set-up (``./dev``); the session fixture installs it only when
its stamp is missing (a no-op otherwise)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evaluation import runtimes
from evaluation.bank import BankError, parse_template
from evaluation.calibration import perf_fingerprint
from evaluation.instantiate import instantiate
from evaluation.runs import case_spec, run_with_retries, workspace_of
from evaluation.runtimes import RuntimeMissing, State, require_runtime, state
from evaluation.runtimes.install import install
from evaluation.sandbox import call_spec, get_sandbox, parse_reply
from evaluation.sandbox.base import RunStatus
from evaluation.services import GradingUnavailable, grade_instance
from tests.evaluation.bank_helpers import MINIMAL_FILES, MINIMAL_TOML, write_minimal_template

DATA = "python3.11-data"
STDLIB = "python3.11-stdlib"

DATA_SOLUTION = """\
import os
import numpy as np
import pandas as pd
import threadpoolctl
from sklearn.linear_model import LinearRegression


def fit(xs):
    x = np.array(xs, dtype=float)
    model = LinearRegression().fit(x.reshape(-1, 1), 3 * x + 2)
    frame = pd.DataFrame({"x": xs})
    pools = threadpoolctl.threadpool_info()
    return {
        "slope": round(float(model.coef_[0]), 6),
        "intercept": round(float(model.intercept_), 6),
        "total": int(frame["x"].sum()),
        "pool_threads": sorted({p["num_threads"] for p in pools}),
        "pools": sorted({p["user_api"] for p in pools}),
        "blas_env": os.environ.get("OPENBLAS_NUM_THREADS"),
        "dot": float(np.dot(np.ones(300), np.arange(300.0))),
    }
"""


@pytest.fixture(scope="session")
def data_runtime() -> Path:
    install(DATA)  # no-op while the stamp matches (set-up installed it)
    return runtimes.install_dir(DATA)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """An empty directory the sandbox's uid can reach (pytest's tmp_path lies under a 0700
    directory)."""
    path = Path(tempfile.mkdtemp(prefix="haieval-rt-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _run(source: str, entry: str, args: list[Any], **limits: Any) -> dict[str, Any]:
    (result,) = get_sandbox("bwrap").run_batch([call_spec(source, entry, args, cpu_s=10, **limits)])
    return {"status": result.status, "reply": parse_reply(result), "result": result}


def test_data_runtime_runs_numpy_pandas_sklearn_with_one_blas_thread(data_runtime: Path) -> None:
    started = time.monotonic()
    run = _run(DATA_SOLUTION, "fit", [[1, 2, 3, 4, 5]], runtime=DATA)
    assert run["status"] is RunStatus.OK, run["result"].stderr_tail
    value = run["reply"]["result"]
    assert value["slope"] == 3.0
    assert value["intercept"] == 2.0
    assert value["total"] == 15
    assert value["dot"] == float(sum(range(300)))
    # BLAS (OpenBLAS of numpy and scipy) and OpenMP (scikit-learn) at one thread: the default
    # process allowance (1) lets the solution start no thread at all, and it still works.
    assert "blas" in value["pools"]
    assert value["pool_threads"] == [1]
    assert value["blas_env"] == "1"
    print(f"numpy+pandas+sklearn run: {time.monotonic() - started:.2f} s wall")


def test_threads_follow_the_templates_process_allowance(tmp_path: Path, data_runtime: Path) -> None:
    # Three pools (numpy's and scipy's OpenBLAS, OpenMP) of 2 threads need 3 more than the
    # solution's own: a template allowing 4 processes gets 2 BLAS threads, one allowing 3 gets 1.
    instance = _data_instance(tmp_path / "bank", processes=4)
    source = DATA_SOLUTION.encode()
    workspace = workspace_of(instance, {"solution.py": DATA_SOLUTION})
    # Each thread's stack is RLIMIT_STACK (64 MiB) of address space: give it room.
    spec = case_spec(instance, workspace, instance.cases[0], cpu_s=10, mem_mib=1024)
    assert (spec.processes, spec.threads) == (4, 2)
    spec = dataclasses.replace(spec, stdin=call_spec(source, "fit", [[1, 2]], runtime=DATA).stdin)
    (result,) = get_sandbox("bwrap").run_batch([spec])
    reply = parse_reply(result)
    assert reply["ok"], (reply, result.stderr_tail)
    value = reply["result"]
    assert (value["blas_env"], value["pool_threads"]) == ("2", [2])
    three = _data_instance(tmp_path / "bank3", processes=3)
    assert case_spec(three, workspace, three.cases[0], cpu_s=10, mem_mib=256).threads == 1


def test_the_stdlib_runtime_has_no_numpy() -> None:
    run = _run(DATA_SOLUTION, "fit", [[1, 2]])
    assert run["status"] is RunStatus.OK
    assert run["reply"]["ok"] is False
    assert "ModuleNotFoundError: No module named 'numpy'" in run["reply"]["message"]


def test_the_runtime_directory_is_read_only_inside_the_sandbox(data_runtime: Path) -> None:
    source = (
        "import os, numpy\n"
        "def probe():\n"
        "    target = os.path.dirname(numpy.__file__)\n"
        "    out = {'where': target}\n"
        "    for path in (target + '/planted.py', '/runtime/python3.11-data/planted'):\n"
        "        try:\n"
        "            open(path, 'w').close(); out[path] = 'written'\n"
        "        except OSError as exc:\n"
        "            out[path] = exc.strerror\n"
        "    return out\n"
    )
    run = _run(source, "probe", [], runtime=DATA)
    value = run["reply"]["result"]
    assert value["where"].startswith("/runtime/python3.11-data/site-packages/")
    assert "written" not in value.values()
    assert not (data_runtime / "site-packages" / "numpy" / "planted.py").exists()


def _stamp(directory: Path, text: str) -> None:
    (directory / DATA).mkdir(parents=True)
    (directory / DATA / runtimes.STAMP).write_text(text + "\n")


def test_state_is_missing_then_stale_then_installed(open_dir: Path, settings: Any) -> None:
    tmp_path = open_dir
    settings.EVALUATION_RUNTIMES_DIR = str(tmp_path)
    current, sentence = state(DATA)
    assert current is State.MISSING
    assert f"python -m evaluation.runtimes install {DATA}" in sentence
    (tmp_path / f".{DATA}.partial-1" / "site-packages").mkdir(parents=True)  # an interrupted one
    assert state(DATA)[0] is State.MISSING
    _stamp(tmp_path, "0" * 64)  # installed from another lock file
    current, sentence = state(DATA)
    assert current is State.STALE
    assert "older lock file" in sentence
    with pytest.raises(RuntimeMissing, match="older lock file"):
        require_runtime(DATA)
    lock = runtimes.get_runtime(DATA).lock
    assert lock is not None
    (tmp_path / DATA / runtimes.STAMP).write_text(hashlib.sha256(lock.read_bytes()).hexdigest())
    assert state(DATA)[0] is State.INSTALLED
    assert state(STDLIB)[0] is State.INSTALLED  # nothing to install


def test_a_runtime_the_sandbox_uid_cannot_reach_is_not_installed(
    tmp_path: Path, settings: Any
) -> None:
    # pytest's base temporary directory is 0700: bubblewrap, running as uid 65534, could not
    # open a runtime below it, so it never counts as installed.
    lock = runtimes.get_runtime(DATA).lock
    assert lock is not None
    _stamp(tmp_path, hashlib.sha256(lock.read_bytes()).hexdigest())
    settings.EVALUATION_RUNTIMES_DIR = str(tmp_path)
    current, sentence = state(DATA)
    assert current is State.MISSING
    assert "cannot be reached by the sandbox's uid 65534" in sentence
    assert "is not searchable by others" in sentence


def test_install_is_a_no_op_once_installed(data_runtime: Path) -> None:
    before = os.stat(data_runtime).st_ino
    started = time.monotonic()
    changed, sentence = install(DATA)
    assert not changed
    assert time.monotonic() - started < 1
    assert os.stat(data_runtime).st_ino == before
    assert "installed in" in sentence
    mode = os.stat(data_runtime / "site-packages" / "numpy" / "__init__.py").st_mode
    assert mode & 0o222 == 0  # nobody may write
    assert mode & 0o004  # the sandbox's uid may read


def test_a_template_naming_an_unknown_runtime_is_refused(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path, 'runtime = "python3.12-gpu"\n' + MINIMAL_TOML)
    with pytest.raises(BankError) as caught:
        parse_template(directory)
    message = str(caught.value)
    assert "field 'runtime' names no known task runtime ('python3.12-gpu')" in message
    assert "python3.11-stdlib, python3.11-data" in message


DATA_FILES = {
    **MINIMAL_FILES,
    "references/efficient.py.tmpl": "import numpy as np\n\n\ndef ${entry_point}(${values_arg}):\n"
    "    return int(np.asarray(${values_arg}, dtype=np.int64).sum()) + ${offset}\n",
}


def _data_instance(tmp_path: Path, processes: int = 1) -> Any:
    toml = 'runtime = "python3.11-data"\n' + MINIMAL_TOML.replace('track = "SDE"', 'track = "DS"')
    toml = toml.replace("mem_mib = 256", f"mem_mib = 256\nprocesses = {processes}")
    template = parse_template(write_minimal_template(tmp_path, toml, DATA_FILES))
    assert template.runtime == DATA
    return instantiate(template, 1)


def test_a_data_template_runs_its_cases_on_its_runtime(tmp_path: Path, data_runtime: Path) -> None:
    instance = _data_instance(tmp_path / "bank")
    workspace = workspace_of(instance, instance.references["efficient"])
    specs = [case_spec(instance, workspace, case, cpu_s=10, mem_mib=256) for case in instance.cases]
    assert {spec.runtime for spec in specs} == {DATA}
    results, _ = run_with_retries(get_sandbox("bwrap"), specs)
    for case, result in zip(instance.cases, results, strict=True):
        assert parse_reply(result).get("result") == case.expected, result.stderr_tail


def test_grading_a_template_whose_runtime_is_missing_is_refused(
    tmp_path: Path, open_dir: Path, settings: Any
) -> None:
    instance = _data_instance(tmp_path / "bank")
    settings.EVALUATION_RUNTIMES_DIR = str(open_dir)  # nothing installed there
    source = instance.references["efficient"]["solution.py"].encode()
    with pytest.raises(GradingUnavailable) as caught:
        grade_instance(instance, source, sandbox=get_sandbox("bwrap"))
    message = str(caught.value)
    assert message.startswith("tiny-sum cannot be graded here: The runtime python3.11-data")
    assert "python -m evaluation.runtimes install python3.11-data" in message


def test_the_perf_fingerprint_includes_the_runtime(tmp_path: Path) -> None:
    instance = _data_instance(tmp_path / "bank")
    as_stdlib = dataclasses.replace(
        instance, template=dataclasses.replace(instance.template, runtime=STDLIB)
    )
    assert perf_fingerprint(instance) != perf_fingerprint(as_stdlib)


@pytest.mark.django_db
def test_healthz_reports_each_runtime(client: Client, settings: Any, open_dir: Path) -> None:
    settings.EVALUATION_RUNTIMES_DIR = str(open_dir)  # nothing installed here
    response = client.get("/healthz/")
    assert response.status_code == 200  # only the database makes it 503
    check = response.json()["checks"]["runtimes"]
    assert check["runtimes"][STDLIB]["state"] == "installed"
    assert check["runtimes"][STDLIB]["status"] == "ok"
    data = check["runtimes"][DATA]
    assert data["state"] == "missing"
    assert "python -m evaluation.runtimes install python3.11-data" in data["detail"]
    # A shipped template (ds-tariff-bills) runs on the data runtime: missing, it is an error.
    assert data["status"] == "error"
    assert check["status"] == "error"


def test_the_unsafe_developer_backend_finds_the_runtime_too(
    data_runtime: Path, settings: Any
) -> None:
    settings.DEBUG = True  # the unsafe backend is a developer's, refused otherwise
    spec = call_spec(DATA_SOLUTION, "fit", [[1, 2, 3]], runtime=DATA, cpu_s=10)
    (result,) = get_sandbox("unsafe").run_batch([spec])
    reply = parse_reply(result)
    assert reply["ok"], (reply, result.stderr_tail)
    assert reply["result"]["total"] == 6
    assert reply["result"]["blas_env"] == "1"


def test_worker_start_up_logs_each_runtimes_state(
    caplog: pytest.LogCaptureFixture, settings: Any, open_dir: Path
) -> None:
    from config.celery_app import _refuse_without_sandbox

    settings.EVALUATION_SANDBOX_BACKEND = "bwrap"
    settings.EVALUATION_RUNTIMES_DIR = str(open_dir)
    with caplog.at_level("INFO", logger="config.celery_app"):
        _refuse_without_sandbox()  # the worker_init handler: the sandbox works, so it starts
    lines = {r.getMessage().split(":")[0]: r.levelname for r in caplog.records}
    assert lines["task runtime python3.11-stdlib"] == "INFO"
    assert lines["task runtime python3.11-data"] == "ERROR"  # missing, and ds-tariff-bills needs it
    assert any("python -m evaluation.runtimes install" in r.getMessage() for r in caplog.records)
