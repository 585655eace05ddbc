"""Plain data types shared by the bank loader, instantiation, grading and calibration.

No Django imports here: the engine works from the CLI and for LLM runs as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

TestKind = Literal["functional", "performance"]
Compare = Callable[[Any, Any], tuple[bool, str]]


EntryKind = Literal["function", "cli", "wsgi"]


@dataclass(frozen=True)
class EntryPoint:
    """How the grader calls a solution (``[[entry_points]]`` of template.toml, rendered).

    ``function``: ``module.name(*args, **kwargs)``; ``cli``: ``python -m module *args`` with the
    case's ``stdin``; ``wsgi``: the WSGI application ``module.name`` called in-process with one
    request. ``module`` is a dotted path relative to the workspace root.
    """

    id: str
    kind: EntryKind
    module: str
    name: str = ""

    def request(self) -> dict[str, str]:
        """The harness's ``entry`` object."""
        return {"kind": self.kind, "module": self.module, "name": self.name}


@dataclass(frozen=True)
class TestCase:
    """One call of the entry point with JSON arguments and the expected JSON result.

    ``visible`` cases are the ones the participant also has (README example, task_data.json,
    visible tests); all others are hidden and never leave the server. ``category`` is what a
    participant may see of a hidden test (e.g. ``edge``, ``random``, ``scale``).
    """

    name: str
    kind: TestKind
    category: str
    args: list[Any]
    expected: Any
    kwargs: dict[str, Any] = field(default_factory=dict)
    visible: bool = False
    entry: str = ""  # the id of the entry point it calls; "" for the first one


class BankError(Exception):
    """A template is missing, malformed or cannot be rendered; the message is one sentence."""


@dataclass(frozen=True)
class TemplateSpec:
    """A validated ``template.toml`` plus where its files live."""

    slug: str
    title: str
    version: str
    track: Literal["SDE", "MLE", "DS"]
    difficulty: Literal["easy", "medium", "hard"]
    path: Path
    content_hash: str  # sha256 over every file of the template directory
    cpu_s: float  # hard per-test CPU cap before calibration tightens it
    mem_mib: int
    raw: dict[str, Any]  # the parsed TOML, for the instantiation tools
    processes: int = 1  # processes and threads a solution may have, itself included
    naive_cpu_s: float = 60.0  # bound on one calibration run of the naive reference
    memory_check: bool = True  # [checks] memory: the memory check is scored
    runtime: str = "python3.11-stdlib"  # the task runtime (evaluation/runtimes) solutions run on
    # [performance] params: what the performance inputs depend on (empty: the whole seed)
    perf_params: tuple[str, ...] = ()
    retired: str = ""  # [retired] reason: offered for nothing new, still loads for old studies
    retired_on: str = ""  # [retired] on, ISO date


@dataclass(frozen=True)
class Instance:
    """A template rendered for one seed by the four tools. Deterministic in (version, seed)."""

    template: TemplateSpec
    seed: int
    params: dict[str, Any]  # technical parameters
    constraint: dict[str, str]  # the chosen implementation constraint (id, text)
    context: dict[str, str]  # company, role, scenario, ...
    names: dict[str, str]  # interface names; names["entry_point"] is the function graded
    participant_files: dict[str, str]  # workspace path -> text, what the participant gets
    references: dict[str, dict[str, str]]  # "efficient" / "naive" -> editable path -> text
    cases: list[TestCase]  # visible + hidden functional + performance
    content_hash: str  # sha256 over participant files, references and cases
    compare: Compare | None = None  # template-specific comparison, else JSON equality
    # The files a solver edits (they are graded): the main one (the first entry point's module)
    # first, then the others by path.
    editable: tuple[str, ...] = ("solution.py",)
    entry_points: tuple[EntryPoint, ...] = ()
    visible_tests: tuple[str, ...] = ("test_visible.py",)  # unittest modules the solver runs
    images: dict[str, bytes] = field(default_factory=dict)  # binary images the solver sees
    diagrams: dict[str, str] = field(default_factory=dict)  # rendered .svg path -> DOT source
    data_files: tuple[str, ...] = ()  # read-only files the generator made (performance reads them)

    @property
    def entry_point(self) -> str:
        return self.names["entry_point"]

    def starter_files(self) -> dict[str, str]:
        """Editable path -> starter text."""
        return {path: self.participant_files[path] for path in self.editable}

    def entry(self, case: TestCase) -> EntryPoint:
        """The entry point ``case`` calls (the first one unless it names another)."""
        if not case.entry:
            return self.entry_points[0]
        for entry in self.entry_points:
            if entry.id == case.entry:
                return entry
        raise KeyError(case.entry)

    @property
    def hidden_cases(self) -> list[TestCase]:
        return [c for c in self.cases if not c.visible]
