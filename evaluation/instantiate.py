"""Render a bank template into a task instance for one seed (the paper's four instantiation tools).

Tools, each driven by its own RNG derived from ``"<slug>@<version>#<seed>:<tool>[:<key>]"`` so
adding a vocabulary entry or parameter never shifts the others:

1. technical parameters: rule-based picks inside the ranges declared in ``[params]``;
2. implementation constraint: one entry of the validated ``[[constraints]]`` list;
3. contextual variables: company, role, scenario, ... from the curated ``[context]`` vocabularies;
4. interface names: entry point, field and file names from ``[names]``.

The template's trusted ``generator.py`` (loaded from its path, never imported as a package) turns
the parameters and names into the example data and the test cases. Hidden cases and references
never go into ``participant_files``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import pprint
import random
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from evaluation.bank import BankError
from evaluation.diagrams import render_svg
from evaluation.spec import Compare, Instance, TemplateSpec, TestCase
from evaluation.workspace_trees import (
    README,
    SUBMIT_FILE,
    TASK_DATA_FILE,
    check_path,
    diagrams_of,
    entry_points_of,
    merge,
    references_of,
    render_file,
    render_tree,
    substitute,
)

MAX_SEED = 2**63 - 1
_CASE_KEYS = {"name", "kind", "category", "args", "kwargs", "expected", "visible", "entry"}
_CASE_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")
SUBMIT_SCRIPT = """#!/bin/sh
# Submission helper for this task.
#
# Work is submitted from the study platform: use the Submit button next to the editor.
# This script does not upload anything yet; it is kept so the workspace layout stays stable.
echo "To submit, use the Submit button on the study platform; nothing was uploaded."
exit 0
"""
_generators: dict[tuple[str, str], ModuleType] = {}


def canonical_json(value: Any) -> bytes:
    """Sorted, compact, UTF-8 JSON: the form every hash in the engine is taken over."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def case_record(case: TestCase) -> dict[str, Any]:
    """A case as plain JSON data (no copying: ``dataclasses.asdict`` deep-copies big inputs)."""
    return {
        "name": case.name,
        "kind": case.kind,
        "category": case.category,
        "args": case.args,
        "kwargs": case.kwargs,
        "expected": case.expected,
        "visible": case.visible,
    }


def _is_flat(value: Any) -> bool:
    if isinstance(value, list):
        return all(not isinstance(v, list | dict) for v in value)
    if isinstance(value, dict):
        return all(not isinstance(v, list | dict) for v in value.values())
    return True


