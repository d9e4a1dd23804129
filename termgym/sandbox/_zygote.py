"""Zygotes: verifiers whose standby is forked from a process that loaded it once.

A verifier's standby (`StandbySpec`) costs an interpreter start and its imports per
verifier; for a pytest grader, pytest's own start as well (docs/performance.md). A spec
with `zygote=True` is started once per process and spec instead, in a sandbox of its own
over the clean image (the zygote), where it loads all that before any work exists; each
verifier then gets a child forked from it, which makes a fresh verifier of its own from
namespaces (termgym/verifier/zygote.py, whose docstring says how) over the root the
host made for that verifier alone, and goes on as that verifier's standby.

What the host does per verifier (`Zygote.fork`): it clones the verifier's overlay
(`open_tree`) and makes the verifier's channel (a socket pair), hands both to the zygote in
one message, reads the child's pid off its first message on the channel (the kernel writes
it, SO_PASSCRED), moves it into the verifier's cgroups, and answers. From there the channel
is the standby's stdin and stdout (`ZygoteStandby`).

Zygotes are started on one thread per process that lives as long as the process: a bwrap
sandbox dies with the thread that spawned it, and a zygote serves every pool of the process.
"""

from __future__ import annotations

import array
import atexit
import concurrent.futures
import contextlib
import ctypes
import dataclasses
import json
import logging
import multiprocessing.util
import os
import queue
import select
import signal
import socket
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from termgym._stopping import stopping
from termgym.errors import EngineError, SandboxError
from termgym.sandbox._base import RunResult
from termgym.sandbox._common import collected
from termgym.sandbox._shell import _Collector
from termgym.verifier import ZYGOTE_MODULES

log = logging.getLogger(__name__)

CHILD = b"TERMGYM-ZYGOTE-CHILD\n"
"""A child's first line on its channel (termgym_zygote's words: the same three there)."""
PLACED = b"placed\n"
"""The host's answer once the child is in the verifier's cgroups."""
ERROR = "TERMGYM-ZYGOTE-ERROR "
"""What a child says instead of its standby's output when it could not be made."""
CONTROL_ENV = "TERMGYM_ZYGOTE"
"""In the zygote's environment: the descriptor of its control socket."""
MAX_IDLE = 6
"""Zygotes a process keeps at most once they have no verifier in use (least recently used
go first): each holds its interpreter and what it loaded (tens of MB)."""

CAPS = {
    "CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5,
    "SETGID": 6, "SETUID": 7, "SETPCAP": 8, "LINUX_IMMUTABLE": 9, "NET_BIND_SERVICE": 10,
    "NET_BROADCAST": 11, "NET_ADMIN": 12, "NET_RAW": 13, "IPC_LOCK": 14, "IPC_OWNER": 15,
    "SYS_MODULE": 16, "SYS_RAWIO": 17, "SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_PACCT": 20,
    "SYS_ADMIN": 21, "SYS_BOOT": 22, "SYS_NICE": 23, "SYS_RESOURCE": 24, "SYS_TIME": 25,
    "SYS_TTY_CONFIG": 26, "MKNOD": 27, "LEASE": 28, "AUDIT_WRITE": 29, "AUDIT_CONTROL": 30,
    "SETFCAP": 31,
}  # fmt: skip
"""Capability names (without CAP_) and their numbers (linux/capability.h)."""

_OPEN_TREE = {"x86_64": 428, "aarch64": 428}.get(os.uname().machine, -1)
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC, _AT_RECURSIVE = 1, 0o2000000, 0x8000
_LIBC = ctypes.CDLL(None, use_errno=True)
_UCRED = struct.Struct("iII")


def zygote_runtime() -> bytes:
    """The zygote's side, written to its stdin after the spec's `first`: the source of each
    module of `termgym.verifier.ZYGOTE_MODULES` (`termgym_kernel`, then `termgym_zygote`),
    its length in digits and a newline before it."""
    sources = [path.read_bytes() for path in ZYGOTE_MODULES.values()]
    return b"".join(b"%d\n" % len(source) + source for source in sources)


