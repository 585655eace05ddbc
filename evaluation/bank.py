"""Load and validate the task-template bank (``evaluation/bank/<slug>/template.toml``).

The bank is data, not a Python package: every template directory holds a manifest, text templates
with ``${name}`` placeholders, two reference solutions and a trusted hidden-test generator. This
module only reads and checks it; :mod:`evaluation.instantiate` renders instances from it. Every
problem raises :class:`BankError` with a one-sentence message naming the file and the field.
"""

from __future__ import annotations

import keyword
import math
import os
import re
import string
import tomllib
from pathlib import Path
from typing import Any

from evaluation.bank_files import check_files, content_hash
from evaluation.retirements import read_retirements
from evaluation.runtimes import DEFAULT_RUNTIME, REGISTRY
from evaluation.spec import BankError, TemplateSpec

__all__ = [
    "BankError",
    "active_slugs",
    "content_hash",
    "list_templates",
    "load_template",
]

BANK_DIR = Path(__file__).resolve().parent / "bank"  # the bank shipped with the platform


def bank_root() -> Path:
    """The bank in use: ``EVALUATION_BANK_DIR`` (e.g. a team's private bank), else the shipped
    one."""
    return Path(os.environ.get("EVALUATION_BANK_DIR") or BANK_DIR)


MANIFEST = "template.toml"
ENTRY_KINDS = ("function", "cli", "wsgi")
TRACKS = ("SDE", "MLE", "DS")
DIFFICULTIES = ("easy", "medium", "hard")
MAX_PROCESSES = 64  # the sandbox runner's own bound on a run's processes and threads
DEFAULT_NAIVE_CPU_S = 60.0  # calibration stops a naive run at 8x efficient, and at this
REQUIRED_CONTEXT = ("company", "role", "scenario")
# Placeholders every template may use besides its params, names and context.
BUILTIN_PLACEHOLDERS = frozenset(
    {
        "slug",
        "title",
        "version",
        "seed",
        "track",
        "difficulty",
        "constraint_id",
        "constraint_text",
        "visible_cases",
        "task_data_example",
        "task_data_file",
    }
)
_TOP_LEVEL = {
    "slug": True,
    "title": True,
    "version": True,
    "track": True,
    "difficulty": True,
    "limits": True,
    "params": True,
    "constraints": True,
    "context": True,
    "names": True,
    "summary": False,
    "checks": False,
    "runtime": False,
    "entry_points": False,
    "performance": False,
}
_SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_SEMVER_RE = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _fail(where: Path | str, field: str, problem: str) -> BankError:
    return BankError(f"{where}: field '{field}' {problem}.")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(float(value))  # type: ignore[arg-type]


def _is_identifier(value: object) -> bool:
    return isinstance(value, str) and bool(_IDENT_RE.match(value)) and not keyword.iskeyword(value)


def _text(where: Path, data: dict[str, Any], field: str, max_len: int = 200) -> str:
    value = data.get(field)
    if not isinstance(value, str) or not value.strip() or len(value) > max_len:
        raise _fail(where, field, f"must be a non-empty string of at most {max_len} characters")
    return value


def _check_limits(where: Path, limits: object) -> tuple[float, int, int, float]:
    allowed = {"cpu_s", "mem_mib", "processes", "naive_cpu_s"}
    if not isinstance(limits, dict) or not {"cpu_s", "mem_mib"} <= set(limits) <= allowed:
        raise _fail(
            where,
            "limits",
            "must be a table with the keys cpu_s and mem_mib (and processes, naive_cpu_s)",
        )
    cpu_s, mem_mib = limits["cpu_s"], limits["mem_mib"]
    processes = limits.get("processes", 1)
    naive_cpu_s = limits.get("naive_cpu_s", DEFAULT_NAIVE_CPU_S)
    if not _is_number(naive_cpu_s) or not 0 < float(naive_cpu_s) <= 600:
        raise _fail(
            where,
            "limits.naive_cpu_s",
            "must be a number of seconds in (0, 600]: the most CPU one calibration run of the "
            "naive reference may take",
        )
    if not _is_int(processes) or not 1 <= processes <= MAX_PROCESSES:
        raise _fail(
            where,
            "limits.processes",
            f"must be an integer in [1, {MAX_PROCESSES}]: the processes and threads a solution "
            "may have, itself included (1: no child process or thread)",
        )
    if not _is_number(cpu_s) or not 0 < float(cpu_s) <= 600:
        raise _fail(where, "limits.cpu_s", "must be a number of seconds in (0, 600]")
    if not _is_int(mem_mib) or not 32 <= mem_mib <= 16384:
        raise _fail(where, "limits.mem_mib", "must be an integer number of MiB in [32, 16384]")
    return float(cpu_s), int(mem_mib), int(processes), float(naive_cpu_s)


