"""Safe reading of uploaded workspace archives (.tar.gz, .tgz, .tar, .zip), entirely in memory.

Nothing is ever extracted to disk: members are read into a ``{path: bytes}`` map after every
name and entry type has been checked. The format is told by its magic bytes (the file name or
content type only helps with old tar files that have none). Every byte that comes out of a
decompressor is counted as it is read, in chunks, so a lying size header, a gzip bomb or a zip
bomb stops at the limit instead of filling memory. Each refusal is an ``ArchiveRejected`` whose
text is one sentence that can be shown to the participant as is.
"""

from __future__ import annotations

import gzip
import io
import lzma
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol, cast

KiB = 1024
MiB = 1024 * KiB

MAX_ARCHIVE_BYTES = 5 * MiB  # the upload as sent
MAX_TOTAL_BYTES = 20 * MiB  # all files together, unpacked
MAX_MEMBER_BYTES = 2 * MiB  # one file, unpacked
MAX_MEMBERS = 500  # files, folders and other entries
MAX_RATIO = 100  # unpacked bytes per uploaded byte ...
RATIO_FLOOR_BYTES = 2 * MiB  # ... checked only above this many unpacked bytes
MAX_NAME_CHARS = 1024
# A tar stream holds headers and padding besides file data (at least 512 bytes per entry).
TAR_OVERHEAD_BYTES = MAX_MEMBERS * 4 * KiB
CHUNK_BYTES = 64 * KiB

SOLUTION_FILE = "solution.py"  # the one editable file of the one-file tasks
IGNORED_TOP_FOLDERS = frozenset({"__MACOSX"})  # resource forks added by macOS's Finder

ACCEPTED_FORMATS = ".tar.gz, .tgz, .tar or .zip"
_OTHER_FORMATS = {
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"7z\xbc\xaf\x27\x1c": "7z",
    b"Rar!": "rar",
}
_DRIVE = re.compile(r"^[A-Za-z]:")
_ZIP_UTF8_FLAG = 0x800
_ZIP_ENCRYPTED_FLAG = 0x1


class ArchiveRejected(Exception):
    """The upload is not an acceptable workspace archive; the text is one sentence for people."""


@dataclass(frozen=True)
class Workspace:
    files: dict[str, bytes]
    kind: str = ""  # "tar.gz", "tar" or "zip"

    def manifest(self) -> list[dict[str, Any]]:
        """Names and sizes, sorted: what ``WorkspaceUpload.files`` keeps."""
        return [{"name": name, "size": len(body)} for name, body in sorted(self.files.items())]