class ZygoteProcess(Protocol):
    """A started zygote: its sandbox and its program, waiting on its control socket."""

    def alive(self) -> bool:
        """True while the zygote's program runs."""

    def close(self) -> None:
        """Stop the zygote and its sandbox."""


def clone_root(path: Path) -> int:
    """A detached clone of the mount at `path` and what is mounted below it (`open_tree`):
    a descriptor that another mount namespace can attach (`move_mount`)."""
    fd = _LIBC.syscall(
        _OPEN_TREE, -100, os.fsencode(path), _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise SandboxError(f"Could not clone the verifier's root {path}: {os.strerror(code)}")
    return int(fd)


class Zygote:
    """One zygote (module docstring): `fork` a standby per verifier, `close` when done."""

    def __init__(self, process: ZygoteProcess, control: socket.socket) -> None:
        self.process = process
        self.control = control
        self.in_use = 0
        self._lock = threading.Lock()

    def alive(self) -> bool:
        """True while the zygote can fork."""
        return self.process.alive()

    def fork(
        self,
        root: Path,
        cgroup_procs: Sequence[str],
        *,
        env: Mapping[str, str],
        workdir: str,
        caps: Sequence[str],
        seccomp: bytes,
        limit: int,
        timeout: float,
        memory_kills: Callable[[], int] | None = None,
    ) -> ZygoteStandby:
        """A standby forked into a fresh verifier whose root is the mount at `root`, moved
        into the cgroups whose `cgroup.procs` files are `cgroup_procs` (`memory_kills`:
        how many processes of them their memory limit killed so far, for its result).

        Raises:
            SandboxError: the zygote is gone, or the child could not be made (why, if it said).
        """
        request = json.dumps(
            {
                "env": dict(env), "workdir": workdir, "hostname": "sandbox",
                "caps": sorted(CAPS[c] for c in caps), "filter": seccomp.hex(),
            }
        ).encode()  # fmt: skip
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        try:
            root_fd = clone_root(root)
            try:
                fds = array.array("i", [root_fd, theirs.fileno()])
                with self._lock:
                    self.control.sendmsg(
                        [request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())]
                    )
            finally:
                os.close(root_fd)
                theirs.close()
            pid = _handshake(mine, time.monotonic() + timeout)
            pidfd = os.pidfd_open(pid)
            try:
                for procs in cgroup_procs:
                    with open(procs, "w") as handle:
                        handle.write(str(pid))
                mine.sendall(PLACED)
            except BaseException:
                os.close(pidfd)
                raise
        except SandboxError:
            mine.close()
            raise
        except OSError as exc:
            mine.close()
            raise SandboxError(f"The zygote could not fork a verifier: {exc}") from exc
        except BaseException:
            mine.close()
            raise
        with self._lock:
            self.in_use += 1
        return ZygoteStandby(
            mine, pidfd, limit, done=self._done, zygote=self.alive, memory_kills=memory_kills
        )

    def _done(self) -> None:
        with self._lock:
            self.in_use -= 1

    def close(self) -> None:
        """Stop the zygote: the host's end of its control socket closes, its sandbox ends."""
        with contextlib.suppress(OSError):
            self.control.close()
        self.process.close()


def _handshake(sock: socket.socket, deadline: float) -> int:
    """The pid of the child that wrote CHILD on `sock` (the kernel's, not the child's word)."""
    data, pid = b"", 0
    size = socket.CMSG_SPACE(_UCRED.size)
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([sock], [], [], remaining)[0]:
            raise SandboxError("The zygote's child did not say who it is in time.")
        chunk, ancillary, _, _ = sock.recvmsg(256, size)
        if not chunk:
            break
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = pid or _UCRED.unpack(payload[: _UCRED.size])[0]
        data += chunk
    if data != CHILD or pid <= 0:
        said = data.decode("utf-8", "replace").strip()
        if said.startswith(ERROR):
            said = said[len(ERROR) :]
        raise SandboxError(f"The zygote could not make a verifier: {said or 'it said nothing'}")
    return pid


