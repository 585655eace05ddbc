"""Seccomp denylist for the sandbox, assembled as classic BPF in pure Python (stdlib only).

``build_filter()`` returns the raw ``struct sock_filter`` array that ``bwrap --seccomp FD`` reads.
The runner imports this module from its own directory; it runs under ``python3 -I -S`` with no
third-party packages, so there is no libseccomp dependency.

Policy (notes/sandbox.md §3): everything is allowed except the calls below, which fail with
``EPERM``. ``socket`` is allowed for ``AF_UNIX`` only (keeps ``multiprocessing`` working);
``ioctl`` ``TIOCSTI``/``TIOCLINUX`` are denied (low 32 bits of the request compared). A foreign
syscall ABI (i386 via ``int 0x80``, arm32) kills the process; x32 syscall numbers are denied.
"""

from __future__ import annotations

import struct

# Classic BPF opcodes (linux/filter.h).
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JA = 0x05
BPF_RET_K = 0x06

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM = 1

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000
AF_UNIX = 1
TIOCSTI = 0x5412
TIOCLINUX = 0x541C

# offsetof(struct seccomp_data, ...): nr, arch, args[i] (low 32 bits on little-endian).
OFF_NR = 0
OFF_ARCH = 4


def _off_arg(i: int) -> int:
    return 16 + 8 * i


DENIED = (  # noqa: SIM905 - a word list reads better than 53 quoted names
    "keyctl add_key request_key ptrace process_vm_readv process_vm_writev io_uring_setup "
    "io_uring_enter io_uring_register bpf perf_event_open userfaultfd mount umount2 pivot_root "
    "unshare setns personality init_module finit_module delete_module kexec_load "
    "kexec_file_load open_by_handle_at name_to_handle_at open_tree move_mount fsopen fsconfig "
    "fsmount fspick mount_setattr acct swapon swapoff reboot syslog quotactl pidfd_getfd "
    "lookup_dcookie vhangup chroot settimeofday clock_settime clock_adjtime adjtimex "
    "sethostname setdomainname fanotify_init kcmp uselib iopl ioperm"
).split()

# Syscall numbers from <asm/unistd_64.h> (x86_64) and <asm-generic/unistd.h> (aarch64).
X86_64 = {
    "keyctl": 250, "add_key": 248, "request_key": 249, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "mount": 165, "umount2": 166, "pivot_root": 155, "unshare": 272,
    "setns": 308, "personality": 135, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169, "syslog": 103, "quotactl": 179,
    "pidfd_getfd": 438, "lookup_dcookie": 212, "vhangup": 153, "chroot": 161,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "sethostname": 170, "setdomainname": 171, "fanotify_init": 300, "kcmp": 312,
    "uselib": 134, "iopl": 172, "ioperm": 173,
    "socket": 41, "ioctl": 16,
}  # fmt: skip
AARCH64 = {
    "keyctl": 219, "add_key": 217, "request_key": 218, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "mount": 40, "umount2": 39, "pivot_root": 41, "unshare": 97,
    "setns": 268, "personality": 92, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
    "open_by_handle_at": 265, "name_to_handle_at": 264, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "acct": 89, "swapon": 224, "swapoff": 225, "reboot": 142, "syslog": 116, "quotactl": 60,
    "pidfd_getfd": 438, "lookup_dcookie": 18, "vhangup": 58, "chroot": 51,
    "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171,
    "sethostname": 161, "setdomainname": 162, "fanotify_init": 262, "kcmp": 272,
    "socket": 198, "ioctl": 29,
}  # fmt: skip


class _Asm:
    """A tiny assembler: instructions with symbolic forward jump targets."""

    def __init__(self) -> None:
        self.code: list[tuple[int, object, object, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def ins(self, op: int, k: int, jt: object = 0, jf: object = 0) -> None:
        self.code.append((op, jt, jf, k))

    def assemble(self) -> bytes:
        out = bytearray()
        for pc, (op, jt, jf, k) in enumerate(self.code):
            offsets = []
            for target in (jt, jf):
                if isinstance(target, str):
                    off = self.labels[target] - pc - 1
                else:
                    assert isinstance(target, int)
                    off = target
                if not 0 <= off <= 255:
                    raise ValueError(f"BPF jump out of range at {pc}")
                offsets.append(off)
            if op == BPF_JA:
                k, offsets = offsets[0], [0, 0]
            out += struct.pack("=HBBI", op, offsets[0], offsets[1], k)
        return bytes(out)


def _arch_block(asm: _Asm, tag: str, table: dict[str, int], x32: bool) -> None:
    deny, allow = f"{tag}_deny", f"{tag}_allow"
    asm.ins(BPF_LD_W_ABS, OFF_NR)
    if x32:
        asm.ins(BPF_JGE_K, X32_SYSCALL_BIT, deny, 0)
    for name in DENIED:
        if name in table:
            asm.ins(BPF_JEQ_K, table[name], deny, 0)
    asm.ins(BPF_JEQ_K, table["socket"], f"{tag}_socket", 0)
    asm.ins(BPF_JEQ_K, table["ioctl"], f"{tag}_ioctl", 0)
    asm.label(allow)
    asm.ins(BPF_RET_K, SECCOMP_RET_ALLOW)
    asm.label(deny)
    asm.ins(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM)
    asm.label(f"{tag}_socket")
    asm.ins(BPF_LD_W_ABS, _off_arg(0))
    asm.ins(BPF_JEQ_K, AF_UNIX, 0, 1)
    asm.ins(BPF_RET_K, SECCOMP_RET_ALLOW)
    asm.ins(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM)
    asm.label(f"{tag}_ioctl")
    asm.ins(BPF_LD_W_ABS, _off_arg(1))
    asm.ins(BPF_JEQ_K, TIOCSTI, 2, 0)
    asm.ins(BPF_JEQ_K, TIOCLINUX, 1, 0)
    asm.ins(BPF_RET_K, SECCOMP_RET_ALLOW)
    asm.ins(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM)


def build_filter() -> bytes:
    """The complete filter for x86_64 and aarch64 hosts, as bytes of ``struct sock_filter``."""
    asm = _Asm()
    asm.ins(BPF_LD_W_ABS, OFF_ARCH)
    asm.ins(BPF_JEQ_K, AUDIT_ARCH_X86_64, 0, "not_x86_64")
    _arch_block(asm, "x86_64", X86_64, x32=True)
    asm.label("not_x86_64")
    asm.ins(BPF_JEQ_K, AUDIT_ARCH_AARCH64, 0, "foreign")
    _arch_block(asm, "aarch64", AARCH64, x32=False)
    asm.label("foreign")
    asm.ins(BPF_RET_K, SECCOMP_RET_KILL_PROCESS)
    return asm.assemble()
