"""Runs inside the verifier and the zygote: the kernel calls the nests and the zygote share.

Injected as the module `termgym_kernel` (stdlib and ctypes, Python 3.7+): beside the runner
in every grading folder, imported by `termgym_nest`; and to a zygote on its stdin, before the
module `termgym_zygote` that imports it (`termgym.sandbox._zygote`). It holds the constants
of linux's headers both use and the few calls both make through the C library: a mount,
keeping only some capabilities, a seccomp filter. It acts on nothing by itself: each call is
made by the nest or the zygote that imports it, on paths and values of their own.
"""

from __future__ import annotations

import ctypes
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Sequence
    from typing import Any

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (
    0x08000000, 0x10000000, 0x20000000, 0x40000000,
)  # fmt: skip
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 1, 4, 38, 22
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
SECCOMP_MODE_FILTER = 2
SYSCALLS = {
    "x86_64": {"pivot_root": 155, "capset": 126, "clone": 56},
    "aarch64": {"pivot_root": 41, "capset": 91, "clone": 220},
}.get(os.uname().machine, {})
"""This machine's numbers of the system calls the C library may not wrap (none where the
machine is neither: the callers say so)."""
OPEN_TREE, MOVE_MOUNT = 428, 429  # the same on both architectures
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH = 1, 0o2000000, 0x8000, 4
AT_FDCWD = -100
ID_RANGE = 65536
"""The ids a nest's or a verifier's user namespace maps."""

_libc = []  # type: list[Any]


def libc() -> Any:
    """The C library (ctypes, errno kept), loaded at its first use."""
    if not _libc:
        _libc.append(ctypes.CDLL(None, use_errno=True))
    return _libc[0]


def check(result: int, what: str) -> None:
    """Raise OSError, saying `what` failed and why, unless the C call returned 0."""
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    """mount(2), raising OSError on failure."""
    check(
        libc().mount(
            None if source is None else source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            None if data is None else data.encode(),
        ),
        f"mount {source or fstype or ''} on {target}",
    )


def keep_only(caps: Sequence[int]) -> None:
    """This process (a namespace's root) keeps only the capabilities `caps`: dropped from its
    bounding, ambient, effective, permitted and inheritable sets (what it execs gets no more)."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        if cap not in caps:
            check(libc().prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"dropping capability {cap}")
    libc().prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    mask = sum(1 << cap for cap in caps)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    low, high = mask & 0xFFFFFFFF, mask >> 32
    data = (ctypes.c_uint32 * 6)(low, low, 0, high, high, 0)  # effective, permitted, inheritable
    check(libc().syscall(SYSCALLS.get("capset", -1), header, data), "capset")


class SockFprog(ctypes.Structure):
    """struct sock_fprog: a classic-BPF program's length and its instructions."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply_filter(program: bytes) -> None:
    """Install the classic-BPF `program` (bytes of struct sock_filter[]) on this thread, with
    no_new_privs (what it execs cannot gain a privilege the filter would not hold back)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    check(libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
