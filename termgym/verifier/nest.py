"""Runs inside the verifier: the sandbox of its own every program of the agent's runs in.

Injected beside the runner as the module `termgym_nest` (stdlib and ctypes, Python 3.7+),
and used by `termgym_agentexec` for every program the graders start as the agent's user.
The kernel calls it shares with the zygote (a mount, capabilities, the seccomp filter) are
`termgym_kernel`'s.

A nest is a user, mount, pid, IPC and UTS namespace under the verifier's, made at the
first program a job's test starts and ended after the job (`termgym_agentexec`); after each
test every process left in it is killed, and a nest that was handed paths (`hand`) or ran
a program as root ends with the test, the next test's programs getting a fresh one:
- **mount**: every mount of the verifier's is read-only in it, but the agent's work, the
  temporary folders and what the nest's spec names writable; the grading folders (and, for
  imported tasks, the tests) are covered by an empty read-only filesystem; /dev/shm is a
  fresh one. So a program of the agent's can change nothing a root process of the grading
  loads later, and sees nothing of the grading but what the test hands it.
- **pid**: its programs see only each other (and the nest's init, pid 1); they cannot
  signal or trace anything of the grading, and whatever they leave running ends with the
  nest: killing its init ends every process in it.
- **user**: ids are the verifier's (an identity map, without root unless the spec asks),
  but a capability held in the nest reaches nothing outside it; its programs run as `uid`
  (the agent's user) with none, with
  no_new_privs and the strict seccomp filter (`filter` bytes: no namespaces, no mounts, no
  keyrings ...), and out-of-memory first in line.

How a program enters (`Nest.entry`, called in the child `subprocess` forked for it, before
exec): it joins the nest's namespaces, forks once more, and the grandchild becomes the
program (dropping its ids and capabilities, applying the filter, then exec). The child
stays in the verifier as the program's proxy: the test's `Popen` holds its pid, it passes
on the signals it is sent, dies with the program's status, and the program dies with it
(parent-death signal), so a test that kills its program on a timeout kills it.

Nothing here trusts the agent: the nest is made before any program of its runs in it, by
root processes of the grading, from the verifier's own files.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import json
import os
import signal
import socket
import sys

from termgym_kernel import (
    AT_RECURSIVE,
    CLONE_NEWIPC,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    ID_RANGE,
    MOVE_MOUNT,
    MOVE_MOUNT_F_EMPTY_PATH,
    MS_BIND,
    MS_NOATIME,
    MS_NODEV,
    MS_NODIRATIME,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_RELATIME,
    MS_REMOUNT,
    OPEN_TREE,
    OPEN_TREE_CLOEXEC,
    OPEN_TREE_CLONE,
    PR_SET_PDEATHSIG,
    SYSCALLS,
    apply_filter,
    check,
    keep_only,
    libc,
    mount,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Callable, Sequence
    from typing import Any

_ST_TO_MS = ((1, MS_RDONLY), (2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC),
             (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME))  # fmt: skip
_PIVOT_ROOT = SYSCALLS.get("pivot_root", -1)
VIRTUAL = ("/proc", "/sys", "/dev")
"""Mount points left as they are (and what lies below them)."""
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2, signal.SIGALRM, signal.SIGCONT, signal.SIGWINCH)  # fmt: skip


def _mounts() -> list[str]:
    """(mount point, statvfs flags) of this mount namespace, parents first."""
    points = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = line.split()[4].replace("\\040", " ").replace("\\011", "\t")
            points.append(point.replace("\\012", "\n").replace("\\134", "\\"))
    return points


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _kept_flags(point: str) -> int | None:
    """The mount flags a read-only remount of `point` must keep (a mount locked in a user
    namespace keeps nosuid, nodev ... and refuses a remount that would drop them); None
    where it cannot be looked at."""
    try:
        flags = os.statvfs(point).f_flag
    except OSError:
        return None
    keep = 0
    for st, ms in _ST_TO_MS:
        if flags & st:
            keep |= ms
    return keep


def _read_only(point: str, keep: int) -> None:
    """Remount `point` read-only, keeping the flags `keep` (`_kept_flags`)."""
    try:
        mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | keep)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOENT, errno.EACCES):
            raise


BIND, COVER, READ_ONLY, SHM = "B", "C", "R", "S"
"""The kinds of a layout's steps (`_layout`), as the launcher's make mode reads them too."""


def _layout(spec: dict[str, Any]) -> list[tuple[str, int, str]]:
    """The steps (kind, flags, path) that give a nest its view (module docstring), worked
    out from this mount namespace as it is (the nest's is a copy of it): each writable
    path bound onto itself, each hidden folder covered (a detached copy of what it covers
    held first, for `Nest.hand`), every other mount remounted read-only (with the flags it
    must keep), and a fresh /dev/shm. The new binds and covers are below the paths they
    are made at, so the remounts that follow them are the same whether worked out before
    or after them."""
    steps = []
    writable = [p for p in spec["writable"] if os.path.lexists(p) and not os.path.islink(p)]
    steps += [(BIND, 0, path) for path in writable]
    steps += [
        (COVER, 0, path) for path in spec["hidden"]
        if os.path.isdir(path) and not os.path.islink(path)
    ]  # fmt: skip
    if spec.get("read_only", True):
        for point in _mounts():
            if _under(point, VIRTUAL) or _under(point, writable) or _under(point, spec["hidden"]):
                continue
            keep = _kept_flags(point)
            if keep is not None:
                steps.append((READ_ONLY, keep, point))
    if os.path.isdir("/dev/shm"):
        steps.append((SHM, 0, "/dev/shm"))
    return steps


def _lay_out(spec: dict[str, Any]) -> dict[str, int]:
    """In the nest's fresh mount namespace: the view its programs get (`_layout`, after the
    pivot into `spec["root"]` where there is one); and, for each covered folder, a detached
    copy of what it covers (`Nest.hand`)."""
    held = {}
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    if spec.get("root"):
        _pivot(spec)
    for kind, flags, path in _layout(spec):
        if kind == BIND:
            mount(path, path, None, MS_BIND | MS_REC)
        elif kind == COVER:
            with contextlib.suppress(OSError):  # no new mount API (before Linux 5.2): nothing
                held[path] = _open_tree(-100, path, OPEN_TREE_CLONE | AT_RECURSIVE)
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                   "size=64k,mode=0755")  # fmt: skip
        elif kind == READ_ONLY:
            _read_only(path, flags)
        elif kind == SHM:
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    return held


def _pivot(spec: dict[str, Any]) -> None:
    """Make `spec["root"]` (the snapshot) the nest's root, with `spec["binds"]` ([source in
    the verifier, target in the new root, read-only]) mounted into it, the verifier's /proc,
    /dev and /sys, `spec["unlink"]` removed and `spec["files"]` written.

    Every path of the new root is resolved after the pivot, inside it: a link the agent
    left in its filesystem (an absolute one, say) leads nowhere but into its own files. The
    old root is reached through a folder with a random name until it is let go."""
    root = spec["root"]
    mount(root, root, None, MS_BIND | MS_REC)
    old = "/.termgym-old-" + os.urandom(8).hex()
    os.mkdir(root + old, 0o700)
    check(libc().syscall(_PIVOT_ROOT, root.encode(), (root + old).encode()), "pivot_root")
    os.chdir("/")
    for place in spec.get("fresh", []):
        # termgym's own folder in the new root: the agent's files there (a link to a folder
        # of its own, which the binds below would follow) are covered by a fresh one
        if os.path.islink(place) or os.path.lexists(place) and not os.path.isdir(place):
            os.unlink(place)
        os.makedirs(place, exist_ok=True)
        mount("tmpfs", place, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
    kept = list(VIRTUAL) + list(spec.get("fresh", []))
    for source, target, read_only in [[v, v, False] for v in VIRTUAL] + spec.get("binds", []):
        source = old + source
        if not os.path.exists(source):
            continue
        if not _under(target, kept) and _under(os.path.realpath(target), kept):
            continue  # a link of the agent's would land it on termgym's or the kernel's
        target = target if _under(target, kept) else os.path.realpath(target)
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        elif not os.path.exists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()
        mount(source, target, None, MS_BIND | MS_REC)
        if read_only:
            for point in _mounts():
                keep = _kept_flags(point) if _under(point, [target]) else None
                if keep is not None:
                    _read_only(point, keep)
    for path in spec.get("unlink", []):
        with contextlib.suppress(OSError):
            os.unlink(path)
    for path, text in spec.get("files", {}).items():
        with contextlib.suppress(OSError):
            os.unlink(path)
        with open(path, "w") as handle:
            handle.write(text)
    check(libc().umount2(old.encode(), 2), "umount " + old)  # MNT_DETACH
    os.rmdir(old)


def _open_tree(dirfd: int, path: str, flags: int) -> int:
    fd = libc().syscall(OPEN_TREE, dirfd, path.encode(), flags | OPEN_TREE_CLOEXEC)
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"open_tree {path}: {os.strerror(code)}")
    return int(fd)


def _hand_one(tree: int, cover: str, path: str) -> None:
    """In the nest's mount namespace: mount `path`, from the held copy `tree` of what the
    filesystem at `cover` covers, at its place (the cover writable for the moment only)."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    inner = os.path.relpath(path, cover)
    part = _open_tree(tree, inner, OPEN_TREE_CLONE | AT_RECURSIVE)
    try:
        mount(None, cover, None, MS_REMOUNT | flags)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if os.path.isdir(f"/proc/self/fd/{part}"):
                os.makedirs(path, exist_ok=True)
            elif not os.path.lexists(path):
                open(path, "a").close()
            moved = libc().syscall(
                MOVE_MOUNT, part, b"", -100, path.encode(), MOVE_MOUNT_F_EMPTY_PATH
            )
            check(moved, "move_mount " + path)
        finally:
            mount(None, cover, None, MS_REMOUNT | MS_RDONLY | flags)
    finally:
        os.close(part)


