"""The bwrap backend's seccomp filter: a classic-BPF program that refuses privileged syscalls.

bubblewrap installs it (`--seccomp FD`, after setting no_new_privs) right before it runs the
sandbox's first program, so it binds everything the agent starts. What it refuses, with
EPERM unless noted:

- namespaces: `unshare`, `setns`, and `clone` with any CLONE_NEW* flag (a nested user
  namespace would give the agent a fresh set of capabilities); `clone3` gets ENOSYS, as in
  Docker's default profile, so C libraries fall back to `clone`, whose flags can be read;
- mounts: mount, umount2, pivot_root and the new mount API (fsopen ... mount_setattr);
- the kernel keyring (add_key, request_key, keyctl): keyrings are per user, not per
  sandbox, so they would carry data from one episode to the next;
- bpf, perf_event_open, userfaultfd, io_uring: large kernel attack surface, no task needs it;
- the host's clock, modules, kexec, reboot, swap, quotas, accounting, syslog, and
  open_by_handle_at (which reaches files outside the sandbox by handle);
- x32 and 32-bit compat syscalls (ENOSYS): their numbers differ, so they would bypass the list.

The program is checked against the kernel for real in tests/sandbox/test_bwrap_hardening.py.
"""

from __future__ import annotations

import functools
import os
import platform
import struct

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_CLONE_NAMESPACES = 0x7E020000
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (NEWTIME: clone3 only)."""

REFUSED: tuple[str, ...] = (
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr",
    "add_key", "request_key", "keyctl",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "quotactl", "quotactl_fd", "nfsservctl", "acct",
    "settimeofday", "adjtimex", "clock_settime", "clock_adjtime", "syslog", "vhangup",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
    "iopl", "ioperm", "uselib", "_sysctl",
)  # fmt: skip
"""Syscalls refused with EPERM (those an architecture lacks are skipped)."""

_NUMBERS: dict[str, dict[str, int]] = {
    "x86_64": {
        "mount": 165, "umount2": 166, "pivot_root": 155, "swapon": 167, "swapoff": 168,
        "reboot": 169, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "quotactl": 179, "quotactl_fd": 443, "nfsservctl": 180, "acct": 163,
        "settimeofday": 164, "adjtimex": 159, "clock_settime": 227, "clock_adjtime": 305,
        "kexec_load": 246, "kexec_file_load": 320, "add_key": 248, "request_key": 249,
        "keyctl": 250, "unshare": 272, "setns": 308, "perf_event_open": 298, "bpf": 321,
        "userfaultfd": 323, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "lookup_dcookie": 212, "syslog": 103, "vhangup": 153, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428,
        "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "iopl": 172, "ioperm": 173, "uselib": 134, "_sysctl": 156,
        "clone": 56, "clone3": 435,
    },
    "aarch64": {
        "mount": 40, "umount2": 39, "pivot_root": 41, "swapon": 224, "swapoff": 225,
        "reboot": 142, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "quotactl": 60, "quotactl_fd": 443, "nfsservctl": 42, "acct": 89,
        "settimeofday": 170, "adjtimex": 171, "clock_settime": 112, "clock_adjtime": 266,
        "kexec_load": 104, "kexec_file_load": 294, "add_key": 217, "request_key": 218,
        "keyctl": 219, "unshare": 97, "setns": 268, "perf_event_open": 241, "bpf": 280,
        "userfaultfd": 282, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "lookup_dcookie": 18, "syslog": 116, "vhangup": 58, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "move_mount": 429, "open_tree": 428,
        "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "clone": 220, "clone3": 435,
    },
}  # fmt: skip


class _Program:
    """A BPF program under construction: instructions whose jumps name labels."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def add(self, op: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.code.append((op, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, jt, jf, k) in enumerate(self.code):
            out += struct.pack("<HBBI", op, self._offset(index, jt), self._offset(index, jf), k)
        return bytes(out)

    def _offset(self, index: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        offset = self.labels[target] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"seccomp jump to {target!r} out of range ({offset})")
        return offset


NESTING: tuple[str, ...] = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount",
)  # fmt: skip
"""What a verifier's filter allows and the agent's refuses: the calls that make the nests the
agent's programs run in during grading (termgym/verifier/nest.py), which apply the agent's
filter to every such program before it starts. Nothing of the agent's runs unnested there."""


ZYGOTE: tuple[str, ...] = (*NESTING, "move_mount")
"""What a zygote's filter allows besides NESTING: attaching the root the host made for each
verifier it forks (termgym/verifier/zygote.py), which then applies the verifier's
filter (without it) before anything runs there."""