def _check_checks(where: Path, checks: object) -> bool:
    """``[checks] memory = "on" | "off"`` (default on): whether the memory check is scored.
    Declare it off when no realistic wrong approach uses more memory than the efficient one;
    ``validate_bank`` refuses "on" when the naive reference stays under the threshold."""
    if not isinstance(checks, dict) or not set(checks) <= {"memory"}:
        raise _fail(where, "checks", "must be a table with only the key memory")
    memory = checks.get("memory", "on")
    if memory not in ("on", "off"):
        raise _fail(where, "checks.memory", 'must be "on" or "off"')
    return memory == "on"


MAX_PERF_COMBINATIONS = 64  # calibrate --all measures every combination once


def perf_choices(spec: dict[str, Any]) -> list[Any]:
    """Every value a choice or int parameter can take (floats are continuous: none)."""
    if spec["type"] == "choice":
        return list(spec["choices"])
    if spec["type"] == "int":
        return list(range(spec["min"], spec["max"] + 1, spec.get("step", 1)))
    return []


def _check_performance(where: Path, table: object, params: dict[str, Any]) -> tuple[str, ...]:
    """``[performance] params = [...]``: the parameters the performance inputs (and generated
    data files) depend on, and nothing else (no seed, no names). Instances that agree on them
    share one calibration; calibrate --all measures every combination."""
    if not isinstance(table, dict) or set(table) != {"params"}:
        raise _fail(where, "performance", "must be a table with only the key params")
    names = table["params"]
    if not isinstance(names, list) or not names or len(set(names)) != len(names):
        raise _fail(where, "performance.params", "must be a non-empty list of parameter names")
    combinations = 1
    for name in names:
        if name not in params:
            raise _fail(where, "performance.params", f"names '{name}', which is not in [params]")
        values = perf_choices(params[name])
        if not values:
            raise _fail(where, "performance.params", f"names the float parameter '{name}'")
        combinations *= len(values)
    if combinations > MAX_PERF_COMBINATIONS:
        raise _fail(
            where,
            "performance.params",
            f"allows {combinations} combinations, more than {MAX_PERF_COMBINATIONS} calibrations "
            "a deployment should measure; use fewer values",
        )
    return tuple(names)


def retirements(bank_dir: Path | None = None) -> dict[str, tuple[str, str]]:
    """The bank's retired templates: slug -> (ISO date, reason) (``evaluation.retirements``)."""
    return read_retirements(bank_dir or bank_root())


def _check_param(where: Path, name: str, spec: object) -> None:
    field = f"params.{name}"
    if not _is_identifier(name):
        raise _fail(where, field, "must be named by a Python identifier")
    if not isinstance(spec, dict):
        raise _fail(where, field, "must be a table")
    kind = spec.get("type")
    allowed = {"int": {"min", "max", "step"}, "float": {"min", "max", "decimals"}}
    allowed["choice"] = {"choices"}
    if kind not in allowed:
        raise _fail(where, f"{field}.type", "must be one of int, float, choice")
    extra = set(spec) - allowed[kind] - {"type", "doc"}
    if extra:
        raise _fail(where, field, f"has unknown keys {sorted(extra)}")
    if "doc" in spec and not isinstance(spec["doc"], str):
        raise _fail(where, f"{field}.doc", "must be a string")
    if kind == "choice":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _fail(where, f"{field}.choices", "must be a non-empty list")
        if not all(isinstance(c, str) or _is_number(c) for c in choices):
            raise _fail(where, f"{field}.choices", "must hold strings or numbers only")
        if len({repr(c) for c in choices}) != len(choices):
            raise _fail(where, f"{field}.choices", "must not repeat a value")
        return
    low, high = spec.get("min"), spec.get("max")
    check = _is_int if kind == "int" else _is_number
    if not check(low) or not check(high):
        raise _fail(where, field, f"needs {kind} values for min and max")
    if low > high:  # type: ignore[operator]
        raise _fail(where, field, f"has min {low} greater than max {high}")
    step = spec.get("step", 1)
    if not _is_int(step) or step < 1:
        raise _fail(where, f"{field}.step", "must be a positive integer")
    decimals = spec.get("decimals", 3)
    if not _is_int(decimals) or not 0 <= decimals <= 6:
        raise _fail(where, f"{field}.decimals", "must be an integer in [0, 6]")