class NestError(OSError):
    """A nest could not be made here (the reason says why)."""


class Nest:
    """One nest (module docstring): made by `Nest(spec)`, entered by `entry(...)`, ended by
    `close()`. `spec`: {"writable": [paths], "hidden": [paths], "uid": int, "filter": path of
    the seccomp program, "read_only": bool (default true)}."""

    def __init__(self, spec: dict[str, Any], launcher: int = -1) -> None:
        """`launcher`: a descriptor of the nests' launcher (termgym_nest_launch), whose
        make mode makes the nest (for a nest that pivots into `spec["root"]`, the Python
        maker does, and starts the launcher's init mode as its pid 1); -1: the Python
        maker, and a fork of it as pid 1."""
        self.spec = spec
        self.launcher = launcher
        self.program = b""
        if spec.get("filter"):
            with open(spec["filter"], "rb") as handle:
                self.program = handle.read()
        self.fds: dict[str, int] = {}
        self.trees: dict[str, int] = {}
        self.init = 0
        self.handed: set[str] = set()
        self._make()

    def reusable(self) -> bool:
        """Whether the next test's programs may run in this nest once the agent's user's
        processes in it are killed: it was handed nothing (what one test hands stays that
        test's) and its programs do not run as root (one could change its mounts)."""
        return bool(self.init) and not self.handed and int(self.spec.get("uid", -1)) != 0

    def _make(self) -> None:
        """Start the nest's maker: it makes the namespaces (its ids mapped from here), lays
        out the mounts, starts the nest's init, and sends back descriptors of its namespaces
        (the nest's processes are non-dumpable, as the runner they are forked from, so their
        /proc entries open for nobody else). The maker is the launcher's make mode where
        there is a launcher and no root to pivot into (posix_spawn: no copy of this
        interpreter; the layout worked out here, `_layout`), else a fork of this process."""
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        steps = None
        if self.launcher >= 0 and not self.spec.get("root") and hasattr(os, "posix_spawn"):
            steps = _layout(self.spec)
            os.set_inheritable(there.fileno(), True)
            try:
                child = os.posix_spawn(
                    f"/proc/self/fd/{self.launcher}", [INIT_NAME, "make", str(there.fileno())],
                    {},
                )  # fmt: skip
            except OSError:  # the launcher is there but cannot run here: a fork makes it
                steps = None
        if steps is None:
            child = os.fork()
            if child == 0:
                here.close()
                try:
                    _make_nest(there, self.spec, self.launcher)
                finally:
                    os._exit(0)
        there.close()
        try:
            first, fds = _receive(here)
            status = first
            if first.startswith(b"u"):
                seen = int(first[1:].split(b"\n")[0])
                try:
                    line = _id_map(self.spec)
                    for name in ("uid_map", "gid_map"):
                        with open(f"/proc/{seen}/{name}", "w") as handle:
                            handle.write(line)
                finally:
                    here.sendall(b"m" + _steps_message(steps or []))
                status, fds = _receive(here)
        finally:
            here.close()
            os.waitpid(child, 0)
        if not status.startswith(b"p") or len(fds) < 3:
            for fd in fds:
                os.close(fd)
            raise NestError(errno.EPERM, "a nest could not be made: " + status[1:].decode())
        init, _, held = status[1:].partition(b" ")
        self.init = int(init)
        self.fds = dict(zip(("user", "mnt", "pid"), fds[:3]))  # noqa: B905 - Python 3.7+
        if steps is not None:  # the launcher says which covered folders it held, in order
            covered = [path for kind, _, path in steps if kind == COVER]
            names = [path for path, mark in zip(covered, held.decode()) if mark == "1"]  # noqa: B905
        else:
            names = json.loads(held or b"[]")
        self.trees = dict(zip(names, fds[3:]))  # noqa: B905

    def entry(self, cwd: str, uid: int, groups: Sequence[int] = ()) -> Callable[[], None]:
        """A preexec function for `subprocess` that starts the program in this nest, as
        `uid` (root of the nest keeps only `spec["keep_caps"]`), in no group but `groups`
        (termgym's own, for snapshot grading's tests: they see every process in /proc, as
        the runner does; the agent's programs get none)."""
        fds, program, init = dict(self.fds), self.program, self.init
        kept_groups = list(groups)
        keep = self.spec.get("keep_caps") or []

        def enter() -> None:
            try:
                join()
            except BaseException as exc:  # subprocess says only that the hook failed: say why
                with contextlib.suppress(OSError):
                    os.write(
                        2, f"termgym: could not start the program in its nest: {exc}\n".encode()
                    )
                raise

        def join() -> None:
            for kind, flag in (("user", CLONE_NEWUSER), ("mnt", CLONE_NEWNS),
                               ("pid", CLONE_NEWPID)):  # fmt: skip
                check(libc().setns(fds[kind], flag), "setns(" + kind + ")")
            os.chdir(cwd)
            child = os.fork()
            if child == 0:
                for fd in fds.values():
                    os.close(fd)
                os.setgroups(kept_groups)
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                if uid == 0:
                    keep_only(keep)
                check(libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
                if os.getppid() == 1:  # the proxy (outside this pid namespace: 0) is gone
                    os._exit(128 + signal.SIGKILL)
                try:
                    with open("/proc/self/oom_score_adj", "w") as handle:
                        handle.write("1000")
                except OSError:
                    pass
                if program:
                    apply_filter(program)
                return  # subprocess goes on to exec the program
            _proxy(child, init)

        return enter

    def hand(self, paths: Sequence[str]) -> None:
        """Make `paths` (absolute, below a folder the nest covers) visible at their own places
        in the nest: what a test hands a program (a source file of the tests it compiles,
        say). Each is mounted from the copy of the covered folder the nest's maker held
        before covering it; the cover stays read-only around it."""
        wanted = [
            p for p in dict.fromkeys(paths)
            if p not in self.handed and _under(p, list(self.trees)) and os.path.exists(p)
        ]  # fmt: skip
        if not wanted:
            return
        child = os.fork()
        if child == 0:
            code = 1
            try:
                for kind, flag in (("user", CLONE_NEWUSER), ("mnt", CLONE_NEWNS)):
                    check(libc().setns(self.fds[kind], flag), "setns(" + kind + ")")
                for path in wanted:
                    cover = next(h for h in self.trees if _under(path, [h]))
                    _hand_one(self.trees[cover], cover, path)
                code = 0
            except BaseException as exc:  # noqa: B036 - said on stderr, then out
                with contextlib.suppress(Exception):
                    os.write(2, f"termgym: could not hand {wanted} to its nest: {exc}\n".encode())
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        if status == 0:
            self.handed.update(wanted)

    def close(self) -> None:
        """End the nest: every process in it is killed with its init."""
        if self.init:
            with contextlib.suppress(OSError):
                os.kill(self.init, signal.SIGKILL)
            self.init = 0
        for fd in [*self.fds.values(), *self.trees.values()]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds, self.trees = {}, {}


def _make_nest(sock: socket.socket, spec: dict[str, Any], launcher: int) -> None:
    """In the maker (Nest._make): the namespaces, the mounts, the init; then report back."""
    fds = []
    try:
        check(libc().unshare(CLONE_NEWUSER), "unshare(user)")
        # this process's pid as /proc names it: in a nest the parent's pid namespace may
        # not be the one /proc shows
        sock.sendall(b"u" + os.readlink("/proc/self").encode() + b"\n")
        if sock.recv(1) != b"m":
            return
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
        check(libc().unshare(flags), "unshare(mount, pid, ipc, uts)")
        held = _lay_out(spec)
        init = _spawn_init(launcher)
        if init == 0:
            _init()
        for kind in ("user", "mnt", "pid_for_children"):
            fds.append(os.open("/proc/self/ns/" + kind, os.O_RDONLY))
        fds += list(held.values())
        status = b"p" + str(init).encode() + b" " + json.dumps(list(held)).encode()
    except BaseException as exc:  # noqa: B036 - carried to the parent, then out
        status = b"e" + str(exc).encode("utf-8", "replace")[:500]
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
    sock.sendmsg([status], rights if fds else [])


def _steps_message(steps: Sequence[tuple[str, int, str]]) -> bytes:
    """A layout's steps as the launcher's make mode reads them: "KIND FLAGS PATH" each, NUL
    after each (a path holds no NUL)."""
    return b"".join(f"{kind} {flags} {path}".encode("utf-8", "surrogateescape") + b"\0"
                    for kind, flags, path in steps)  # fmt: skip


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """The maker's status line and the descriptors it sent with it."""
    size = socket.CMSG_SPACE(64 * array.array("i").itemsize)
    status, ancillary, _, _ = sock.recvmsg(65536, size)
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return status, list(fds)


def _id_map(spec: dict[str, Any]) -> str:
    """The nest's ids: the verifier's, one for one; root among them only when the nest's
    programs run as root (`spec["root_map"]`, snapshot grading), which the kernel allows a
    verifier holding CAP_SETFCAP only. Otherwise root's files show as the overflow id."""
    if spec.get("root_map"):
        return f"0 0 {ID_RANGE}\n"
    return f"1 1 {ID_RANGE - 1}\n"


def _spawn_init(launcher: int) -> int:
    """Start the nest's pid 1 (this process's next child): the launcher's init mode, by
    posix_spawn (vfork: nothing of this interpreter is copied), where there is a launcher;
    else fork, and 0 is returned in the child, which runs `_init`."""
    if launcher >= 0 and hasattr(os, "posix_spawn"):
        return os.posix_spawn(f"/proc/self/fd/{launcher}", [INIT_NAME, "init"], {})
    return os.fork()


INIT_NAME = "termgym-nest-init"
"""The launcher's name as the nest's init (its argv[0], what `ps` shows)."""


def _init() -> None:
    """The nest's pid 1 where there is no launcher: it holds the namespaces open and reaps
    what its programs leave (as the launcher's init mode does)."""
    try:
        os.closerange(0, 65536)
        for number in range(1, signal.NSIG):
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                signal.signal(number, signal.SIG_DFL)
        os.setsid()
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
        while True:
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass
            signal.sigwait([signal.SIGCHLD])  # an orphan joined, or a child ended
    finally:
        os._exit(0)


def _proxy(child: int, init: int) -> None:
    """The program's stand-in in the verifier (module docstring): never returns."""
    try:
        os.closerange(0, 65536)

        def forward(number: int, frame: object) -> None:  # noqa: ARG001
            with contextlib.suppress(OSError):
                os.kill(child, number)

        for number in FORWARDED:
            signal.signal(number, forward)
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                status = (128 + signal.SIGKILL) << 8
                break
        if os.WIFSIGNALED(status):
            ended = os.WTERMSIG(status)
            if ended not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(ended, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [ended])
            os.kill(os.getpid(), ended)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
    finally:
        os._exit(1)


def probe(spec: dict[str, Any]) -> str | None:
    """None when a nest can be made here, else why not (made and ended at once)."""
    try:
        nest = Nest(spec)
    except (OSError, AttributeError, ValueError) as exc:
        return str(exc) or exc.__class__.__name__
    nest.close()
    return None


if __name__ == "__main__":  # a manual check: python3 termgym_nest.py SPEC.json
    import json

    with open(sys.argv[1]) as handle:
        print(probe(json.load(handle)) or "a nest can be made here")
