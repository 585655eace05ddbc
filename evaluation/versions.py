"""Template versions that cannot drift: the recorded manifest ``evaluation/bank/VERSIONS.json``.

For every template the manifest keeps its version, its ``content_hash`` (every file) and its
``logic_hash`` (what decides the expected outputs and the scoring: the generator, the references,
the legacy and project files, and the manifest's ``params``, ``names``, ``limits``, ``checks``
and ``runtime``). Recording a new state of the bank refuses, with a sentence per template:

- a change of any file without a version bump;
- a change of the logic without a MAJOR bump (the problem changed: earlier results do not
  compare with new ones);
- a version that went backwards.

A test keeps the manifest equal to the bank, so a change cannot land unrecorded:
``python -m evaluation.versions record`` (after bumping ``version`` in template.toml).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from evaluation.bank import bank_root, known_slugs, load_template
from evaluation.spec import TemplateSpec

MANIFEST = "VERSIONS.json"
LOGIC_DIRS = ("references", "files")
LOGIC_FILES = ("generator.py",)
LOGIC_KEYS = ("params", "names", "limits", "checks", "runtime")


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


def logic_hash(spec: TemplateSpec) -> str:
    """sha256 over what decides expected outputs and scores (see the module docstring)."""
    digest = hashlib.sha256()
    paths = [spec.path / name for name in LOGIC_FILES if (spec.path / name).is_file()]
    for folder in LOGIC_DIRS:
        if (spec.path / folder).is_dir():
            paths += sorted(p for p in (spec.path / folder).rglob("*") if p.is_file())
    for path in sorted(p for p in paths if "__pycache__" not in p.parts):
        relative = path.relative_to(spec.path).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(relative).to_bytes(8, "big") + relative)
        digest.update(len(data).to_bytes(8, "big") + data)
    settings = {key: spec.raw.get(key) for key in LOGIC_KEYS}
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()


def entry(spec: TemplateSpec) -> dict[str, str]:
    return {
        "version": spec.version,
        "content_hash": spec.content_hash,
        "logic_hash": logic_hash(spec),
    }


def read_manifest(bank_dir: Path | None = None) -> dict[str, dict[str, str]]:
    path = (bank_dir or bank_root()) / MANIFEST
    if not path.is_file():
        return {}
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    return dict(data.get("templates", {}))


def problems(spec: TemplateSpec, recorded: dict[str, str] | None) -> list[str]:
    """Why the template's current state cannot replace what the manifest recorded (one
    sentence each; none for a template the manifest does not know yet)."""
    if recorded is None:
        return []
    now = entry(spec)
    if now == recorded:
        return []
    found = []
    old, new = _version(recorded["version"]), _version(now["version"])
    if new < old:
        found.append(
            f"{spec.slug}: version {now['version']} is lower than the recorded "
            f"{recorded['version']}"
        )
    elif now["content_hash"] != recorded["content_hash"] and new == old:
        found.append(
            f"{spec.slug}: its files changed but its version is still {now['version']}; bump it "
            "in template.toml (PATCH for wording, MINOR for cases or ranges, MAJOR for rules)"
        )
    if now["logic_hash"] != recorded["logic_hash"] and new[0] <= old[0]:
        found.append(
            f"{spec.slug}: its generator, references, legacy files or scoring settings changed, "
            f"which changes the problem: bump the MAJOR version ({old[0] + 1}.0.0)"
        )
    return found


def record(bank_dir: Path | None = None) -> list[str]:
    """Write the manifest for the bank as it is now; returns the problems (nothing written)."""
    bank_dir = bank_dir or bank_root()
    recorded = read_manifest(bank_dir)
    specs = [load_template(slug, bank_dir) for slug in known_slugs(bank_dir)]
    found = [p for spec in specs for p in problems(spec, recorded.get(spec.slug))]
    if found:
        return found
    body = {"templates": {spec.slug: entry(spec) for spec in specs}}
    text = json.dumps(body, indent=2, sort_keys=True) + "\n"
    (bank_dir / MANIFEST).write_text(text, encoding="utf-8")
    return []


def main(argv: list[str]) -> int:
    if argv != ["record"]:
        print("usage: python -m evaluation.versions record", file=sys.stderr)
        return 2
    found = record()
    for problem in found:
        print(problem, file=sys.stderr)
    if found:
        return 1
    print(f"Recorded {len(read_manifest())} templates in evaluation/bank/{MANIFEST}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
