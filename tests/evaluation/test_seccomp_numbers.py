"""The seccomp filter's syscall numbers are the kernel's: checked against the system's kernel
headers (<asm/unistd_64.h> for x86_64, <asm-generic/unistd.h> for aarch64), so a typo in the
hand-written tables cannot open a hole in the sandbox."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from evaluation.runner.seccomp_bpf import AARCH64, DENIED, X86_64

X86_64_HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
GENERIC_HEADER = Path("/usr/include/asm-generic/unistd.h")
NEEDED_ALWAYS = ("socket", "ioctl")  # filtered by argument, not denied outright


def _header(path: Path) -> str:
    if not path.is_file():
        message = f"{path} is missing (Debian's linux-libc-dev has it)"
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    return path.read_text()


def syscall_numbers(text: str) -> dict[str, int]:
    """``__NR_<name>`` numbers of a unistd header, following ``__NR3264_`` aliases."""
    numbers = {m[1]: int(m[2]) for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)\b", text)}
    wide = {m[1]: int(m[2]) for m in re.finditer(r"#define __NR3264_(\w+)\s+(\d+)\b", text)}
    for name, alias in re.findall(r"#define __NR_(\w+)\s+__NR3264_(\w+)\b", text):
        if alias in wide:  # some aliases are only defined for 32-bit ABIs
            numbers.setdefault(name, wide[alias])
    return numbers


def test_x86_64_numbers_match_the_kernel_headers() -> None:
    kernel = syscall_numbers(_header(X86_64_HEADER))
    assert set(X86_64) == {*DENIED, *NEEDED_ALWAYS}
    assert {name: kernel.get(name) for name in X86_64} == X86_64


def test_aarch64_numbers_match_the_kernel_headers() -> None:
    kernel = syscall_numbers(_header(GENERIC_HEADER))
    assert {name: kernel.get(name) for name in AARCH64} == AARCH64
    missing = set(DENIED) - set(AARCH64)
    assert missing == {name for name in DENIED if name not in kernel}, "aarch64 lacks only these"


def test_the_header_parser_reads_aliases() -> None:
    text = "#define __NR3264_fcntl 25\n#define __NR_fcntl __NR3264_fcntl\n#define __NR_read 63\n"
    assert syscall_numbers(text) == {"fcntl": 25, "read": 63}