def _check_constraints(where: Path, constraints: object) -> None:
    if not isinstance(constraints, list) or not constraints:
        raise _fail(where, "constraints", "must be a non-empty array of tables")
    seen: set[str] = set()
    for index, item in enumerate(constraints):
        field = f"constraints[{index}]"
        if not isinstance(item, dict) or set(item) != {"id", "text"}:
            raise _fail(where, field, "must be a table with exactly the keys id and text")
        if not isinstance(item["id"], str) or not _SLUG_RE.match(item["id"]):
            raise _fail(where, f"{field}.id", "must be a lower-case slug such as stdlib-only")
        if item["id"] in seen:
            raise _fail(where, f"{field}.id", f"repeats the id '{item['id']}'")
        seen.add(item["id"])
        if not isinstance(item["text"], str) or not item["text"].strip():
            raise _fail(where, f"{field}.text", "must be a non-empty string")


def context_keys(key: str, entries: list[Any]) -> set[str]:
    """Placeholder names one context vocabulary provides (tables add ``<key>_<sub>``)."""
    if isinstance(entries[0], str):
        return {key}
    return {key} | {f"{key}_{sub}" for sub in entries[0] if sub != "name"}


def _check_context(where: Path, context: object) -> set[str]:
    if not isinstance(context, dict):
        raise _fail(where, "context", "must be a table of vocabularies")
    keys: set[str] = set()
    for required in REQUIRED_CONTEXT:
        if required not in context:
            raise _fail(where, f"context.{required}", "is required")
    for key, entries in context.items():
        field = f"context.{key}"
        if not _is_identifier(key):
            raise _fail(where, field, "must be named by a Python identifier")
        if not isinstance(entries, list) or not entries:
            raise _fail(where, field, "must be a non-empty list")
        if all(isinstance(e, str) and e.strip() for e in entries):
            if len(set(entries)) != len(entries):
                raise _fail(where, field, "must not repeat an entry")
        elif all(isinstance(e, dict) for e in entries):
            shape = set(entries[0])
            if "name" not in shape:
                raise _fail(where, field, "entries must be tables with a 'name' key")
            for entry in entries:
                if set(entry) != shape or not all(
                    isinstance(v, str) and v.strip() for v in entry.values()
                ):
                    raise _fail(where, field, "entries must share keys and hold non-empty strings")
                if not all(_is_identifier(sub) for sub in entry):
                    raise _fail(where, field, "entry keys must be Python identifiers")
            if len({e["name"] for e in entries}) != len(entries):
                raise _fail(where, field, "must not repeat a name")
        else:
            raise _fail(where, field, "must hold only non-empty strings or only tables")
        keys |= context_keys(key, entries)
    return keys


def _check_names(where: Path, names: object) -> None:
    if not isinstance(names, dict) or "entry_point" not in names:
        raise _fail(where, "names.entry_point", "is required")
    owner: dict[str, str] = {}
    for key, choices in names.items():
        field = f"names.{key}"
        if not _is_identifier(key):
            raise _fail(where, field, "must be named by a Python identifier")
        if not isinstance(choices, list) or not choices:
            raise _fail(where, field, "must be a non-empty list of identifiers")
        for choice in choices:
            if not _is_identifier(choice):
                raise _fail(where, field, f"has '{choice}', which is not a Python identifier")
            if choice in owner:
                raise _fail(where, field, f"repeats '{choice}' (also in names.{owner[choice]})")
            owner[choice] = key