def size_label(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n // KiB} KiB"


def read_workspace_archive(
    data: bytes,
    filename_or_content_type: str = "",
    editable: Sequence[str] = (SOLUTION_FILE,),
) -> Workspace:
    """Check and read a workspace archive; raise ``ArchiveRejected`` with the reason. Every
    path of ``editable`` (the task's editable files, relative to the task folder) must be in
    it; its other files are kept in the manifest and never graded."""
    if not data:
        raise ArchiveRejected("The upload is empty.")
    if len(data) > MAX_ARCHIVE_BYTES:
        raise ArchiveRejected(
            f"The archive is larger than the {size_label(MAX_ARCHIVE_BYTES)} limit."
        )
    kind = detect_kind(data, filename_or_content_type)
    reader = _Reader(compressed_bytes=len(data))
    if kind == "zip":
        _read_zip(data, reader)
    else:
        _read_tar(data, reader, gzipped=kind == "tar.gz")
    files = _strip_top_folder(reader.files, editable[0])
    missing = [path for path in editable if path not in files]
    if missing and len(editable) == 1:
        raise ArchiveRejected(f"The archive has no {missing[0]} at its top level.")
    if missing:
        raise ArchiveRejected(
            f"The archive has no {', '.join(missing[:5])} (paths relative to the task folder); "
            "it must hold every editable file of the task."
        )
    return Workspace(files=files, kind=kind)


def detect_kind(data: bytes, hint: str = "") -> str:
    """The format ("tar.gz", "tar" or "zip"), told by magic bytes before any name."""
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if data[257:262] == b"ustar":
        return "tar"
    for magic, label in _OTHER_FORMATS.items():
        if data.startswith(magic):
            raise ArchiveRejected(
                f"This is a {label} file; only {ACCEPTED_FORMATS} archives are accepted."
            )
    hint = hint.split(";", 1)[0].strip().lower()
    if hint.endswith(".tar") or hint in ("application/x-tar", "application/tar"):
        return "tar"  # pre-POSIX tar files carry no magic
    raise ArchiveRejected(f"The upload is not a {ACCEPTED_FORMATS} archive.")


def clean_name(name: str) -> str:
    """The member's relative path with ``.`` parts and extra slashes removed ("" for the root)."""
    shown = _show(name)
    if len(name) > MAX_NAME_CHARS:
        raise ArchiveRejected(f"The archive has a path longer than {MAX_NAME_CHARS} characters.")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ArchiveRejected(f"The archive has a file name with a control character ({shown}).")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes kept as surrogates by tarfile
        readable = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise ArchiveRejected(
            f"The archive has a file name that is not UTF-8 ({_show(readable)})."
        ) from None
    if "\\" in name:
        raise ArchiveRejected(
            f"The archive has a file name with a backslash ({shown}); use / between folders."
        )
    if name.startswith("/") or _DRIVE.match(name):
        raise ArchiveRejected(
            f"The archive has an absolute path ({shown}); paths must be relative to the workspace."
        )
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveRejected(f"The archive has a path that leaves the workspace ({shown}).")
    return "/".join(parts)


def _show(name: str) -> str:
    return repr(name if len(name) <= 80 else name[:77] + "...")


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class _Reader:
    """Collects files, counting entries and unpacked bytes against the limits."""

    def __init__(self, compressed_bytes: int) -> None:
        self.files: dict[str, bytes] = {}
        self.folders: set[str] = set()  # folder entries
        self.parents: set[str] = set()  # folders implied by file paths
        self.members = 0
        self.total = 0
        self.bomb_limit = max(RATIO_FLOOR_BYTES, MAX_RATIO * compressed_bytes)

    def count_member(self) -> None:
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise ArchiveRejected(f"The archive has more than {MAX_MEMBERS} entries.")

    def add_folder(self, name: str) -> None:
        if not name:
            return  # the root itself ("./")
        if name in self.files:
            raise _clash(name)
        self._no_file_above(name)
        self.folders.add(name)

    def add_file(self, name: str, declared_size: int, stream: _Readable) -> None:
        if not name:
            raise ArchiveRejected("The archive has a file without a name.")
        if declared_size > MAX_MEMBER_BYTES:
            raise _too_big(name)
        if name in self.files:
            raise ArchiveRejected(f"The archive has the same path twice ({_show(name)}).")
        if name in self.folders or name in self.parents:
            raise _clash(name)
        self._no_file_above(name)
        self.files[name] = self._read(name, stream)
        parts = name.split("/")
        self.parents.update("/".join(parts[:i]) for i in range(1, len(parts)))

    def _no_file_above(self, name: str) -> None:
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in self.files:
                raise _clash("/".join(parts[:i]))

    def _read(self, name: str, stream: _Readable) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while chunk := stream.read(CHUNK_BYTES):
            size += len(chunk)
            if size > MAX_MEMBER_BYTES:
                raise _too_big(name)
            self.add_unpacked(len(chunk))
            chunks.append(chunk)
        return b"".join(chunks)

    def add_unpacked(self, n: int) -> None:
        self.total += n
        check_unpacked(self.total, self.bomb_limit, MAX_TOTAL_BYTES)


def check_unpacked(total: int, bomb_limit: int | None, size_limit: int) -> None:
    if bomb_limit is not None and total > bomb_limit:
        raise ArchiveRejected(
            f"The archive unpacks to more than {MAX_RATIO} times its size, "
            "which looks like an archive bomb."
        )
    if total > size_limit:
        raise ArchiveRejected(
            f"The archive is larger than {size_label(MAX_TOTAL_BYTES)} when unpacked."
        )


def _clash(name: str) -> ArchiveRejected:
    return ArchiveRejected(f"The archive has {_show(name)} both as a file and as a folder.")


def _too_big(name: str) -> ArchiveRejected:
    return ArchiveRejected(
        f"{_show(name)} is larger than the {size_label(MAX_MEMBER_BYTES)} limit for one file."
    )


class _CountingStream:
    """The (decompressed) tar stream, counted as tarfile reads it."""

    def __init__(self, raw: _Readable, bomb_limit: int | None) -> None:
        self._raw = raw
        self._bomb_limit = bomb_limit
        self.total = 0

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            size = CHUNK_BYTES  # never unbounded: callers loop until b""
        chunk = self._raw.read(size)
        self.total += len(chunk)
        check_unpacked(self.total, self._bomb_limit, MAX_TOTAL_BYTES + TAR_OVERHEAD_BYTES)
        return chunk

    def drain(self) -> None:
        """Read to the end so whatever follows the tar's end marker is checked and counted."""
        while self.read(CHUNK_BYTES):
            pass


_TAR_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, ValueError)


