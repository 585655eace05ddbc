"""How a template's directories become an instance's workspace: the trees (``starter/``
editable, ``visible/`` and ``files/`` read-only, images as bytes), the drawn diagrams, the
entry points and the references, each path rendered and checked. Used by
:mod:`evaluation.instantiate`."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from evaluation.bank_files import LITERAL_PREFIX, REFERENCE_KINDS, literal_variants
from evaluation.spec import BankError, EntryPoint, TemplateSpec

TASK_DATA_FILE = "task_data.json"
SUBMIT_FILE = "submit"
README = "README.md"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")  # binary files under files/
_RESERVED = {README, TASK_DATA_FILE, SUBMIT_FILE, "references"}


def substitute(text: str, mapping: dict[str, str], where: str) -> str:
    try:
        return string.Template(text).substitute(mapping)
    except KeyError as exc:
        raise BankError(f"{where}: placeholder '{exc.args[0]}' has no value.") from exc
    except ValueError as exc:
        raise BankError(f"{where}: malformed $-placeholder ({exc}).") from exc


def render_file(template: TemplateSpec, relative: str, mapping: dict[str, str]) -> str:
    path = template.path / relative
    return substitute(path.read_text(encoding="utf-8"), mapping, str(path))


def check_path(path: Path, relative: str) -> None:
    parts = relative.split("/")
    if any(p in ("", ".", "..") or p.startswith(".") for p in parts) or parts[0] in _RESERVED:
        raise BankError(f"{path}: renders to the unsafe or reserved workspace path {relative!r}.")


def render_tree(
    template: TemplateSpec, tree: str, mapping: dict[str, str]
) -> tuple[dict[str, str], dict[str, bytes]]:
    """Files under ``tree/``: paths always rendered, ``*.tmpl`` contents too (suffix dropped);
    images (``IMAGE_SUFFIXES``) copied as bytes, every other file must be UTF-8 text."""
    root = template.path / tree
    texts: dict[str, str] = {}
    images: dict[str, bytes] = {}
    if not root.is_dir():
        return texts, images
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        relative = substitute(path.relative_to(root).as_posix(), mapping, str(path))
        if path.suffix == ".tmpl":
            relative = relative.removesuffix(".tmpl")
            text = substitute(path.read_text(encoding="utf-8"), mapping, str(path))
        elif path.suffix.lower() in IMAGE_SUFFIXES:
            check_path(path, relative)
            images[relative] = path.read_bytes()
            continue
        else:
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                raise BankError(
                    f"{path}: is neither UTF-8 text nor an image ({', '.join(IMAGE_SUFFIXES)})."
                ) from exc
        check_path(path, relative)
        if relative in texts or relative in images:
            raise BankError(f"{path}: renders to {relative!r}, which another file also uses.")
        texts[relative] = text
    return texts, images


def merge(target: dict[str, Any], extra: dict[str, Any], where: str) -> None:
    clash = sorted(set(target) & set(extra))
    if clash:
        raise BankError(f"{where}: the workspace path {clash[0]!r} is used twice.")
    target.update(extra)


def diagrams_of(template: TemplateSpec, mapping: dict[str, str]) -> dict[str, str]:
    """``diagrams/<name>.dot.tmpl`` -> {"diagrams/<name>.svg": rendered DOT source}."""
    root = template.path / "diagrams"
    if not root.is_dir():
        return {}
    return {
        f"diagrams/{path.name.removesuffix('.dot.tmpl')}.svg": substitute(
            path.read_text(encoding="utf-8"), mapping, str(path)
        )
        for path in sorted(root.glob("*.dot.tmpl"))
    }


def entry_points_of(
    template: TemplateSpec, mapping: dict[str, str], workspace: set[str]
) -> tuple[EntryPoint, ...]:
    where = str(template.path / "template.toml")
    raw = template.raw.get("entry_points") or [
        {"kind": "function", "module": "solution", "name": "${entry_point}"}
    ]
    entries = []
    for index, item in enumerate(raw):
        module = substitute(item["module"], mapping, where)
        name = substitute(item.get("name", ""), mapping, where)
        if not all(part.isidentifier() for part in module.split(".")):
            raise BankError(f"{where}: entry_points[{index}].module renders to {module!r}.")
        file = module.replace(".", "/")
        if f"{file}.py" not in workspace and f"{file}/__init__.py" not in workspace:
            raise BankError(
                f"{where}: entry_points[{index}].module {module!r} is no file of the workspace."
            )
        entry_id = item.get("id", "main" if index == 0 else "")
        entries.append(EntryPoint(id=entry_id, kind=item["kind"], module=module, name=name))
    return tuple(entries)


def references_of(
    template: TemplateSpec, mapping: dict[str, str], starter: dict[str, str]
) -> dict[str, dict[str, str]]:
    """Each reference as the full editable set: ``references/<kind>.py.tmpl`` is the one editable
    file; ``references/<kind>/`` holds the editable files it changes (the rest: the starter).
    The kinds are ``efficient``, ``naive`` and ``literal/<variant>`` for each literal reading."""
    out: dict[str, dict[str, str]] = {}
    kinds = [*REFERENCE_KINDS, *(LITERAL_PREFIX + v for v in literal_variants(template.path))]
    for kind in kinds:
        single = f"references/{kind}.py.tmpl"
        if (template.path / single).is_file():
            if len(starter) != 1:
                raise BankError(
                    f"{template.path / single}: a task with several editable files needs the "
                    f"directory references/{kind}/ instead."
                )
            out[kind] = {next(iter(starter)): render_file(template, single, mapping)}
            continue
        files, images = render_tree(template, f"references/{kind}", mapping)
        stray = sorted((set(files) | set(images)) - set(starter))
        if stray:
            raise BankError(
                f"{template.path / 'references' / kind}: {stray[0]!r} is not an editable file "
                "(references may only replace files of starter/)."
            )
        out[kind] = {**starter, **files}
    return out