def build_filter(
    machine: str | None = None, *, nesting: bool = False, zygote: bool = False
) -> bytes:
    """The filter for `machine` (default: this one) as the bytes of a `struct sock_filter[]`;
    `nesting`: a verifier's, which allows NESTING and `clone` into new namespaces; `zygote`:
    a zygote's, which allows ZYGOTE as well.

    Raises:
        ValueError: no syscall table for the architecture (x86_64 and aarch64 are known).
    """
    machine = machine or platform.machine()
    if machine not in _NUMBERS:
        raise ValueError(
            f"expected an architecture among {sorted(_NUMBERS)} for the seccomp filter; "
            f"found {machine!r}"
        )
    numbers = _NUMBERS[machine]
    program = _Program()
    program.add(_LD_W_ABS, 4)  # seccomp_data.arch
    program.add(_JEQ_K, _AUDIT_ARCH[machine], 0, "enosys")
    program.add(_LD_W_ABS, 0)  # seccomp_data.nr
    if machine == "x86_64":
        program.add(_JGE_K, _X32_BIT, "enosys", 0)
    for name in refused(nesting=nesting or zygote, zygote=zygote):
        if name in numbers:
            program.add(_JEQ_K, numbers[name], "eperm", 0)
    program.add(_JEQ_K, numbers["clone3"], "enosys", 0)
    if not (nesting or zygote):  # a verifier's clones may make namespaces
        program.add(_JEQ_K, numbers["clone"], 0, "allow")
        program.add(_LD_W_ABS, 16)  # low 32 bits of args[0]: clone's flags on both architectures
        program.add(_JSET_K, _CLONE_NAMESPACES, "eperm", "allow")
    program.label("allow")
    program.add(_RET_K, _RET_ALLOW)
    program.label("eperm")
    program.add(_RET_K, _RET_ERRNO | _EPERM)
    program.label("enosys")
    program.add(_RET_K, _RET_ERRNO | _ENOSYS)
    return program.assemble()


def refused(*, nesting: bool = False, zygote: bool = False) -> tuple[str, ...]:
    """The syscalls refused with EPERM (a verifier's list, with `nesting`, allows NESTING;
    a zygote's, with `zygote`, ZYGOTE)."""
    allowed = ZYGOTE if zygote else NESTING if nesting else ()
    return tuple(n for n in REFUSED if n not in allowed)


@functools.lru_cache(maxsize=3)
def _cached(nesting: bool = False, zygote: bool = False) -> bytes:
    return build_filter(nesting=nesting, zygote=zygote)


def verifier_filter() -> bytes:
    """This machine's verifier filter, as bytes (what a zygote's child applies)."""
    return _cached(True)


def strict_filter() -> bytes:
    """This machine's filter, as bytes (what a verifier's nests apply to the agent's programs)."""
    return _cached()


def filter_fd(*, nesting: bool = False, zygote: bool = False) -> int:
    """A fresh readable fd holding this machine's filter (for `bwrap --seccomp FD`); with
    `nesting`, a verifier's; with `zygote`, a zygote's.

    The caller passes it to the child (`pass_fds`) and closes its own copy after the spawn;
    it is never inheritable here, so no other process spawned meanwhile gets it.
    """
    data = _cached(nesting, zygote)
    read, write = os.pipe()
    os.write(write, data)  # a few hundred bytes: far below a pipe's buffer
    os.close(write)
    return read


_RET_USER_NOTIF = 0x7FC00000
_WATCHED: dict[str, dict[str, int]] = {
    "x86_64": {"execve": 59, "execveat": 322, "mmap": 9, "mprotect": 10, "pkey_mprotect": 329,
               "open": 2, "openat": 257, "openat2": 437},
    "aarch64": {"execve": 221, "execveat": 281, "mmap": 222, "mprotect": 226,
                "pkey_mprotect": 288, "openat": 56, "openat2": 437},
}  # fmt: skip
_PROT_EXEC, _MAP_ANONYMOUS = 0x4, 0x20
_O_WRONLY, _O_DIRECTORY, _O_PATH = 0x1, 0x10000, 0x200000
_O_DIRECTORY_AARCH64 = 0x4000
"""aarch64 numbers O_DIRECTORY otherwise (its O_PATH is x86_64's)."""