def _read_tar(data: bytes, reader: _Reader, *, gzipped: bool) -> None:
    source: _Readable = io.BytesIO(data)
    if gzipped:
        source = gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")
    stream = _CountingStream(source, reader.bomb_limit if gzipped else None)
    try:
        # "r|": a forward-only stream, so no seeking to offsets a header made up.
        with tarfile.open(
            fileobj=cast(IO[bytes], stream),  # only read() is used in stream mode
            mode="r|",
            encoding="utf-8",
            errors="surrogateescape",
        ) as tar:
            for member in tar:
                reader.count_member()
                _read_tar_member(tar, member, reader)
        stream.drain()
    except _TAR_ERRORS as exc:
        label = ".tar.gz" if gzipped else ".tar"
        raise ArchiveRejected(f"The {label} archive is damaged or incomplete.") from exc


def _read_tar_member(tar: tarfile.TarFile, member: tarfile.TarInfo, reader: _Reader) -> None:
    name = clean_name(member.name)
    if _ignored(name):
        return
    shown = _show(member.name)
    if member.issym() or member.islnk():
        raise ArchiveRejected(f"The archive contains a link ({shown}); links are not accepted.")
    if member.ischr() or member.isblk() or member.isfifo():
        raise ArchiveRejected(f"The archive contains a device or pipe ({shown}).")
    if member.issparse():
        raise ArchiveRejected(f"The archive contains a sparse file ({shown}).")
    if member.isdir():
        reader.add_folder(name)
        return
    if not member.isreg():
        raise ArchiveRejected(f"The archive contains an entry of an unsupported type ({shown}).")
    if member.size > MAX_MEMBER_BYTES:
        raise _too_big(name)
    fh = tar.extractfile(member)
    assert fh is not None  # a regular file
    reader.add_file(name, member.size, fh)


_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    OSError,
    NotImplementedError,
    RuntimeError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
)


def _read_zip(data: bytes, reader: _Reader) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                raise ArchiveRejected(f"The archive has more than {MAX_MEMBERS} entries.")
            for info in infos:
                reader.count_member()
                _read_zip_member(archive, info, reader)
    except UnicodeDecodeError as exc:
        raise ArchiveRejected("The archive has a file name that is not UTF-8.") from exc
    except _ZIP_ERRORS as exc:
        raise ArchiveRejected("The zip archive is damaged or uses an unsupported feature.") from exc


def _zip_name(info: zipfile.ZipInfo) -> str:
    name = info.orig_filename  # zipfile cuts ``filename`` at a NUL; the original keeps it
    if info.flag_bits & _ZIP_UTF8_FLAG:
        return name
    # Without the UTF-8 flag zipfile decodes as cp437; most tools really wrote UTF-8.
    raw = name.encode("cp437")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        shown = _show(raw.decode("utf-8", "replace"))
        raise ArchiveRejected(f"The archive has a file name that is not UTF-8 ({shown}).") from None


def _read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, reader: _Reader) -> None:
    raw_name = _zip_name(info)
    name = clean_name(raw_name)
    if _ignored(name):
        return
    shown = _show(raw_name)
    mode = info.external_attr >> 16  # Unix mode bits, when the creator stored them
    if stat.S_ISLNK(mode):
        raise ArchiveRejected(f"The archive contains a link ({shown}); links are not accepted.")
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ArchiveRejected(f"The archive contains a device or pipe ({shown}).")
    if info.flag_bits & _ZIP_ENCRYPTED_FLAG:
        raise ArchiveRejected(f"The archive contains an encrypted file ({shown}).")
    if info.is_dir() or stat.S_ISDIR(mode):
        reader.add_folder(name)
        return
    if info.file_size > MAX_MEMBER_BYTES:
        raise _too_big(name)
    with archive.open(info) as fh:
        reader.add_file(name, info.file_size, fh)


def _ignored(name: str) -> bool:
    return name.split("/", 1)[0] in IGNORED_TOP_FOLDERS


def _strip_top_folder(files: dict[str, bytes], anchor: str) -> dict[str, bytes]:
    """``project/solution.py`` -> ``solution.py`` when everything sits in one top folder and
    ``anchor`` (the first editable path) is not already where it belongs."""
    if anchor in files or not files:
        return files
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) != 1 or any("/" not in name for name in files):
        return files
    cut = len(tops.pop()) + 1
    return {name[cut:]: body for name, body in files.items()}