def pretty_json(value: Any, indent: int = 0) -> str:
    """Indented JSON that keeps flat lists and records (rows, ids, small dicts) on one line."""
    if _is_flat(value):
        return json.dumps(value, ensure_ascii=False)
    pad = " " * (indent + 2)
    if isinstance(value, list):
        items = [pad + pretty_json(item, indent + 2) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    items = [
        f"{pad}{json.dumps(key, ensure_ascii=False)}: {pretty_json(item, indent + 2)}"
        for key, item in value.items()
    ]
    return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"


def _rng(template: TemplateSpec, seed: int, *parts: str) -> random.Random:
    return random.Random(":".join([f"{template.slug}@{template.version}#{seed}", *parts]))


def perf_key(template: TemplateSpec, params: dict[str, Any]) -> dict[str, Any]:
    """The values of the ``[performance]`` parameters: what instances sharing a calibration
    have in common."""
    return {name: params[name] for name in template.perf_params}


def perf_rng(template: TemplateSpec, params: dict[str, Any]) -> random.Random:
    """The generator's RNG for performance inputs and data files: seeded by the template
    version and the ``[performance]`` parameters only, so instances that agree on them get the
    same inputs (and one calibration serves them all)."""
    key = canonical_json(perf_key(template, params)).decode()
    return random.Random(f"{template.slug}@{template.version}:performance:{key}")


def choose_params(template: TemplateSpec, seed: int) -> dict[str, Any]:
    """Technical parameters, one RNG per parameter, within the declared ranges."""
    params: dict[str, Any] = {}
    for name, spec in sorted(template.raw["params"].items()):
        rng = _rng(template, seed, "params", name)
        if spec["type"] == "choice":
            params[name] = rng.choice(spec["choices"])
        elif spec["type"] == "int":
            step = spec.get("step", 1)
            params[name] = spec["min"] + step * rng.randrange(
                (spec["max"] - spec["min"]) // step + 1
            )
        else:
            value = rng.uniform(float(spec["min"]), float(spec["max"]))
            params[name] = round(value, spec.get("decimals", 3))
    return params


def choose_constraint(
    template: TemplateSpec, seed: int, mapping: dict[str, str] | None = None
) -> dict[str, str]:
    """One validated constraint; its text may use params, names and context placeholders."""
    item = _rng(template, seed, "constraint").choice(template.raw["constraints"])
    text = substitute(item["text"].strip(), mapping or {}, f"constraint {item['id']}")
    return {"id": item["id"], "text": text}


def choose_context(
    template: TemplateSpec, seed: int, mapping: dict[str, str] | None = None
) -> dict[str, str]:
    """Contextual variables; entries may use ``${key}`` of other context keys, params and names."""
    raw: dict[str, str] = {}
    for key, entries in sorted(template.raw["context"].items()):
        entry = _rng(template, seed, "context", key).choice(entries)
        if isinstance(entry, str):
            raw[key] = entry.strip()
        else:
            raw[key] = entry["name"]
            raw.update({f"{key}_{sub}": v for sub, v in entry.items() if sub != "name"})
    scope = {**(mapping or {}), **raw}
    return {key: substitute(value, scope, f"context.{key}") for key, value in raw.items()}


def choose_names(template: TemplateSpec, seed: int) -> dict[str, str]:
    return {
        key: _rng(template, seed, "names", key).choice(choices)
        for key, choices in sorted(template.raw["names"].items())
    }


def load_generator(template: TemplateSpec) -> ModuleType:
    """The template's ``generator.py``, loaded from its path (cached per content hash)."""
    key = (str(template.path), template.content_hash)
    if key not in _generators:
        path = template.path / "generator.py"
        module_name = (
            f"_haieval_bank_{template.slug.replace('-', '_')}_{template.content_hash[:12]}"
        )
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise BankError(f"{path}: cannot be loaded as a Python module.")
        module = importlib.util.module_from_spec(spec)
        previous, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # keep the bank clean
        try:
            spec.loader.exec_module(module)
        finally:
            sys.dont_write_bytecode = previous
        if not callable(getattr(module, "generate", None)):
            raise BankError(f"{path}: does not define generate(params, names, rng).")
        compare = getattr(module, "compare", None)
        if compare is not None and not callable(compare):
            raise BankError(f"{path}: 'compare' must be a function.")
        _generators[key] = module
    return _generators[key]


def _json_value(value: Any, where: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise BankError(f"{where}: is not JSON-serialisable ({exc}).") from exc


def _case(raw: object, index: int, where: str) -> tuple[TestCase, bytes]:
    """Validate one generated case; returns it with its canonical JSON (reused for hashing)."""
    at = f"{where}: case {index}"
    if not isinstance(raw, dict) or not {"name", "kind", "category", "args", "expected"} <= set(
        raw
    ):
        raise BankError(f"{at} needs name, kind, category, args and expected.")
    if set(raw) - _CASE_KEYS:
        raise BankError(f"{at} has unknown keys {sorted(set(raw) - _CASE_KEYS)}.")
    name, kind, visible = raw["name"], raw["kind"], raw.get("visible", False)
    if not isinstance(name, str) or not _CASE_NAME_RE.match(name):
        raise BankError(f"{at} has a missing or malformed name {name!r}.")
    if kind not in ("functional", "performance"):
        raise BankError(f"{at} has kind {kind!r}, not functional or performance.")
    if not isinstance(visible, bool) or (visible and kind != "functional"):
        raise BankError(f"{at} may be visible only if it is a functional case.")
    if not isinstance(raw["category"], str) or not raw["category"]:
        raise BankError(f"{at} needs a non-empty category.")
    if not isinstance(raw["args"], list) or not isinstance(raw.get("kwargs", {}), dict):
        raise BankError(f"{at} needs a list of args and a dict of kwargs.")
    record = {**raw, "kwargs": raw.get("kwargs", {}), "visible": visible}
    try:
        encoded = canonical_json(record)
    except (TypeError, ValueError) as exc:
        raise BankError(f"{at} is not JSON-serialisable ({exc}).") from exc
    data = json.loads(encoded)
    entry = raw.get("entry", "")
    if not isinstance(entry, str):
        raise BankError(f"{at} names its entry point with a string id.")
    case = TestCase(
        name=name,
        kind=kind,
        category=data["category"],
        args=data["args"],
        kwargs=data["kwargs"],
        expected=data["expected"],
        visible=visible,
        entry=entry,
    )
    return case, encoded


def _cases(raw_cases: object, where: str) -> tuple[list[TestCase], list[bytes]]:
    if not isinstance(raw_cases, list) or not raw_cases:
        raise BankError(f"{where}: 'cases' must be a non-empty list.")
    pairs = [_case(raw, index, where) for index, raw in enumerate(raw_cases)]
    cases = [case for case, _ in pairs]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise BankError(f"{where}: case names must be unique.")
    if not any(c.visible for c in cases) or all(c.visible for c in cases):
        raise BankError(f"{where}: needs at least one visible and one hidden case.")
    return cases, [encoded for _, encoded in pairs]


def instance_hash(
    participant_files: dict[str, str],
    references: dict[str, Any],
    encoded_cases: list[bytes],
    layout: dict[str, Any] | None = None,
) -> str:
    """sha256 of canonical_json({"cases", ["layout",] "participant_files", "references"}),
    built in pieces. ``layout`` (editable files, entry points, image and diagram-source hashes)
    is left out for a one-file task, whose hash is what it was before multi-file workspaces."""
    digest = hashlib.sha256(b'{"cases":[')
    for index, encoded in enumerate(encoded_cases):
        digest.update(b"," + encoded if index else encoded)
    digest.update(b"]")
    if layout:
        digest.update(b',"layout":' + canonical_json(layout))
    digest.update(b',"participant_files":' + canonical_json(participant_files))
    digest.update(b',"references":' + canonical_json(references) + b"}")
    return digest.hexdigest()


def _visible_literal(cases: list[TestCase]) -> str:
    visible = [
        {"name": c.name, "args": c.args, "kwargs": c.kwargs, "expected": c.expected}
        for c in cases
        if c.visible
    ]
    return pprint.pformat(visible, width=96, sort_dicts=True)


def instantiate(template: TemplateSpec, seed: int) -> Instance:
    """Render ``template`` for ``seed``; the same (slug, version, seed) gives the same instance."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise BankError(f"Seed {seed!r} is not an integer in [0, 2**63 - 1].")
    params = choose_params(template, seed)
    names = choose_names(template, seed)
    scope = {**{key: str(value) for key, value in params.items()}, **names}
    context = choose_context(template, seed, scope)
    constraint = choose_constraint(template, seed, {**scope, **context})
    generator = load_generator(template)
    where = str(template.path / "generator.py")
    rng = _rng(template, seed, "cases")
    if template.perf_params:  # performance inputs from these parameters only, never the seed
        produced = generator.generate(
            dict(params), dict(names), rng, perf_rng=perf_rng(template, params)
        )
    else:
        produced = generator.generate(dict(params), dict(names), rng)
    if not isinstance(produced, dict) or not {"task_data", "cases"} <= set(produced) <= {
        "task_data",
        "cases",
        "files",
    }:
        raise BankError(
            f"{where}: generate() must return a dict with task_data, cases and optionally files."
        )
    generated = produced.get("files", {})
    if not isinstance(generated, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in generated.items()
    ):
        raise BankError(f"{where}: generate()'s files must map workspace paths to text.")
    task_data = _json_value(produced["task_data"], f"{where}: task_data")
    cases, encoded_cases = _cases(produced["cases"], where)

    mapping: dict[str, str] = {
        "slug": template.slug,
        "title": template.title,
        "version": template.version,
        "seed": str(seed),
        "track": template.track,
        "difficulty": template.difficulty,
        "constraint_id": constraint["id"],
        "constraint_text": constraint["text"],
        "visible_cases": _visible_literal(cases),
        "task_data_example": pretty_json(task_data),
        "task_data_file": TASK_DATA_FILE,
        **scope,
        **context,
    }
    where = str(template.path)
    files = {README: render_file(template, "README.md.tmpl", mapping)}
    files[TASK_DATA_FILE] = pretty_json(task_data) + "\n"
    files[SUBMIT_FILE] = SUBMIT_SCRIPT
    images: dict[str, bytes] = {}
    trees = {tree: render_tree(template, tree, mapping) for tree in ("starter", "visible", "files")}
    for tree, (texts, pictures) in trees.items():
        if tree != "files" and pictures:
            raise BankError(f"{where}/{tree}: holds an image; images belong under files/.")
        merge(files, texts, f"{where}/{tree}")
        merge(images, pictures, f"{where}/{tree}")
    starter = dict(sorted(trees["starter"][0].items()))
    visible_tests = tuple(
        sorted(
            p
            for p in trees["visible"][0]
            if "/" not in p and p.startswith("test") and p.endswith(".py")
        )
    )
    if not visible_tests:
        raise BankError(f"{where}/visible: needs at least one top-level test*.py module.")
    for path in generated:
        check_path(template.path / "generator.py", path)
    merge(files, dict(generated), f"{where}/generator.py")
    diagrams = diagrams_of(template, mapping)
    merge(files, {path: render_svg(source, path) for path, source in diagrams.items()}, where)
    if set(images) & set(files):
        raise BankError(
            f"{where}: the workspace path {sorted(set(images) & set(files))[0]!r} is used twice."
        )
    entry_points = entry_points_of(template, mapping, set(files))
    ids = {entry.id for entry in entry_points}
    for case in cases:
        if case.entry and case.entry not in ids:
            raise BankError(
                f"{where}/generator.py: case {case.name} calls unknown entry {case.entry!r}."
            )
    # The main file first: the editable file of the first entry point (what an editor opens,
    # and what a model's lone code block replaces), then the others in path order.
    module = entry_points[0].module.replace(".", "/")
    main = next((p for p in (f"{module}.py", f"{module}/__init__.py") if p in starter), "")
    starter = {p: starter[p] for p in sorted(starter, key=lambda p: (p != main, p))}
    references = references_of(template, mapping, starter)
    participant_files = dict(sorted(files.items()))
    single = list(starter) == ["solution.py"] and "entry_points" not in template.raw
    layout: dict[str, Any] = {}
    if not single or images or diagrams or visible_tests != ("test_visible.py",):
        layout = {
            "editable": list(starter),
            "entry_points": [vars(entry) for entry in entry_points],
            "visible_tests": list(visible_tests),
            "images": {p: hashlib.sha256(b).hexdigest() for p, b in sorted(images.items())},
            "diagrams": diagrams,
        }
    hashed_files = {p: t for p, t in participant_files.items() if p not in diagrams}
    hashed_refs: dict[str, Any] = (
        {kind: ref["solution.py"] for kind, ref in references.items()} if single else references
    )
    digest = instance_hash(hashed_files, hashed_refs, encoded_cases, layout)
    compare: Compare | None = getattr(generator, "compare", None)
    return Instance(
        template=template,
        seed=seed,
        params=params,
        constraint=constraint,
        context=context,
        names=names,
        participant_files=participant_files,
        references=references,
        cases=cases,
        content_hash=digest,
        compare=compare,
        editable=tuple(starter),
        entry_points=entry_points,
        visible_tests=visible_tests,
        images=dict(sorted(images.items())),
        diagrams=diagrams,
        data_files=tuple(sorted(generated)),
    )


def evaluation_record(instance: Instance) -> dict[str, Any]:
    """What a grader needs besides the participant's files: identity, names and every case."""
    template = instance.template
    return {
        "template": template.slug,
        "version": template.version,
        "template_hash": template.content_hash,
        "seed": instance.seed,
        "instance_hash": instance.content_hash,
        "entry_point": instance.entry_point,
        "entry_points": [vars(entry) for entry in instance.entry_points],
        "editable": list(instance.editable),
        "names": instance.names,
        "params": instance.params,
        "constraint": instance.constraint,
        "limits": {"cpu_s": template.cpu_s, "mem_mib": template.mem_mib},
        "compare": "generator.compare" if instance.compare is not None else "json-equality",
        "cases": [case_record(c) for c in instance.cases],
    }


def write_instance(instance: Instance, out_dir: Path, with_references: bool) -> list[Path]:
    """Write the participant files (and ``references/`` only if asked); returns the paths."""
    files: dict[str, bytes] = {p: t.encode() for p, t in instance.participant_files.items()}
    files.update(instance.images)
    if with_references:
        for kind, reference in instance.references.items():
            if list(reference) == ["solution.py"]:
                files[f"references/{kind}.py"] = reference["solution.py"].encode()
            else:
                files.update({f"references/{kind}/{p}": t.encode() for p, t in reference.items()})
    written: list[Path] = []
    for relative, data in sorted(files.items()):
        path = out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755 if relative == SUBMIT_FILE else 0o644)
        written.append(path)
    return written