def _check_namespace(where: Path, data: dict[str, Any], context: set[str]) -> set[str]:
    groups = {
        "params": set(data["params"]),
        "names": set(data["names"]),
        "context": context,
        "built-ins": set(BUILTIN_PLACEHOLDERS),
    }
    seen: dict[str, str] = {}
    for group, keys in groups.items():
        for key in sorted(keys):
            if key in seen:
                raise _fail(where, f"{group}.{key}", f"clashes with the {seen[key]} placeholder")
            seen[key] = group
    return set(seen)


def _check_texts(where: Path, data: dict[str, Any], placeholders: set[str]) -> None:
    """Context entries and constraint texts may use params, names and context placeholders."""
    allowed = placeholders - BUILTIN_PLACEHOLDERS
    texts: list[tuple[str, str]] = []
    for index, item in enumerate(data["constraints"]):
        texts.append((f"constraints[{index}].text", item["text"]))
    for key, entries in data["context"].items():
        for entry in entries:
            values = [entry] if isinstance(entry, str) else list(entry.values())
            texts.extend((f"context.{key}", value) for value in values)
    for field, text in texts:
        template = string.Template(text)
        if not template.is_valid():
            raise _fail(where, field, "has a malformed $-placeholder")
        unknown = sorted(set(template.get_identifiers()) - allowed)
        if unknown:
            raise _fail(where, field, f"uses unknown placeholder '{unknown[0]}'")


def _check_entry_points(where: Path, entries: object, placeholders: set[str]) -> None:
    """``[[entry_points]]``: how the grader calls a solution (default: the function
    ``${entry_point}`` in ``solution.py``). ``module`` and ``name`` may use placeholders."""
    if not isinstance(entries, list) or not entries:
        raise _fail(where, "entry_points", "must be a non-empty array of tables")
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        field = f"entry_points[{index}]"
        if not isinstance(entry, dict) or not {"kind", "module"} <= set(entry) <= {
            "id",
            "kind",
            "module",
            "name",
        }:
            raise _fail(where, field, "must be a table with kind, module and optionally id, name")
        entry_id = entry.get("id", "main" if index == 0 else "")
        if not isinstance(entry_id, str) or not _SLUG_RE.match(entry_id) or entry_id in seen:
            raise _fail(where, f"{field}.id", "must be a unique lower-case slug")
        seen.add(entry_id)
        if entry["kind"] not in ENTRY_KINDS:
            raise _fail(where, f"{field}.kind", f"must be one of {', '.join(ENTRY_KINDS)}")
        if entry["kind"] != "cli" and "name" not in entry:
            raise _fail(where, f"{field}.name", f"is required for a {entry['kind']} entry point")
        for key in ("module", "name"):
            if key not in entry:
                continue
            value = entry[key]
            template = string.Template(value) if isinstance(value, str) else None
            if template is None or not template.is_valid():
                raise _fail(where, f"{field}.{key}", "must be a string with valid placeholders")
            unknown = sorted(set(template.get_identifiers()) - placeholders)
            if unknown:
                raise _fail(where, f"{field}.{key}", f"uses unknown placeholder '{unknown[0]}'")


