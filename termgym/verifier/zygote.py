"""Runs inside a zygote: forks each verifier's standby into a fresh verifier of its own.

Injected as the module `termgym_zygote` (stdlib and ctypes, Python 3.7+) into a zygote
(`termgym.sandbox._zygote`): the standby program of a `StandbySpec(zygote=True)`, started
once, which loads what it loads before any work exists and then calls `serve(child)`. The
kernel calls it shares with the nests are `termgym_kernel`'s, injected before it the same
way (the runner's `_serve` loads both).

Each request on the control socket (TERMGYM_ZYGOTE, SOCK_SEQPACKET, from the host alone) is
one message: a JSON object {"env", "workdir", "caps", "hostname", "filter"} and two descriptors, the
verifier's root (a detached clone of the overlay the host made for it: `open_tree`) and its
channel (a unix stream socket whose other end the host holds). For each, the zygote clones
a child into namespaces of its own, under the zygote's (`_clone`: fork, but into new user,
mount, pid, IPC, UTS and network namespaces at once, so the child is the verifier's pid 1):

1. its user namespace's ids are mapped one for one by the zygote (the zygote's root is the
   sandboxes' unprivileged host uid: a capability in it reaches nothing outside);
2. the host moves it into the verifier's cgroups (it says who it is on the channel, where
   the kernel tells the host its pid) and answers;
3. a cgroup namespace (rooted at the verifier's cgroup); the root is attached, and the
   verifier's pid 1 mounts a fresh /proc and /dev
   (with a fresh /dev/shm and devpts) into it, names the host "sandbox", brings its
   loopback up, pivots into it and lets the zygote's filesystem go;
4. it keeps the capabilities the request names (a verifier's), applies the verifier's
   seccomp program (no_new_privs), starts a session of its own, takes the request's
   environment and working folder, and has only the channel open, on fds 0, 1 and 2 (and
   what it loaded keeps its descriptors of /dev/null, which carry nothing). Then
   `child()` runs: the standby, from here as a standby of a verifier started by bwrap.

So nothing of one verifier reaches another: each has its own root (the host's fresh overlay
of the clean image), processes, IPC, network and cgroup; what the zygote loaded is copied
into each child at its fork and nothing returns to the zygote from a child. The zygote
reads nothing but its control socket, and never holds a verifier's channel past the fork.
"""

from __future__ import annotations

import _signal
import array
import contextlib
import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import stat
import struct
import sys

