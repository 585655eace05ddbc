"""Multi-file workspaces in the real bwrap sandbox: a solution is the instance's editable files,
run inside the whole workspace tree through the template's entry points (function, cli, wsgi);
read-only files always come from the instance; diagrams are drawn by Graphviz; the shipped
multi-file template (ds-tariff-bills, python3.11-data) grades end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaluation.bank import BankError, load_template
from evaluation.diagrams import render_png
from evaluation.instances import get_instance
from evaluation.instantiate import instantiate
from evaluation.runner.rundirs import write_files
from evaluation.runs import unittest_spec, workspace_of
from evaluation.sandbox import call_spec, get_sandbox, parse_reply
from evaluation.submissions import BadSubmission, check_files
from tests.evaluation.bank_helpers import write_minimal_template

SLUG = "ds-tariff-bills"


def run(workspace: dict[str, str], entry: dict[str, str], *args: Any, **kwargs: Any) -> Any:
    (result,) = get_sandbox("bwrap").run_batch([call_spec(workspace, entry, list(args), kwargs)])
    return parse_reply(result)


def test_modules_import_each_other_and_data_files_open_by_relative_path() -> None:
    workspace = {
        "app/__init__.py": "",
        "app/rates.py": "from app.table import load\n\ndef rate(code):\n    return load()[code]\n",
        "app/table.py": (
            "import csv\n\ndef load():\n    with open('data/rates.csv') as f:\n"
            "        return {r['code']: int(r['cents']) for r in csv.DictReader(f)}\n"
        ),
        "data/rates.csv": "code,cents\nA,12\nB,30\n",
    }
    reply = run(workspace, {"kind": "function", "module": "app.rates", "name": "rate"}, "B")
    assert reply == {"ok": True, "result": 30, "output": ""}


def test_an_error_in_another_module_names_that_file_and_line() -> None:
    workspace = {
        "main.py": "from helpers import half\n\ndef f(x):\n    return half(x)\n",
        "helpers.py": "def half(x):\n    return x / 0\n",
    }
    reply = run(workspace, {"kind": "function", "module": "main", "name": "f"}, 4)
    assert reply["error"] == "Exception"
    assert "ZeroDivisionError" in reply["message"]
    assert "helpers.py, line 2" in reply["message"]
    broken = {"main.py": "import helpers\n\ndef f():\n    return 1\n", "helpers.py": "def (:\n"}
    reply = run(broken, {"kind": "function", "module": "main", "name": "f"})
    assert reply["error"] == "SyntaxError"
    assert "helpers.py" in reply["message"]
    missing = run({"main.py": "x = 1\n"}, {"kind": "function", "module": "app.main", "name": "f"})
    assert missing["error"] == "MissingEntryPoint"
    assert "app/main.py" in missing["message"]


def test_cli_entry_points_get_argv_and_stdin_and_report_their_exit_status() -> None:
    workspace = {
        "tool/__init__.py": "",
        "tool/__main__.py": (
            "import sys\n\nwords = sys.stdin.read().split()\n"
            "print(sys.argv[1], len(words))\nsys.exit(3 if '--fail' in sys.argv else 0)\n"
        ),
    }
    entry = {"kind": "cli", "module": "tool", "name": ""}
    assert run(workspace, entry, "count", stdin="a b c")["result"] == {
        "exit": 0,
        "stdout": "count 3\n",
    }
    assert run(workspace, entry, "count", "--fail", stdin="")["result"]["exit"] == 3


def test_wsgi_entry_points_are_called_in_process_with_one_request() -> None:
    app = (
        "import json\n\n"
        "def application(environ, start_response):\n"
        "    size = int(environ.get('CONTENT_LENGTH') or 0)\n"
        "    body = json.loads(environ['wsgi.input'].read(size) or b'{}')\n"
        "    answer = {'path': environ['PATH_INFO'], 'q': environ['QUERY_STRING'],\n"
        "              'who': environ.get('HTTP_X_USER'), 'n': body.get('n', 0) * 2}\n"
        "    start_response('201 Created', [('Content-Type', 'application/json')])\n"
        "    return [json.dumps(answer).encode()]\n"
    )
    request = {
        "method": "POST",
        "path": "/bills",
        "query": "month=3",
        "headers": {"X-User": "ana", "Content-Type": "application/json"},
        "body": '{"n": 21}',
    }
    reply = run({"api.py": app}, {"kind": "wsgi", "module": "api", "name": "application"}, request)
    result = reply["result"]
    assert result["status"] == 201
    assert result["headers"]["content-type"] == "application/json"
    assert json.loads(result["body"]) == {"path": "/bills", "q": "month=3", "who": "ana", "n": 42}


def test_the_workspace_is_read_only_and_paths_cannot_escape_it(tmp_path: Path) -> None:
    workspace = {
        "main.py": (
            "def f():\n    try:\n        open('data.csv', 'w').write('x')\n"
            "    except OSError as exc:\n        return type(exc).__name__\n    return 'wrote'\n"
        ),
        "data.csv": "a\n",
    }
    reply = run(workspace, {"kind": "function", "module": "main", "name": "f"})
    assert reply["result"] in ("PermissionError", "OSError")
    with pytest.raises(ValueError, match="plain relative paths"):
        write_files({"work/../../etc/x": b""}, str(tmp_path))


def test_the_multi_file_template_renders_a_package_data_and_a_drawn_diagram() -> None:
    instance = get_instance(SLUG, 1)
    package = instance.names["package"]
    assert instance.editable == (  # the entry point's file first: what an editor opens
        f"{package}/bills.py",
        f"{package}/__init__.py",
        f"{package}/tariffs.py",
    )
    assert f"{package}/models.py" in instance.participant_files  # read-only
    assert f"{package}/models.py" not in instance.editable
    assert instance.participant_files["data/tariffs.csv"].startswith("tariff_code,")
    svg = instance.participant_files["diagrams/billing.svg"]
    assert "<svg" in svg
    assert "rounded DOWN" in svg.replace("&#45;", "-")
    assert render_png(instance.diagrams["diagrams/billing.svg"]).startswith(b"\x89PNG")
    # The diagram's source is server-side: participants and models get only the picture.
    assert not any(path.endswith(".dot") for path in instance.participant_files)
    assert instance.entry_points[0].module == f"{package}.bills"
    # The rules only the diagram states are not in the README.
    readme = instance.participant_files["README.md"]
    assert "rounded DOWN" not in readme
    assert "halves" not in readme
    assert re.search(r"diagrams/billing\.svg", readme)


def test_submissions_take_only_editable_files_and_fill_in_the_starter() -> None:
    instance = get_instance(SLUG, 1)
    package = instance.names["package"]
    bills = f"{package}/bills.py"
    checked = check_files(instance, {bills: "def f():\n    return 1\n"})
    assert set(checked) == set(instance.editable)
    assert checked[f"{package}/tariffs.py"] == instance.participant_files[f"{package}/tariffs.py"]
    with pytest.raises(BadSubmission, match="read-only"):
        check_files(instance, {"data/tariffs.csv": "tariff_code\n"})
    with pytest.raises(BadSubmission, match="several editable files"):
        check_files(instance, "def f(): pass\n")


@pytest.mark.timeout(120)
def test_visible_tests_run_against_the_editable_set_in_the_whole_tree() -> None:
    instance = get_instance(SLUG, 2)
    sandbox = get_sandbox("bwrap")
    specs = [
        unittest_spec(instance, files, cpu_s=20, mem_mib=instance.template.mem_mib)
        for files in (instance.references["efficient"], instance.starter_files())
    ]
    good, starter = (parse_reply(r) for r in sandbox.run_batch(specs))
    assert good["ok"]
    assert good["tests_run"] == 4
    assert good["failures"] == good["errors"] == 0
    assert starter["ok"]
    assert starter["errors"] >= 2


@pytest.mark.django_db
@pytest.mark.timeout(300)
def test_the_multi_file_template_grades_end_to_end_on_the_data_runtime() -> None:
    """Hidden grading in bwrap with python3.11-data: the efficient reference passes everything,
    the starter scores 0, and a solution that misses the diagram's allowance rule fails hidden
    tests (the rule is not in the README)."""
    from evaluation.services import grade_instance

    instance = get_instance(SLUG, 3)
    sandbox = get_sandbox("bwrap")
    package = instance.names["package"]
    bills = f"{package}/bills.py"
    efficient = grade_instance(instance, instance.references["efficient"], sandbox=sandbox)
    assert efficient["overall_pass"], [t for t in efficient["tests"] if t["verdict"] != "OK"]
    assert efficient["files"] == sorted(instance.editable)
    assert instance.editable[0] == bills
    starter = grade_instance(instance, instance.starter_files(), sandbox=sandbox)
    assert starter["partial_pass"] == 0
    band_days = instance.params["band_days"]
    no_pro_rata = instance.references["efficient"][bills].replace(
        "band * days[at] // BAND_DAYS", "band"
    )
    assert no_pro_rata != instance.references["efficient"][bills]
    missed = grade_instance(instance, {bills: no_pro_rata}, sandbox=sandbox)
    assert not missed["overall_pass"]
    assert band_days in (28, 30)
    failed = {t["name"] for t in missed["tests"] if t["verdict"] != "OK"}
    assert "edge_exact_allowance" in failed or "edge_above_allowance" in failed
    # A changed read-only data file in a submission is refused, never graded against.
    refused = grade_instance(instance, {"data/tariffs.csv": "tariff_code\n"}, sandbox=sandbox)
    assert "read-only" in refused["error"]
    assert refused["partial_pass"] == 0


def test_templates_refuse_broken_layouts_with_a_sentence(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path)
    (directory / "references" / "naive").mkdir()
    (directory / "references" / "naive" / "solution.py.tmpl").write_text("x = 1\n")
    with pytest.raises(BankError, match=r"either references/naive\.py\.tmpl .* not both"):
        instantiate(load_template(directory.name, tmp_path), 1)
    (directory / "references" / "naive" / "solution.py.tmpl").unlink()
    (directory / "references" / "naive").rmdir()
    manifest = directory / "template.toml"
    text = manifest.read_text()
    manifest.write_text(text + '\n[[entry_points]]\nkind = "rpc"\nmodule = "solution"\n')
    with pytest.raises(BankError, match=r"entry_points\[0\].kind"):
        load_template(directory.name, tmp_path)
    manifest.write_text(
        text + '\n[[entry_points]]\nkind = "function"\nmodule = "app.main"\nname = "f"\n'
    )
    with pytest.raises(BankError, match="no file of the workspace"):
        instantiate(load_template(directory.name, tmp_path), 1)


def test_workspace_of_puts_editable_files_over_the_instance() -> None:
    instance = get_instance(SLUG, 1)
    package = instance.names["package"]
    workspace = workspace_of(instance, {f"{package}/bills.py": "x = 1\n"})
    assert workspace[f"{package}/bills.py"] == b"x = 1\n"
    assert workspace["data/tariffs.csv"] == instance.participant_files["data/tariffs.csv"].encode()


def test_instances_that_agree_on_the_performance_parameters_share_one_calibration() -> None:
    from evaluation.calibration import perf_fingerprint
    from evaluation.management.commands.calibrate import seeds_to_calibrate

    template = load_template(SLUG)
    assert template.perf_params == ("versions_per_code", "perf_readings")
    seeds = seeds_to_calibrate(template, 1)
    assert len(seeds) == 4  # every combination of 2 x 2 values, one seed each
    by_key: dict[tuple[int, int], set[str]] = {}
    for seed in range(1, 13):
        instance = get_instance(SLUG, seed)
        key = (instance.params["versions_per_code"], instance.params["perf_readings"])
        by_key.setdefault(key, set()).add(perf_fingerprint(instance))
    assert len(by_key) == 4
    assert all(len(fingerprints) == 1 for fingerprints in by_key.values())
    # ... while the instances themselves differ (names, functional cases, README).
    assert len({get_instance(SLUG, seed).content_hash for seed in range(1, 13)}) == 12


def test_performance_parameters_are_checked_with_a_sentence(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path)
    manifest = directory / "template.toml"
    text = manifest.read_text()
    for table, message in (
        ('params = ["nothing"]', "not in \\[params\\]"),
        ("params = []", "non-empty list"),
        ('params = ["offset"]\nextra = 1', "only the key params"),
    ):
        manifest.write_text(text + f"\n[performance]\n{table}\n")
        with pytest.raises(BankError, match=message):
            load_template(directory.name, tmp_path)