def parse_template(directory: Path) -> TemplateSpec:
    """Read and validate ``directory/template.toml`` and the files next to it."""
    where = directory / MANIFEST
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BankError(f"{directory}: there is no {MANIFEST}.") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BankError(f"{where}: is not valid TOML ({exc}).") from exc
    for key, required in _TOP_LEVEL.items():
        if required and key not in data:
            raise _fail(where, key, "is required")
    if "time_limit_min" in data:
        raise _fail(
            where,
            "time_limit_min",
            "is no longer a template field: the study's arm sets the time limit "
            "(Arm.time_limit_min), and completion time is capped at it",
        )
    unknown = sorted(set(data) - set(_TOP_LEVEL))
    if unknown:
        raise _fail(where, unknown[0], "is not a known template.toml field")
    slug = _text(where, data, "slug", 60)
    if not _SLUG_RE.match(slug) or slug != directory.name:
        raise _fail(
            where,
            "slug",
            f"must be a lower-case slug equal to the directory name '{directory.name}'",
        )
    title = _text(where, data, "title", 120)
    if "summary" in data:
        _text(where, data, "summary", 500)
    version = data["version"]
    if not isinstance(version, str) or not _SEMVER_RE.match(version):
        raise _fail(where, "version", f"must be a semantic version like 1.2.0, not {version!r}")
    track, difficulty = data["track"], data["difficulty"]
    if track not in TRACKS:
        raise _fail(where, "track", f"must be one of {', '.join(TRACKS)}, not {track!r}")
    if difficulty not in DIFFICULTIES:
        raise _fail(where, "difficulty", f"must be one of {', '.join(DIFFICULTIES)}")
    cpu_s, mem_mib, processes, naive_cpu_s = _check_limits(where, data["limits"])
    memory_check = _check_checks(where, data.get("checks", {}))
    runtime = data.get("runtime", DEFAULT_RUNTIME)
    if not isinstance(runtime, str) or runtime not in REGISTRY:
        raise _fail(
            where,
            "runtime",
            f"names no known task runtime ({runtime!r}); it must be one of {', '.join(REGISTRY)}",
        )
    if not isinstance(data["params"], dict):
        raise _fail(where, "params", "must be a table of parameter tables")
    for name, spec in data["params"].items():
        _check_param(where, name, spec)
    _check_constraints(where, data["constraints"])
    context = _check_context(where, data["context"])
    _check_names(where, data["names"])
    placeholders = _check_namespace(where, data, context)
    _check_texts(where, data, placeholders)
    check_files(directory, placeholders)
    if "entry_points" in data:
        _check_entry_points(where, data["entry_points"], placeholders)
    perf_params = (
        _check_performance(where, data["performance"], data["params"])
        if "performance" in data
        else ()
    )
    retired_on, retired = retirements(directory.parent).get(slug, ("", ""))
    return TemplateSpec(
        slug=slug,
        title=title,
        version=version,
        track=track,
        difficulty=difficulty,
        path=directory,
        content_hash=content_hash(directory),
        cpu_s=cpu_s,
        mem_mib=mem_mib,
        processes=processes,
        naive_cpu_s=naive_cpu_s,
        memory_check=memory_check,
        runtime=runtime,
        perf_params=perf_params,
        retired=retired,
        retired_on=retired_on,
        raw=data,
    )


def known_slugs(bank_dir: Path | None = None) -> list[str]:
    """Directory names in the bank that hold a template manifest, sorted."""
    bank_dir = bank_dir or bank_root()
    if not bank_dir.is_dir():
        return []
    return sorted(p.parent.name for p in bank_dir.glob(f"*/{MANIFEST}"))


def load_template(slug: str, bank_dir: Path | None = None) -> TemplateSpec:
    """The validated template ``slug``; unknown slugs list the known ones."""
    bank_dir = bank_dir or bank_root()
    known = known_slugs(bank_dir)
    if not isinstance(slug, str) or not _SLUG_RE.match(slug) or slug not in known:
        listing = ", ".join(known) or "none"
        raise BankError(f"Unknown template {slug!r}; known templates: {listing}.")
    return parse_template(bank_dir / slug)


def list_templates(bank_dir: Path | None = None, *, retired: bool = False) -> list[TemplateSpec]:
    """The bank's templates, validated, sorted by slug: the active ones, and the retired ones
    too only when asked (what a study or an export that used one needs)."""
    bank_dir = bank_dir or bank_root()
    specs = [parse_template(bank_dir / slug) for slug in known_slugs(bank_dir)]
    return [spec for spec in specs if retired or not spec.retired]


def active_slugs(bank_dir: Path | None = None) -> list[str]:
    """The slugs of the templates offered for new studies, sweeps and datasets."""
    return [spec.slug for spec in list_templates(bank_dir)]
