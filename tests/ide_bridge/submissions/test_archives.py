"""Workspace archives are read in memory and every known archive attack is refused."""

from __future__ import annotations

import gzip
import io
import random
import stat
import tarfile
import warnings
import zipfile

import pytest

from ide_bridge.submissions import archives
from ide_bridge.submissions.archives import ArchiveRejected, read_workspace_archive

SOLUTION = b"def solve(n):\n    return n\n"
MiB = 1024 * 1024

Entry = tuple[tarfile.TarInfo, bytes | None]


def tar_file(name: str, body: bytes = SOLUTION) -> Entry:
    info = tarfile.TarInfo(name)
    info.size = len(body)
    return info, body


def tar_entry(name: str, kind: bytes, **attrs: object) -> Entry:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, None


def make_tar(
    *entries: Entry, gz: bool = True, fmt: int = tarfile.PAX_FORMAT, encoding: str = "utf-8"
) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w:gz" if gz else "w", format=fmt, encoding=encoding
    ) as tar:
        for info, body in entries:
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    return buffer.getvalue()


def make_zip(*entries: tuple[str | zipfile.ZipInfo, bytes], level: int | None = None) -> bytes:
    buffer = io.BytesIO()
    with (
        warnings.catch_warnings(),  # zipfile warns about duplicate names; some tests want them
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive,
    ):
        warnings.simplefilter("ignore")
        for name, body in entries:
            archive.writestr(name, body)
    return buffer.getvalue()


def zip_entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix, so the mode bits count
    info.external_attr = mode << 16
    return info


def rejected(data: bytes, hint: str = "") -> str:
    with pytest.raises(ArchiveRejected) as caught:
        read_workspace_archive(data, hint)
    return str(caught.value)