class ZygoteStandby:
    """A standby forked from a zygote (`termgym.sandbox.StandbyProgram`): the channel socket
    is its stdin and its stdout; it ends with the process the host placed in the verifier's
    cgroups (its pidfd), the verifier's pid 1, and killing that process ends the verifier's
    processes with it (their pid namespace ends with its pid 1)."""

    def __init__(
        self,
        sock: socket.socket,
        pidfd: int,
        limit: int,
        *,
        done: Callable[[], None],
        zygote: Callable[[], bool],
        memory_kills: Callable[[], int] | None = None,
    ) -> None:
        self.sock = sock
        self.pidfd = pidfd
        self._zygote = zygote
        self._memory_kills = memory_kills
        self._collector = _Collector(limit)
        self._finished = False
        self._eof = False
        self._done: Callable[[], None] | None = done

    def alive(self) -> bool:
        """True while it runs, has said nothing since it waited, and was not finished."""
        if self._finished or self._eof:
            return False
        if select.select([self.pidfd], [], [], 0)[0]:
            return False  # the process the host placed has ended
        if select.select([self.sock], [], [], 0)[0]:
            self._read(time.monotonic())  # it spoke (or closed): not waiting any more
            return False
        return True

    def _read(self, deadline: float, stop: bytes = b"") -> bool:
        """Collect what it writes until EOF (True), `deadline` or `stop` (False)."""
        while not (stop and stop in self._collector.buf):
            remaining = deadline - time.monotonic()
            ready = select.select([self.sock], [], [], max(0.0, min(remaining, 1.0)))[0]
            if not ready:
                if remaining <= 0:
                    return False
                continue
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                self._eof = True
                return True
            self._collector.feed(chunk)
            self._collector.trim()
        return False

    def wait_for(self, line: bytes, *, timeout: float) -> bool:
        """Read up to the line `line` (dropped); False if it ended, flooded or timed out."""
        wanted, buf = line + b"\n", self._collector.buf
        self._read(time.monotonic() + timeout, stop=wanted)
        at = buf.find(wanted)
        if at < 0 or self._collector.head is not None:
            return False
        del buf[at : at + len(wanted)]
        return True

    def finish(self, data: bytes, *, timeout: float) -> RunResult:
        """Write `data`, close the writing side, and collect everything until its end (at
        `timeout`, every process of it is killed).

        Raises:
            EngineError: the zygote died meanwhile (the verifier's processes, in namespaces
                below the zygote's, died with it: what they wrote is no verdict).
        """
        if self._finished:
            raise SandboxError("This standby was already finished.")
        self._finished = True
        began = time.monotonic()
        try:
            self.sock.sendall(data)
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # it is gone: what it wrote says why
        timed_out = not self._read(began + timeout)
        if timed_out:
            self._kill()
        self._release()
        if not self._zygote():  # its verifier's processes lived in the zygote's namespaces
            raise EngineError("the zygote this verifier's runner was forked from died")
        result = collected(self._collector, None, began=began, timed_out=timed_out)
        kills = self._memory_kills() if self._memory_kills is not None else 0
        return dataclasses.replace(result, memory_kills=kills) if kills else result

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def _release(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = -1
        done, self._done = self._done, None
        if done is not None:
            done()

    def kill(self) -> None:
        """Stop it unfinished; safe to call twice."""
        self._finished = True
        if self.pidfd >= 0:
            self._kill()
        self._release()


_ZYGOTES: OrderedDict[Hashable, Zygote] = OrderedDict()
_STARTING: dict[Hashable, threading.Lock] = {}
_FAILED: dict[Hashable, float] = {}
_LOCK = threading.Lock()
RETRY_AFTER = 60.0
"""Seconds before a zygote that would not start is tried again (verifiers start their
standby the usual way meanwhile)."""


def zygote_for(key: Hashable, launch: Callable[[int], ZygoteProcess]) -> Zygote | None:
    """This process's zygote for `key`, started by `launch(control_fd)` if there is none
    (`control_fd`: the zygote's end of its control socket, to pass to its program); None if
    it would not start (tried again after RETRY_AFTER seconds)."""
    _hook_process_exit()
    with _LOCK:
        zygote = _ZYGOTES.get(key)
        if zygote is not None and zygote.alive():
            _ZYGOTES.move_to_end(key)
            return zygote
        if time.monotonic() < _FAILED.get(key, 0.0):
            return None
        starting = _STARTING.setdefault(key, threading.Lock())
    with starting:  # one start per key; whoever waited takes the one it made
        with _LOCK:
            zygote = _ZYGOTES.get(key)
            if zygote is not None and zygote.alive():
                return zygote
        stale = _ZYGOTES.pop(key, None)
        if stale is not None:
            stale.close()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = _on_launcher(lambda: launch(theirs.fileno()))
        except Exception as exc:  # noqa: BLE001 - the usual standby still works
            mine.close()
            if not stopping():  # a stop refuses its start: nothing to say then
                log.warning("could not start a zygote, verifiers start their standby anew: %s", exc)
            with _LOCK:
                _FAILED[key] = time.monotonic() + RETRY_AFTER
            return None
        finally:
            theirs.close()
        zygote = Zygote(process, mine)
        with _LOCK:
            _ZYGOTES[key] = zygote
            _FAILED.pop(key, None)
            idle = [k for k, z in _ZYGOTES.items() if z.in_use == 0 and k != key]
            evicted = [_ZYGOTES.pop(k) for k in idle[: max(0, len(_ZYGOTES) - MAX_IDLE)]]
        for old in evicted:
            old.close()
        return zygote


_LAUNCHER: list[queue.SimpleQueue[Callable[[], None]]] = []


def _on_launcher(call: Callable[[], ZygoteProcess]) -> ZygoteProcess:
    """`call()` on this process's launcher thread, which lives as long as the process: a
    sandbox dies with the thread that spawned it (bwrap's --die-with-parent: the kernel's
    parent-death signal follows the thread, not the process), and a zygote outlives the pool
    thread or the env's thread that needed it first."""
    with _LOCK:
        if not _LAUNCHER:
            jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
            threading.Thread(
                target=_launch_forever, args=(jobs,), name="termgym-zygote-launcher", daemon=True
            ).start()
            _LAUNCHER.append(jobs)
        jobs = _LAUNCHER[0]
    done: concurrent.futures.Future[ZygoteProcess] = concurrent.futures.Future()

    def job() -> None:
        try:
            done.set_result(call())
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            done.set_exception(exc)

    jobs.put(job)
    return done.result()


def _launch_forever(jobs: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        jobs.get()()


def close_zygotes() -> None:
    """Stop every zygote of this process (at exit, or when its last pool closes)."""
    with _LOCK:
        zygotes = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for zygote in zygotes:
        zygote.close()


_hooked_pid: list[int] = []


def _hook_process_exit() -> None:
    """Close this process's zygotes when it ends: atexit for a normal exit, multiprocessing's
    finalizers for a worker leaving through os._exit (registered once per process)."""
    if _hooked_pid != [os.getpid()]:
        _hooked_pid[:] = [os.getpid()]
        atexit.register(close_zygotes)
        multiprocessing.util.Finalize(None, close_zygotes, exitpriority=100)


def _forget_parent_zygotes() -> None:
    """In a forked child: the parent's zygotes are the parent's (a lock another thread held
    at the fork would stay held: the child gets new ones), and its copy of their control
    sockets is closed (a zygote ends when the parent lets it go)."""
    global _LOCK
    for zygote in _ZYGOTES.values():
        with contextlib.suppress(OSError):
            zygote.control.close()
    _ZYGOTES.clear()
    _STARTING.clear()
    _FAILED.clear()
    _LAUNCHER.clear()  # the parent's thread: the child starts one of its own
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_parent_zygotes)
