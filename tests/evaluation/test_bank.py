"""The template bank: loading, strict validation and content hashes (each shipped template is
checked end to end in ``test_shipped_templates``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluation.bank import (
    BANK_DIR,
    BankError,
    active_slugs,
    content_hash,
    list_templates,
    load_template,
)
from evaluation.instantiate import instantiate
from tests.evaluation.bank_helpers import (
    FIRST_BANK,
    MINIMAL_FILES,
    MINIMAL_TOML,
    write_minimal_template,
)

# --- loading ---------------------------------------------------------------------------------


def test_each_track_offers_four_templates_covering_every_difficulty() -> None:
    active = list_templates()
    assert [t.slug for t in active] == sorted(t.slug for t in active)
    for track in ("SDE", "MLE", "DS"):
        mine = [t for t in active if t.track == track]
        assert len(mine) >= 4, track
        assert {t.difficulty for t in mine} == {"easy", "medium", "hard"}, track
    diagrams = [t for t in active if (t.path / "diagrams").is_dir()]
    assert len(diagrams) >= 4


def test_retired_templates_still_load_but_are_offered_for_nothing_new() -> None:
    retired = [t for t in list_templates(retired=True) if t.retired]
    assert set(FIRST_BANK) | {"ds-tariff-bills"} <= {t.slug for t in retired}
    assert not set(FIRST_BANK) & set(active_slugs())
    spec = load_template("sde-clickomania")
    assert spec.retired_on == "2026-12-02"
    assert spec.retired.endswith(".")


def test_a_malformed_retirement_is_one_sentence_naming_the_file(tmp_path: Path) -> None:
    write_minimal_template(tmp_path)
    (tmp_path / "RETIRED.toml").write_text('[tiny-sum]\non = "yesterday"\nreason = "Old."\n')
    with pytest.raises(BankError, match=r"RETIRED.toml: field 'tiny-sum.on' must be a TOML date"):
        load_template("tiny-sum", tmp_path)
    (tmp_path / "RETIRED.toml").write_text("[tiny-sum]\non = 2026-12-01\n")
    with pytest.raises(BankError, match="must be a table with exactly 'on'"):
        list_templates(tmp_path)
    (tmp_path / "RETIRED.toml").write_text('[tiny-sum]\non = 2026-12-01\nreason = "Old."\n')
    assert list_templates(tmp_path) == []
    assert load_template("tiny-sum", tmp_path).retired == "Old."


def test_loaded_template_exposes_manifest_fields() -> None:
    template = load_template("mle-palindromic-path")
    assert (template.track, template.difficulty) == ("MLE", "medium")
    assert template.path == BANK_DIR / "mle-palindromic-path"
    assert template.cpu_s > 0
    assert template.mem_mib >= 256
    assert len(template.content_hash) == 64
    assert "entry_point" in template.raw["names"]


def test_unknown_slug_names_the_known_templates_in_one_sentence() -> None:
    with pytest.raises(BankError) as caught:
        load_template("no-such-task")
    message = str(caught.value)
    assert message.startswith("Unknown template 'no-such-task'; known templates: ")
    assert all(slug in message for slug in FIRST_BANK)
    assert message.endswith(".")
    assert message.count(". ") == 0


def test_path_like_slug_is_rejected_as_unknown() -> None:
    with pytest.raises(BankError, match="Unknown template"):
        load_template("../bank")


def test_minimal_template_loads_from_another_bank_dir(tmp_path: Path) -> None:
    write_minimal_template(tmp_path)
    assert [t.slug for t in list_templates(tmp_path)] == ["tiny-sum"]
    assert load_template("tiny-sum", tmp_path).version == "1.0.0"


# --- content hash ----------------------------------------------------------------------------


def test_content_hash_ignores_pycache_but_sees_every_byte(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path)
    before = content_hash(directory)
    (directory / "__pycache__").mkdir()
    (directory / "__pycache__" / "generator.cpython-311.pyc").write_bytes(b"junk")
    assert content_hash(directory) == before
    (directory / "README.md.tmpl").write_text(MINIMAL_FILES["README.md.tmpl"] + " ")
    assert content_hash(directory) != before


def test_content_hash_depends_on_file_names(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path)
    before = content_hash(directory)
    (directory / "files" / "${entry_point}_notes.md.tmpl").rename(
        directory / "files" / "${entry_point}_notez.md.tmpl"
    )
    assert content_hash(directory) != before


# --- strict validation -----------------------------------------------------------------------

BROKEN_MANIFESTS = [
    ('version = "1.0.0"', 'version = "1.0"', "version"),
    ('track = "SDE"', 'track = "QA"', "track"),
    ('difficulty = "easy"', 'difficulty = "trivial"', "difficulty"),
    ('track = "SDE"', 'track = "SDE"\ntime_limit_min = 30', "time_limit_min"),  # the arm's now
    ("[limits]", '[checks]\nmemory = "maybe"\n\n[limits]', "checks.memory"),
    ("[limits]", "[checks]\ntime = false\n\n[limits]", "checks"),
    ('title = "Tiny sum"\n', "", "title"),
    ("min = 1\nmax = 9", "min = 9\nmax = 1", "params.offset"),
    ('type = "int"', 'type = "date"', "params.offset.type"),
    ("cpu_s = 2.0", "cpu_s = -1", "limits.cpu_s"),
    ("mem_mib = 256", "mem_mib = 256\nswap_mib = 1", "limits"),
    ('slug = "tiny-sum"', 'slug = "tiny-sum"\nauthor = "me"', "author"),
    ('slug = "tiny-sum"', 'slug = "other-slug"', "slug"),
    ('role = ["engineer", "analyst"]\n', "", "context.role"),
    ('role = ["engineer", "analyst"]', 'role = ["engineer", "engineer"]', "context.role"),
    (
        'values_arg = ["values", "numbers"]',
        'values_arg = ["values", "add_offset"]',
        "names.values_arg",
    ),
    ('values_arg = ["values", "numbers"]', 'values_arg = ["2values"]', "names.values_arg"),
    ('values_arg = ["values", "numbers"]', 'offset = ["x"]', "names.offset"),
    ('id = "stdlib-only"', 'id = "Stdlib Only"', "constraints[0].id"),
    ("Use the standard library in ${entry_point}.", "Use ${nothing}.", "constraints[0].text"),
]


@pytest.mark.parametrize(("old", "new", "field"), BROKEN_MANIFESTS)
def test_invalid_manifest_field_is_named_with_the_file(
    tmp_path: Path, old: str, new: str, field: str
) -> None:
    assert old in MINIMAL_TOML
    directory = write_minimal_template(tmp_path, MINIMAL_TOML.replace(old, new, 1))
    with pytest.raises(BankError) as caught:
        load_template("tiny-sum", tmp_path)
    message = str(caught.value)
    assert str(directory / "template.toml") in message
    assert f"field '{field}'" in message
    assert message.endswith(".")


def test_malformed_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    directory = write_minimal_template(tmp_path, MINIMAL_TOML + "\nthis is not toml\n")
    with pytest.raises(BankError, match="is not valid TOML") as caught:
        load_template("tiny-sum", tmp_path)
    assert str(directory / "template.toml") in str(caught.value)


def test_missing_required_file_is_reported(tmp_path: Path) -> None:
    files = {k: v for k, v in MINIMAL_FILES.items() if k != "references/naive.py.tmpl"}
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(BankError, match=r"naive reference must be either references/naive\.py"):
        load_template("tiny-sum", tmp_path)


def test_literal_readings_render_as_references_and_bad_names_are_refused(tmp_path: Path) -> None:
    files = dict(MINIMAL_FILES)
    files["references/literal/ignores-offset.py.tmpl"] = (
        "def ${entry_point}(${values_arg}):\n    return sum(${values_arg})\n"
    )
    write_minimal_template(tmp_path, files=files)
    instance = instantiate(load_template("tiny-sum", tmp_path), 1)
    assert set(instance.references) == {"efficient", "naive", "literal/ignores-offset"}
    assert "return sum(" in instance.references["literal/ignores-offset"]["solution.py"]
    assert not any("literal" in path for path in instance.participant_files)
    (tmp_path / "tiny-sum" / "references" / "literal" / "Bad_Name.py.tmpl").write_text("x = 1\n")
    with pytest.raises(BankError, match="references/literal/ holds only"):
        load_template("tiny-sum", tmp_path)


def test_unknown_placeholder_in_a_template_file_is_reported(tmp_path: Path) -> None:
    files = dict(MINIMAL_FILES)
    files["README.md.tmpl"] += "Owner: ${owner}\n"
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(
        BankError, match=r"README\.md\.tmpl: the content uses unknown placeholder 'owner'"
    ):
        load_template("tiny-sum", tmp_path)


def test_unknown_placeholder_in_a_shipped_file_path_is_reported(tmp_path: Path) -> None:
    files = dict(MINIMAL_FILES)
    files["files/${module}.py"] = "x = 1\n"
    write_minimal_template(tmp_path, files=files)
    with pytest.raises(BankError, match="the path uses unknown placeholder 'module'"):
        load_template("tiny-sum", tmp_path)


def test_placeholder_namespaces_may_not_clash(tmp_path: Path) -> None:
    toml = MINIMAL_TOML.replace("[params.offset]", "[params.company]")
    toml = toml.replace("${offset}", "${company}")
    files = {k: v.replace("${offset}", "1") for k, v in MINIMAL_FILES.items()}
    write_minimal_template(tmp_path, toml, files)
    with pytest.raises(BankError, match="clashes with the params placeholder"):
        load_template("tiny-sum", tmp_path)


def test_copy_of_a_shipped_template_validates_outside_the_bank(tmp_path: Path) -> None:
    shutil.copytree(BANK_DIR / "sde-binary-palindromes", tmp_path / "sde-binary-palindromes")
    copied = load_template("sde-binary-palindromes", tmp_path)
    assert copied.content_hash == load_template("sde-binary-palindromes").content_hash