def random_words(n: int, seed: int) -> bytes:
    """Eight-byte words drawn from sixteen: deflate gets about 8:1, far from a bomb's ratio."""
    rng = random.Random(seed)
    words = [bytes(rng.choices(b"abcdefghijklmnop", k=7)) + b" " for _ in range(16)]
    return b"".join([words[b & 15] for b in rng.randbytes(n // 8)])


# --- Good archives ---------------------------------------------------------------------------
def test_a_tar_gz_workspace_is_read_into_memory() -> None:
    data = make_tar(
        tar_entry("./", tarfile.DIRTYPE),
        tar_file("./solution.py"),
        tar_entry("./pkg", tarfile.DIRTYPE),
        tar_file("./pkg/util.py", b"X = 1\n"),
    )
    workspace = read_workspace_archive(data, "workspace.tar.gz")
    assert workspace.kind == "tar.gz"
    assert workspace.files == {"solution.py": SOLUTION, "pkg/util.py": b"X = 1\n"}
    assert workspace.manifest() == [
        {"name": "pkg/util.py", "size": 6},
        {"name": "solution.py", "size": len(SOLUTION)},
    ]


def test_a_zip_workspace_is_read_into_memory() -> None:
    data = make_zip(("solution.py", SOLUTION), ("data/", b""), ("data/in.txt", b"1 2 3\n"))
    workspace = read_workspace_archive(data, "workspace.zip")
    assert workspace.kind == "zip"
    assert workspace.files == {"solution.py": SOLUTION, "data/in.txt": b"1 2 3\n"}


def test_a_plain_tar_is_accepted() -> None:
    workspace = read_workspace_archive(make_tar(tar_file("solution.py"), gz=False))
    assert workspace.kind == "tar"
    assert workspace.files == {"solution.py": SOLUTION}


def test_the_format_is_told_by_its_bytes_not_its_name() -> None:
    assert read_workspace_archive(make_zip(("solution.py", SOLUTION)), "x.tar.gz").kind == "zip"
    tgz = make_tar(tar_file("solution.py"))
    assert read_workspace_archive(tgz, "application/zip").kind == "tar.gz"


def test_other_formats_are_refused_by_name() -> None:
    assert "bzip2" in rejected(b"BZh91AY&SY" + bytes(100), "workspace.tar.bz2")
    assert rejected(b"print('hello')\n", "solution.py") == (
        "The upload is not a .tar.gz, .tgz, .tar or .zip archive."
    )


def test_a_single_top_folder_is_normalised_away() -> None:
    data = make_tar(
        tar_entry("project", tarfile.DIRTYPE),
        tar_file("project/solution.py"),
        tar_file("project/tests/test_it.py", b"pass\n"),
    )
    assert read_workspace_archive(data).files == {
        "solution.py": SOLUTION,
        "tests/test_it.py": b"pass\n",
    }
    zipped = make_zip(("project/solution.py", SOLUTION), ("__MACOSX/project/._x", b"junk"))
    assert read_workspace_archive(zipped).files == {"solution.py": SOLUTION}


def test_nested_archives_are_plain_files() -> None:
    inner = make_zip(("../../evil", b"x"))
    workspace = read_workspace_archive(make_tar(tar_file("solution.py"), tar_file("a.zip", inner)))
    assert workspace.files["a.zip"] == inner


def test_utf8_names_are_accepted() -> None:
    data = make_zip(("solution.py", SOLUTION), ("données/é.txt", b"ok"))
    assert "données/é.txt" in read_workspace_archive(data).files


# --- Missing solution -----------------------------------------------------------------------
def test_an_archive_without_solution_py_is_refused() -> None:
    message = "The archive has no solution.py at its top level."
    assert rejected(make_tar(tar_file("main.py"))) == message
    assert rejected(make_zip(("a/solution.py", SOLUTION), ("b/x.py", b""))) == message
    assert rejected(make_zip(("a/b/solution.py", SOLUTION))) == message


# --- Paths ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../x", "a/../../x", "./../solution.py"])
def test_paths_leaving_the_workspace_are_refused(name: str) -> None:
    expected = f"The archive has a path that leaves the workspace ({name!r})."
    assert rejected(make_tar(tar_file("solution.py"), tar_file(name))) == expected
    assert rejected(make_zip(("solution.py", SOLUTION), (name, b"x"))) == expected


@pytest.mark.parametrize("name", ["/etc/passwd", "//etc/passwd", "C:/Windows/x", "c:x"])
def test_absolute_paths_are_refused(name: str) -> None:
    assert "absolute path" in rejected(make_zip(("solution.py", SOLUTION), (name, b"x")))
    if name.startswith("/"):
        assert "absolute path" in rejected(make_tar(tar_file("solution.py"), tar_file(name)))


def test_backslashes_are_refused() -> None:
    message = rejected(make_zip(("solution.py", SOLUTION), ("..\\..\\evil.py", b"x")))
    assert "backslash" in message


def test_control_characters_in_names_are_refused() -> None:
    message = rejected(make_tar(tar_file("solution.py"), tar_file("a\nb.py")))
    assert "control character" in message


def test_a_nul_in_a_zip_name_is_refused_not_truncated() -> None:
    data = make_zip(("solution.py", SOLUTION), ("evil.pyXsh", b"x"))
    data = data.replace(b"evil.pyXsh", b"evil.py\x00sh")  # local header and central directory
    assert "control character" in rejected(data)


def test_non_utf8_names_are_refused() -> None:
    latin = make_tar(  # GNU headers written in Latin-1: b"caf\xe9.py"
        tar_file("solution.py"), tar_file("café.py"), fmt=tarfile.GNU_FORMAT, encoding="latin-1"
    )
    assert "not UTF-8" in rejected(latin)
    data = make_zip(("solution.py", SOLUTION), ("cafX.py", b"x")).replace(b"cafX", b"caf\xe9")
    assert "not UTF-8" in rejected(data)


def test_duplicate_names_are_refused() -> None:
    tar = make_tar(tar_file("solution.py"), tar_file("./solution.py", b"evil()\n"))
    assert rejected(tar) == "The archive has the same path twice ('solution.py')."
    zipped = make_zip(("solution.py", SOLUTION), ("solution.py", b"evil()\n"))
    assert rejected(zipped) == "The archive has the same path twice ('solution.py')."


def test_a_path_cannot_be_a_file_and_a_folder() -> None:
    data = make_tar(tar_file("solution.py"), tar_file("a", b"x"), tar_file("a/b", b"y"))
    assert "both as a file and as a folder" in rejected(data)
    data = make_zip(("solution.py", SOLUTION), ("a/b", b"y"), ("a", b"x"))
    assert "both as a file and as a folder" in rejected(data)


# --- Entry types ----------------------------------------------------------------------------
def test_tar_symlinks_are_refused() -> None:
    link = tar_entry("solution.py", tarfile.SYMTYPE, linkname="/etc/passwd")
    assert "link" in rejected(make_tar(link))


def test_tar_hardlinks_are_refused() -> None:
    link = tar_entry("b.py", tarfile.LNKTYPE, linkname="/etc/shadow")
    assert "link" in rejected(make_tar(tar_file("solution.py"), link))


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_tar_devices_and_fifos_are_refused(kind: bytes) -> None:
    device = tar_entry("dev", kind, devmajor=1, devminor=3)
    assert "device or pipe" in rejected(make_tar(tar_file("solution.py"), device))


def test_zip_symlinks_are_refused() -> None:
    link = zip_entry("solution.py", stat.S_IFLNK | 0o777)
    assert "link" in rejected(make_zip((link, b"/etc/passwd")))


def test_zip_device_modes_are_refused() -> None:
    fifo = zip_entry("pipe", stat.S_IFIFO | 0o644)
    assert "device or pipe" in rejected(make_zip(("solution.py", SOLUTION), (fifo, b"")))


def test_encrypted_zip_entries_are_refused() -> None:
    data = bytearray(make_zip(("solution.py", SOLUTION)))
    for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(signature) + flag_offset
        data[at] |= 0x01
    assert "encrypted" in rejected(bytes(data))


# --- Sizes and bombs ------------------------------------------------------------------------
def test_empty_and_oversized_uploads_are_refused() -> None:
    assert rejected(b"") == "The upload is empty."
    huge = b"PK\x03\x04" + bytes(archives.MAX_ARCHIVE_BYTES)
    assert rejected(huge) == "The archive is larger than the 5 MiB limit."


def test_too_many_members_are_refused() -> None:
    names = [f"f{i}.txt" for i in range(archives.MAX_MEMBERS)]
    data = make_tar(tar_file("solution.py"), *(tar_file(n, b"") for n in names))
    assert rejected(data) == "The archive has more than 500 entries."
    zipped = make_zip(("solution.py", SOLUTION), *((n, b"") for n in names))
    assert rejected(zipped) == "The archive has more than 500 entries."


def test_a_member_over_the_per_file_limit_is_refused() -> None:
    big = b"x" * (archives.MAX_MEMBER_BYTES + 1)
    message = "'big.txt' is larger than the 2 MiB limit for one file."
    assert rejected(make_tar(tar_file("solution.py"), tar_file("big.txt", big))) == message
    assert rejected(make_zip(("solution.py", SOLUTION), ("big.txt", big))) == message


def test_a_tar_header_claiming_a_huge_size_is_refused_before_reading() -> None:
    info, _ = tar_file("big.txt", b"")
    info.size = 8 * 1024**3  # nothing of it follows
    solution = make_tar(tar_file("solution.py"), gz=False)[:1024]  # header + one data block
    header = info.tobuf(tarfile.GNU_FORMAT)  # base-256 size, as GNU tar writes big sizes
    data = gzip.compress(solution + header + bytes(4096))
    assert rejected(data) == "'big.txt' is larger than the 2 MiB limit for one file."


def test_a_tar_header_lying_about_a_small_size_is_refused() -> None:
    info, _ = tar_file("data.bin", b"")
    info.size = 100_000  # claims 100 kB; the stream ends after 1 kB
    header = info.tobuf(tarfile.USTAR_FORMAT)
    solution = make_tar(tar_file("solution.py"), gz=False)[:1024]
    message = rejected(gzip.compress(solution + header + bytes(1024)))
    assert message == "The .tar.gz archive is damaged or incomplete."


def test_a_zip_entry_lying_about_its_size_stops_at_the_limit() -> None:
    """The headers say 1 kB; the deflate stream would inflate to 3 MiB of zeros."""
    data = make_zip(("solution.py", SOLUTION), ("data.bin", bytes(3 * MiB)))
    real = (3 * MiB).to_bytes(4, "little")
    patched = data.replace(real, (1024).to_bytes(4, "little"))
    assert patched != data
    assert "damaged" in rejected(patched)


def test_a_gzip_bomb_is_refused() -> None:
    bomb = gzip.compress(bytes(50 * MiB))  # about 50 kB
    assert "archive bomb" in rejected(bomb, "workspace.tar.gz")


def test_a_bomb_after_a_valid_tar_is_refused() -> None:
    valid = make_tar(tar_file("solution.py"), gz=False)
    assert "archive bomb" in rejected(gzip.compress(valid + bytes(50 * MiB)))


def test_a_tar_bomb_made_of_small_files_is_refused() -> None:
    files = (tar_file(f"zeros{i}.bin", bytes(2 * MiB - 1)) for i in range(10))
    assert "archive bomb" in rejected(make_tar(tar_file("solution.py"), *files))


def test_a_zip_bomb_is_refused() -> None:
    zeros = bytes(2 * MiB)
    data = make_zip(("solution.py", SOLUTION), *((f"z{i}.bin", zeros) for i in range(10)))
    assert len(data) < 100_000
    assert "archive bomb" in rejected(data)


def test_the_total_unpacked_size_is_limited() -> None:
    files = [(f"part{i}.txt", random_words(archives.MAX_MEMBER_BYTES, i)) for i in range(11)]
    data = make_zip(("solution.py", SOLUTION), *files, level=1)
    assert len(data) < archives.MAX_ARCHIVE_BYTES
    assert rejected(data) == "The archive is larger than 20 MiB when unpacked."


def test_damaged_archives_are_refused_with_a_message() -> None:
    good = make_tar(tar_file("solution.py"), tar_file("x.txt", b"x" * 10_000))
    assert "damaged" in rejected(good[: len(good) // 2])
    zipped = make_zip(("solution.py", SOLUTION))
    assert "damaged" in rejected(zipped[:30])
