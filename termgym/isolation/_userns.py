"""A user namespace whose root is an unprivileged host uid, for the bwrap backend run as root.

bubblewrap started by host root makes sandboxes whose root IS host root: global sysctls,
the host's keyrings and setuid files on the host disk are within its reach. Here termgym
(as root) makes one user namespace per process whose ids 0..65535 are host ids
`UID_BASE`..`UID_BASE + 65535`, and every bwrap process enters it, as its root, before
bwrap runs (through `nsenter`, given this process's descriptor of it, kept open for the
process's life: `termgym.sandbox._spawn`). Inside, root is root of that namespace only; on
the host it is uid `UID_BASE`, owning nothing but the sandbox's own files. Uid `AGENT_UID` (the
unprivileged user grading runs the agent's programs as) exists in it too.

The exported image root filesystems are owned by the shifted ids (`termgym.images._build`), so
inside a sandbox the system files belong to root as usual.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time

from termgym._programs import on_path
from termgym.errors import BackendUnavailable

UID_BASE = int(os.environ.get("TERMGYM_UID_BASE", "300000"))
"""Host uid of a bwrap sandbox's root (TERMGYM_UID_BASE); the next 65535 ids are its users."""

ID_COUNT = 65536
AGENT_UID = 60000
"""The unprivileged user grading runs the agent's programs as, in every backend."""

_lock = threading.Lock()
_fd: int | None = None


def mapped() -> bool:
    """True when sandboxes get a shifted user namespace here (termgym runs as root)."""
    return os.geteuid() == 0 and on_path("unshare") is not None


def userns_fd() -> int:
    """An fd of this process's shifted user namespace, made on first use (kept open).

    Raises:
        BackendUnavailable: the namespace could not be made (not root, no `unshare`).
    """
    global _fd
    with _lock:
        if _fd is None:
            _fd = _make()
        return _fd


def _make() -> int:
    if not mapped():
        raise BackendUnavailable(
            "Expected to run as root with util-linux's `unshare` to give bwrap sandboxes an "
            "unprivileged host uid; found neither."
        )
    holder = subprocess.Popen(
        ["unshare", "--user", "--", "sleep", "30"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        mine = os.readlink("/proc/self/ns/user")
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{holder.pid}/ns/user") != mine:
                    break
            if holder.poll() is not None or time.monotonic() > deadline:
                problem = holder.stderr.read().decode() if holder.stderr else ""
                raise BackendUnavailable(f"Could not make a user namespace: {problem.strip()}")
            time.sleep(0.002)
        line = f"0 {UID_BASE} {ID_COUNT}\n"
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{holder.pid}/{name}", "w") as handle:
                handle.write(line)
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.kill()
        holder.wait()
        if holder.stderr:
            holder.stderr.close()


def host_id(sandbox_id: int) -> int:
    """The host uid (or gid) of a sandbox id."""
    return UID_BASE + sandbox_id if mapped() else os.geteuid()
