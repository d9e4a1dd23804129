"""A verifier's /proc shows each process only to its own user and to termgym's group.

During grading the agent's programs run in nests inside the verifier (termgym/verifier/
nest.py): pid namespaces of their own, but /proc is the verifier's (a nest cannot mount a
proc of its own: the kernel refuses a new proc under a user namespace whose proc has
covered paths, which every verifier's has: bubblewrap's and Docker's). Listed there, every
process of the verifier showed with its command line: the runner, the tests, other
programs. So the verifier's proc is mounted (or remounted) with `hidepid=invisible` and
`gid=PROC_GID`: a process sees only those it could trace (its own user's, dumpable), and
termgym's side sees them all through the group PROC_GID, which the runner takes at its
start (termgym/verifier/runner.py) and every program of the agent's drops (its nest's
entry clears its groups).

A zygote's child mounts its proc so (termgym/verifier/zygote.py); a Docker
verifier's and a bubblewrap verifier's standby sandbox are remounted from the host once
started (`hide_processes`): a thread of this process, with a filesystem context of its own,
enters the sandbox's mount namespace and remounts its /proc, running nothing of the
sandbox's and forking nothing.
"""

from __future__ import annotations

import ctypes
import os
import threading

PROC_GID = 60100
"""termgym's group in a verifier: its members see every process in its /proc (hidepid's
`gid=`). Not the agent's (60000), and dropped by each of the agent's programs."""
MS_REMOUNT, MS_NOSUID, MS_NODEV, MS_NOEXEC = 32, 2, 4, 8
CLONE_NEWNS, CLONE_FS = 0x00020000, 0x00000200

_libc: list[ctypes.CDLL] = []


def _c() -> ctypes.CDLL:
    if not _libc:
        _libc.append(ctypes.CDLL(None, use_errno=True))
    return _libc[0]


def host_gid(pid: int, gid: int = PROC_GID) -> int | None:
    """`gid` of process `pid`'s user namespace as this process's namespace knows it (a
    bubblewrap sandbox maps its ids onto the host's at an offset), or None when unmapped."""
    with open(f"/proc/{pid}/gid_map") as handle:
        for line in handle:
            inside, outside, count = (int(x) for x in line.split())
            if inside <= gid < inside + count:
                return outside + gid - inside
    return None


def hide_processes(pid: int, gid: int = PROC_GID) -> str | None:
    """Remount the /proc of process `pid`'s mount namespace (a verifier's, never this
    one's) with hidepid=invisible and its termgym group; None when done, else why not."""
    try:
        if os.stat(f"/proc/{pid}/ns/mnt").st_ino == os.stat("/proc/self/ns/mnt").st_ino:
            return f"process {pid} shares this process's mount namespace"
        outside = host_gid(pid, gid)
        if outside is None:
            return f"group {gid} is not mapped in process {pid}'s user namespace"
        fd = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        return f"process {pid}: {exc}"
    libc = _c()
    options = f"hidepid=invisible,gid={outside}".encode()
    said: list[str] = []
    worker = threading.Thread(
        target=_remount_in, args=(libc, fd, options, said), name="termgym-procview", daemon=True
    )
    try:
        worker.start()
        worker.join()
    finally:
        os.close(fd)
    return (said[0] or None) if said else "the remounting thread ended without a word"


def _remount_in(libc: ctypes.CDLL, fd: int, options: bytes, said: list[str]) -> None:
    """In a thread of its own that ends right after: take a filesystem context of its own
    (unshare CLONE_FS, which a thread may), enter the mount namespace `fd` and remount its
    /proc. No fork (nothing of this process runs between a fork and an exec) and no exec
    (nothing is looked up by path in the sandbox's filesystem)."""
    if libc.unshare(CLONE_FS) != 0:
        said.append(f"unshare: {os.strerror(ctypes.get_errno())}")
    elif libc.setns(fd, CLONE_NEWNS) != 0:
        said.append(f"setns: {os.strerror(ctypes.get_errno())}")
    elif libc.mount(None, b"/proc", None, ctypes.c_ulong(
        MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC
    ), options) != 0:  # fmt: skip
        said.append(f"remounting /proc: {os.strerror(ctypes.get_errno())}")
    else:
        said.append("")


def first_child(pid: int) -> int | None:
    """A child of `pid` (bwrap's: the sandbox's first process), or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            children = handle.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None