def build_watch_filter(machine: str | None = None) -> bytes:
    """Snapshot grading's watch (termgym/verifier/watch.py): a filter that hands the tests'
    processes' calls that can load or run code to a supervisor outside their nest, as
    seccomp user notifications, and allows the rest: every exec; every executable mapping
    of a file (mmap with PROT_EXEC, not anonymous) and every mprotect that adds PROT_EXEC;
    every open that may read a file (open and openat but write-only, directory and O_PATH
    opens; every openat2, whose flags are not in its arguments). What the verifier's own
    filter refuses it still refuses: this one only adds a check in front of the kernel.

    Raises:
        ValueError: no syscall table for the architecture (x86_64 and aarch64 are known).
    """
    machine = machine or platform.machine()
    if machine not in _WATCHED:
        raise ValueError(
            f"expected an architecture among {sorted(_WATCHED)} for the watch filter; "
            f"found {machine!r}"
        )
    numbers = _WATCHED[machine]
    directory = _O_DIRECTORY_AARCH64 if machine == "aarch64" else _O_DIRECTORY
    program = _Program()
    program.add(_LD_W_ABS, 4)  # seccomp_data.arch: another one is the verifier filter's
    program.add(_JEQ_K, _AUDIT_ARCH[machine], 0, "allow")
    program.add(_LD_W_ABS, 0)  # seccomp_data.nr
    for name in ("execve", "execveat", "openat2"):
        program.add(_JEQ_K, numbers[name], "notify", 0)
    program.add(_JEQ_K, numbers["mmap"], "mmap", 0)
    program.add(_JEQ_K, numbers["mprotect"], "mprotect", 0)
    program.add(_JEQ_K, numbers["pkey_mprotect"], "mprotect", 0)
    program.add(_JEQ_K, numbers["openat"], "openat", 0)
    if "open" in numbers:
        program.add(_JEQ_K, numbers["open"], "open", 0)
    program.add(_RET_K, _RET_ALLOW)
    program.label("mmap")  # low 32 bits of args[2] (prot) and args[3] (flags)
    program.add(_LD_W_ABS, 16 + 8 * 2)
    program.add(_JSET_K, _PROT_EXEC, 0, "allow")
    program.add(_LD_W_ABS, 16 + 8 * 3)
    program.add(_JSET_K, _MAP_ANONYMOUS, "allow", "notify")
    program.label("mprotect")
    program.add(_LD_W_ABS, 16 + 8 * 2)
    program.add(_JSET_K, _PROT_EXEC, "notify", "allow")
    program.label("open")  # open(path, flags): flags in args[1]
    program.add(_LD_W_ABS, 16 + 8 * 1)
    program.add(_JSET_K, _O_WRONLY | directory | _O_PATH, "allow", "notify")
    program.label("openat")  # openat(dirfd, path, flags): flags in args[2]
    program.add(_LD_W_ABS, 16 + 8 * 2)
    program.add(_JSET_K, _O_WRONLY | directory | _O_PATH, "allow", "notify")
    program.label("notify")
    program.add(_RET_K, _RET_USER_NOTIF)
    program.label("allow")
    program.add(_RET_K, _RET_ALLOW)
    return program.assemble()


@functools.lru_cache(maxsize=1)
def watch_filter() -> bytes:
    """This machine's watch filter, as bytes (what snapshot grading's tests' process applies)."""
    return build_watch_filter()


_DOCKER_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


@functools.lru_cache(maxsize=1)
def verifier_profile(machine: str | None = None) -> str:
    """A verifier container's seccomp profile (Docker's JSON format): everything allowed but
    what the bwrap verifier's filter refuses (`refused(nesting=True)`), `clone3` ENOSYS. Docker's
    default profile refuses the calls the nests need (namespaces, mounts) without
    CAP_SYS_ADMIN, which no verifier gets; the agent's programs run under the strict filter
    all the same, applied by their nest."""
    import json

    machine = machine or platform.machine()
    if machine not in _DOCKER_ARCH:
        raise ValueError(
            f"expected an architecture among {sorted(_DOCKER_ARCH)} for the seccomp profile; "
            f"found {machine!r}"
        )
    return json.dumps(
        {
            "defaultAction": "SCMP_ACT_ALLOW",
            "architectures": [_DOCKER_ARCH[machine]],
            "syscalls": [
                {
                    "names": list(refused(nesting=True)),
                    "action": "SCMP_ACT_ERRNO",
                    "errnoRet": _EPERM,
                },
                {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": _ENOSYS},
            ],
        }
    )
