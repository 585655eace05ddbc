"""The files of a template directory: the required ones, the trees rendered into a workspace,
the references (efficient, naive and the literal readings) and the Graphviz sources, and the
placeholders their paths and ``*.tmpl`` contents may use. Used by :mod:`evaluation.bank`."""

from __future__ import annotations

import hashlib
import re
import string
from pathlib import Path

from evaluation.spec import BankError

REQUIRED_FILES = ("README.md.tmpl", "generator.py")
# Directories rendered into the workspace (paths and *.tmpl contents): starter/ is the editable
# set, visible/ the visible tests, files/ the read-only project; diagrams/ are Graphviz sources.
TREES = ("starter", "visible", "files", "references", "diagrams")
REFERENCE_KINDS = ("efficient", "naive")
# references/literal/<variant>: plausible wrong solutions, one per literal reading of the task
# (the legacy code ported faithfully, the README alone, one rule ignored); each must fail a
# hidden test (validate_bank), which is how a template shows its rules are tested.
LITERAL_DIR = "literal"
LITERAL_PREFIX = f"{LITERAL_DIR}/"
MAX_LITERAL_READINGS = 8
_VARIANT_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def content_hash(directory: Path) -> str:
    """sha256 over (relative path, bytes) of every file under ``directory``, sorted by path."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in directory.rglob("*")
        if p.is_file() and "__pycache__" not in p.relative_to(directory).parts
    )
    for path in files:
        relative = path.relative_to(directory).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(relative).to_bytes(8, "big") + relative)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def _one_reference(directory: Path, relative: str, what: str) -> None:
    single = directory / "references" / f"{relative}.py.tmpl"
    folder = directory / "references" / relative
    if single.is_file() == folder.is_dir():
        raise BankError(
            f"{directory}: {what} must be either references/{relative}.py.tmpl "
            f"(a task with one editable file) or the directory references/{relative}/, not "
            f"{'both' if single.is_file() else 'neither'}."
        )


def literal_variants(directory: Path) -> list[str]:
    """The literal readings' names, sorted: ``references/literal/<variant>.py.tmpl`` or
    ``references/literal/<variant>/``."""
    root = directory / "references" / LITERAL_DIR
    if not root.is_dir():
        return []
    names = set()
    for path in root.iterdir():
        if path.name == "__pycache__":
            continue
        name = path.name.removesuffix(".py.tmpl") if path.is_file() else path.name
        if (path.is_file() and not path.name.endswith(".py.tmpl")) or not _VARIANT_RE.match(name):
            raise BankError(
                f"{path}: references/literal/ holds only <variant>.py.tmpl files or <variant>/ "
                "directories named by lower-case words joined by '-'."
            )
        names.add(name)
    return sorted(names)


def check_layout(directory: Path) -> None:
    """The files every template needs: a starter, visible tests, both references; and, when
    present, well-formed literal readings and Graphviz sources."""
    for relative in REQUIRED_FILES:
        if not (directory / relative).is_file():
            raise BankError(f"{directory}: required file '{relative}' is missing.")
    for tree, what in (("starter", "the editable starter files"), ("visible", "visible tests")):
        if not any(p.is_file() for p in (directory / tree).rglob("*")):
            raise BankError(f"{directory}: '{tree}/' must hold {what}.")
    for kind in REFERENCE_KINDS:
        _one_reference(directory, kind, f"the {kind} reference")
    variants = literal_variants(directory)
    if len(variants) > MAX_LITERAL_READINGS:
        raise BankError(
            f"{directory}: references/literal/ holds {len(variants)} readings; at most "
            f"{MAX_LITERAL_READINGS} are checked."
        )
    for variant in variants:
        _one_reference(directory, LITERAL_PREFIX + variant, f"the literal reading {variant!r}")
    diagrams = directory / "diagrams"
    if diagrams.is_dir():
        for path in sorted(diagrams.rglob("*")):
            if path.is_file() and (path.parent != diagrams or not path.name.endswith(".dot.tmpl")):
                raise BankError(
                    f"{path}: diagrams/ holds only Graphviz sources named <name>.dot.tmpl."
                )


def check_files(directory: Path, placeholders: set[str]) -> None:
    """The layout, then every rendered path and ``*.tmpl`` content uses known placeholders."""
    check_layout(directory)
    shipped = [
        p for tree in TREES if (directory / tree).is_dir() for p in (directory / tree).rglob("*")
    ]
    for path in sorted(set(directory.glob("*.tmpl")) | {p for p in shipped if p.is_file()}):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(directory).as_posix()
        texts = {"path": relative}
        if path.suffix == ".tmpl":
            texts["content"] = path.read_text(encoding="utf-8")
        for what, text in texts.items():
            template = string.Template(text)
            if not template.is_valid():
                raise BankError(f"{path}: the {what} has a malformed $-placeholder.")
            unknown = sorted(set(template.get_identifiers()) - placeholders)
            if unknown:
                raise BankError(f"{path}: the {what} uses unknown placeholder '{unknown[0]}'.")
