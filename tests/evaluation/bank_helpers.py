"""Helpers of the bank tests: the shipped templates and seeds, a minimal template to break, and
in-process checks of a rendered instance (its references and legacy code are our own trusted
code, imported from a temporary directory with importlib)."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from evaluation.bank import load_template
from evaluation.instantiate import instantiate
from evaluation.spec import Instance

# The first bank's one-file puzzles: retired (RETIRED.toml), still loaded by the studies and
# exports that used them, so they must keep rendering and grading as before.
FIRST_BANK = (
    "ds-window-top-segments",
    "mle-palindromic-path",
    "sde-binary-palindromes",
    "sde-clickomania",
)
SEEDS = (1, 2)

MINIMAL_TOML = """\
slug = "tiny-sum"
title = "Tiny sum"
version = "1.0.0"
track = "SDE"
difficulty = "easy"

[limits]
cpu_s = 2.0
mem_mib = 256

[params.offset]
type = "int"
min = 1
max = 9

[[constraints]]
id = "stdlib-only"
text = "Use the standard library in ${entry_point}."

[context]
company = [{ name = "Acme", industry = "anvils" }, { name = "Globex", industry = "energy" }]
role = ["engineer", "analyst"]
scenario = ["${company} needs sums."]

[names]
entry_point = ["add_offset", "shifted_sum"]
values_arg = ["values", "numbers"]
"""

MINIMAL_FILES = {
    "README.md.tmpl": "# ${title} at ${company} (${company_industry})\n\n${scenario}\n"
    "Implement `${entry_point}(${values_arg})`. ${constraint_text}\n\n${task_data_example}\n",
    "starter/solution.py.tmpl": "def ${entry_point}(${values_arg}):\n"
    '    raise NotImplementedError("todo")\n',
    "visible/test_visible.py.tmpl": "import unittest\n\nfrom solution import ${entry_point}\n\n"
    "CASES = ${visible_cases}\n\n\nclass T(unittest.TestCase):\n"
    "    def test_cases(self):\n        for c in CASES:\n"
    '            self.assertEqual(${entry_point}(*c["args"]), c["expected"])\n',
    "references/efficient.py.tmpl": "def ${entry_point}(${values_arg}):\n"
    "    return sum(${values_arg}) + ${offset}\n",
    "references/naive.py.tmpl": "def ${entry_point}(${values_arg}):\n"
    "    total = ${offset}\n    for v in ${values_arg}:\n        total += v\n    return total\n",
    "files/${entry_point}_notes.md.tmpl": "Offset is ${offset}.\n",
    "generator.py": textwrap.dedent(
        """\
        def generate(params, names, rng):
            def case(name, values, visible=False, kind="functional"):
                return {"name": name, "kind": kind, "category": "random", "args": [values],
                        "kwargs": {}, "expected": sum(values) + params["offset"],
                        "visible": visible}
            example = [rng.randint(0, 9) for _ in range(3)]
            cases = [case("example", example, visible=True)]
            cases += [case(f"random_{i}", [rng.randint(-99, 99) for _ in range(5)])
                      for i in range(4)]
            cases.append(case("scale", list(range(1000)), kind="performance"))
            return {"task_data": {"input": example, "expected_output": cases[0]["expected"]},
                    "cases": cases}
        """
    ),
}


def write_minimal_template(
    bank: Path, toml: str = MINIMAL_TOML, files: dict[str, str] | None = None
) -> Path:
    """A small valid template ``tiny-sum`` under ``bank``; tests mutate it to break it."""
    directory = bank / "tiny-sum"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "template.toml").write_text(toml)
    for relative, text in (MINIMAL_FILES if files is None else files).items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


def load_module(source: str, name: str, directory: Path) -> ModuleType:
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def passes(instance: Instance, expected: Any, actual: Any) -> bool:
    actual = json.loads(json.dumps(actual))  # what the harness would print
    if instance.compare is not None:
        return instance.compare(expected, actual)[0]
    return bool(expected == actual)


@cache
def shipped_instance(slug: str, seed: int) -> Instance:
    return instantiate(load_template(slug), seed)


# --- every shipped template, end to end -----------------------------------------------------