from termgym_kernel import (
    AT_FDCWD,
    CLONE_NEWCGROUP,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    ID_RANGE,
    MNT_DETACH,
    MOVE_MOUNT,
    MOVE_MOUNT_F_EMPTY_PATH,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    SYSCALLS,
    apply_filter,
    check,
    keep_only,
    libc,
    mount,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import: for the checkers only
    from collections.abc import Callable
    from typing import Any

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
"""The device nodes a verifier gets, as bwrap's --dev gives them."""
CHILD = b"TERMGYM-ZYGOTE-CHILD\n"
"""The child's first line on its channel: the host reads its pid off the message (the
host's copy of these three: `termgym.sandbox._zygote`)."""
PLACED = b"placed\n"
"""The host's answer once the child is in the verifier's cgroups."""
ERROR = "TERMGYM-ZYGOTE-ERROR "
"""The line a child prints instead of its standby's output when it could not be made."""
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

_libpy = []  # type: list[Any]


def _py() -> Any:
    """syscall(2), called with the GIL held (ctypes.PyDLL), returning a long."""
    if not _libpy:
        call = ctypes.PyDLL(None, use_errno=True).syscall
        call.restype = ctypes.c_long
        _libpy.append(call)
    return _libpy[0]


LOADED: frozenset[str] = frozenset()
"""The modules the zygote had loaded when it began to serve: a child's runner reports what
it imported beyond them (`termgym.grading.RunnerReport.imported`)."""


def serve(child: Callable[[], None]) -> None:
    """Fork a verifier per request on the control socket, until the host closes it (module
    docstring); each child runs `child()` there and leaves with its status."""
    global LOADED
    LOADED = frozenset(sys.modules)
    control = socket.socket(fileno=int(os.environ.pop("TERMGYM_ZYGOTE")))
    libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its children start non-dumpable too
    signal.signal(signal.SIGCHLD, _reap)
    size = socket.CMSG_SPACE(2 * array.array("i").itemsize)
    while True:
        try:
            message, ancillary, _, _ = control.recvmsg(65536, size)
        except InterruptedError:
            continue
        if not message:
            os._exit(0)  # the host let the zygote go
        fds = array.array("i")
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        try:
            if len(fds) == 2:
                _fork(json.loads(message), fds[0], fds[1], control.fileno(), child)
        except (OSError, ValueError):
            pass  # that verifier's host sees its channel close without a ready line
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _reap(signum: int, frame: object) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _fork(request: dict[str, Any], root: int, channel: int, control: int,
          child: Callable[[], None]) -> None:  # fmt: skip
    """Clone the verifier's pid 1 into namespaces of its own; map its user namespace. The
    child runs `child()` once it is made (`_made`), and leaves with its status."""
    told, tell = os.pipe()
    heard, hear = os.pipe()
    pid = _clone(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
                 | CLONE_NEWNET)  # fmt: skip
    if pid == 0:
        code = 1
        try:
            os.close(told)
            os.close(hear)
            _made(request, root, channel, control, tell, heard)
            child()
            code = 0
        except BaseException as exc:  # noqa: B036 - said on the channel, then out
            with contextlib.suppress(OSError):
                os.write(channel, (ERROR + str(exc)[:500] + "\n").encode("utf-8", "replace"))
        finally:
            os._exit(code)
    os.close(tell)
    os.close(heard)
    try:
        if os.read(told, 1) == b"u":
            line = f"0 0 {ID_RANGE}\n"
            for name in ("uid_map", "gid_map"):
                with open(f"/proc/{pid}/{name}", "w") as handle:
                    handle.write(line)
            os.write(hear, b"m")
    finally:
        os.close(told)
        os.close(hear)


def _clone(flags: int) -> int:
    """`os.fork()` into the new namespaces `flags` at once, which fork cannot make: the
    clone system call with fork's arguments (a copy of this process, on its own stack's
    copy), between Python's own steps around a fork (its locks, its fork hooks), as
    `os.fork` takes them. So the child is pid 1 of its pid namespace, and no process stands
    between it and the zygote. One thing glibc's fork does is not done: the C library's
    record of the child's thread id still holds the zygote's. It is the same wherever the
    child reads it, so its locks agree; only what hands it to the kernel (`raise`, a signal
    to a thread, a priority-inheriting lock) would miss, and the child does none of that
    (the forks it makes record their own)."""
    api = ctypes.pythonapi
    if "clone" not in SYSCALLS or not hasattr(api, "PyOS_BeforeFork"):  # Python 3.6
        raise OSError(errno.ENOSYS, "this zygote cannot clone its verifiers")
    call = _py()  # holds the GIL through the call, as os.fork does
    api.PyOS_BeforeFork()
    pid = call(ctypes.c_long(SYSCALLS["clone"]), ctypes.c_ulong(flags | signal.SIGCHLD),
               None, None, None, None)  # fmt: skip
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    code = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(code, "clone: " + os.strerror(code))
    return int(pid)


def _made(request: dict[str, Any], root: int, channel: int, control: int, tell: int,
          heard: int) -> None:  # fmt: skip
    """In the verifier's pid 1, just cloned: steps 1 to 3 of the module docstring, then the
    mounts of `_first`."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    check(libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    keep = {root, channel, tell, heard}
    null = os.stat("/dev/null").st_rdev
    for fd in _open_fds():
        if fd not in keep and not _is_null(fd, null):  # what it loaded may hold a /dev/null
            with contextlib.suppress(OSError):
                os.close(fd)
    del control
    os.write(tell, b"u")
    if os.read(heard, 1) != b"m":
        raise OSError(errno.EPERM, "the zygote did not map the verifier's ids")
    os.close(tell)
    os.close(heard)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    os.write(channel, CHILD)
    if _read_line(channel) != PLACED:
        raise OSError(errno.EPERM, "the host did not place the verifier in its cgroups")
    check(libc().unshare(CLONE_NEWCGROUP), "unshare(cgroup)")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # this process's pid as the zygote's /proc names it (its own pid is 1)
    target = "/tmp/.termgym-root-" + os.readlink("/proc/self")
    os.mkdir(target, 0o700)
    check(
        libc().syscall(MOVE_MOUNT, root, b"", AT_FDCWD, target.encode(),
                     MOVE_MOUNT_F_EMPTY_PATH),
        "attaching the verifier's root",
    )  # fmt: skip
    os.close(root)
    _first(request, target, channel)


def _read_line(fd: int) -> bytes:
    line = b""
    while not line.endswith(b"\n") and len(line) < 256:
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
    return line


def _open_fds() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/fd")]


def _is_null(fd: int, null: int) -> bool:
    """Whether `fd` is open on /dev/null (it carries nothing from one fork to another)."""
    try:
        info = os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == null


def _first(request: dict[str, Any], root: str, channel: int) -> None:
    """In the verifier's pid 1: step 3's mounts, then step 4 (module docstring)."""
    check(libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    # each process shown only to its own user and to termgym's group (PROC_GID of
    # termgym/isolation/_procview.py): the agent's programs list only their own
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
           "hidepid=invisible,gid=60100")  # fmt: skip
    mount(root + "/proc/sys", root + "/proc/sys", None, MS_BIND | MS_REC)
    mount(None, root + "/proc/sys", None,
           MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)  # fmt: skip
    _lay_out_dev(root + "/dev")
    socket.sethostname(request.get("hostname") or "sandbox")
    _loopback_up()
    os.chdir(root)
    check(libc().syscall(SYSCALLS["pivot_root"], b".", b"."), "pivot_root")
    check(libc().umount2(b".", MNT_DETACH), "letting the zygote's root go")
    os.chdir("/")
    keep_only(request.get("caps") or [])
    os.setsid()
    os.umask(0o022)
    for number in range(1, signal.NSIG):  # the C module's call: no enum made per signal
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            _signal.signal(number, _signal.SIG_DFL)
    for fd in (0, 1, 2):
        os.dup2(channel, fd)
    if channel > 2:
        os.close(channel)
    os.environ.clear()
    os.environ.update(request.get("env") or {})
    os.chdir(request.get("workdir") or "/")
    if request.get("filter"):
        apply_filter(bytes.fromhex(request["filter"]))


def _lay_out_dev(dev: str) -> None:
    """A fresh /dev, as bwrap's --dev makes it: the zygote's device nodes bound in, a new
    devpts, an empty /dev/shm, the usual links."""
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for name in DEVICES:
        path = dev + "/" + name
        open(path, "w").close()
        mount("/dev/" + name, path, None, MS_BIND)
    for name in ("pts", "shm"):
        os.mkdir(dev + "/" + name, 0o755)
    os.chmod(dev + "/shm", 0o1777)
    mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=620")  # fmt: skip
    for name, target in (("ptmx", "pts/ptmx"), ("fd", "/proc/self/fd"),
                         ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("core", "/proc/kcore")):  # fmt: skip
        os.symlink(target, dev + "/" + name)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))
