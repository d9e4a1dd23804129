"""Runs inside the verifier: what the tests' processes run, map and open, as the kernel sees it.

Injected beside the runner as the module `termgym_watch` (stdlib and ctypes, Python 3.7+;
the C library as `termgym_kernel` loads it).
Snapshot grading runs the tests as root in a nest whose root is the agent's filesystem
(termgym_snapshot). Their interpreter is the clean image's, but the C library, the dynamic
loader and the interpreter read files by absolute path from the root they run in: a
character-set conversion module, an OpenSSL provider, a library the loader's cache names,
a Python file. Which of those are the agent's is not decided inside the tests' process
(whose import hooks code of the agent's could have run before): the kernel hands every
call of theirs that can run, map or read code (`termgym.sandbox`'s watch filter: execve,
execveat, mmap and mprotect with PROT_EXEC of a file, the opens that may read) to a
supervisor outside their nest, which looks at what the call names, lets it go on, and
writes what it found to the runner. What it reports (one finding a line, KIND TAB PATH):

- `ran`: a tests' process executed a program of the snapshot (not the toolchain's, not
  termgym's), or runs as one: the agent's machine's program ran as root outside a nest;
- `mapped`: a tests' process mapped executable a file the agent made or changed (a shared
  object: a conversion module, a provider, an extension's library);
- `loaded`: a tests' process opened a file the agent made or changed, outside its work,
  whose name is code to an interpreter (`.py`, `.pyc`, `.pth`, `.so` ...);
- `changed`: such a file the tests opened was not, after the tests, the file they opened
  (a program of the agent's swapped it while they ran: a swap between the look and the
  open is seen this way);
- `unwatched`: the watch could not be set up or ended early (why): nothing is known.

"A tests' process" is one in the tests' nest's pid namespace (the interpreter, the
toolchain's bash and what they start outside a nest). The agent's programs, which the
tests start in nests of their own (a pid namespace below), inherit the filter but are let
go at once: they are the agent's machine, and may run anything of it.

Why it holds: a call waits in the kernel until the supervisor answers, so what it names is
looked at before it happens (the process cannot exit or change its descriptors meanwhile;
only code already running in it could race the look, and code of the agent's got there
only through a call looked at before). Paths are resolved in the caller's own root with
openat2(RESOLVE_IN_ROOT), so the agent's links lead where they lead the caller; a mapped
file is looked at through the caller's own descriptor. The supervisor is a fork of the
runner: outside every nest, non-dumpable, root in the verifier; the agent's programs
cannot see, signal or trace it. Its findings go to the runner on a pipe, never through a
file of the tests'.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import fcntl
import os
import select
import socket
import struct

from termgym_kernel import AT_FDCWD, PR_SET_NO_NEW_PRIVS, SockFprog, libc

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Callable
    from typing import Any

FILTER = "termgym_watch.bpf"
"""The watch's seccomp program in the grading folder (termgym.sandbox's watch filter)."""
FINDINGS = ".termgym-kernel-watch"
"""In a job's result files: the watch's findings, one a line (KIND TAB PATH)."""
RAN, MAPPED, LOADED, CHANGED, UNWATCHED = "ran", "mapped", "loaded", "changed", "unwatched"

CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pth", ".so", ".pyd")
"""Names an interpreter loads as code (a shared object's versioned name, `.so.N`, too)."""
TERMGYM_PLACES = ("/.termgym/", "/proc/", "/dev/", "/sys/", "/tests/", "/logs/verifier/")
"""Nest paths that are termgym's or the kernel's, never the agent's machine."""

_MACHINE = os.uname().machine
_NR = {
    "x86_64": {59: "execve", 322: "execveat", 9: "mmap", 10: "mprotect", 329: "mprotect",
               2: "open", 257: "openat", 437: "openat2"},
    "aarch64": {221: "execve", 281: "execveat", 222: "mmap", 226: "mprotect",
                288: "mprotect", 56: "openat", 437: "openat2"},
}.get(_MACHINE, {})  # fmt: skip
_SECCOMP = {"x86_64": 317, "aarch64": 277}.get(_MACHINE, -1)
_OPENAT2 = 437
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 1 << 3
NOTIF_RECV, NOTIF_SEND, NOTIF_ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
_NOTIF = struct.Struct("=QIIiIQ6Q")  # seccomp_notif: id, pid, flags, then seccomp_data
_RESP = struct.Struct("=QqiI")  # seccomp_notif_resp: id, val, error, flags
FLAG_CONTINUE = 1
AT_EMPTY_PATH = 0x1000
O_NOFOLLOW = os.O_NOFOLLOW
O_PATH = getattr(os, "O_PATH", 0o10000000)
RESOLVE_NO_MAGICLINKS, RESOLVE_IN_ROOT = 0x02, 0x10


def arm(program: bytes, channel: int) -> None:
    """In the tests' process, right before it executes the tests' program (after its nest's
    entry): install the watch filter with a listener, and hand the listener to the
    supervisor on `channel`; what went wrong is said there instead (the supervisor then
    reports the grading unwatched). Never raises: the tests run either way."""
    sock = socket.socket(fileno=channel)
    try:
        try:
            buffer = ctypes.create_string_buffer(program, len(program))
            prog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
            if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "no_new_privs")
            listener = libc().syscall(
                _SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                ctypes.byref(prog),
            )  # fmt: skip
            if listener < 0:
                code = ctypes.get_errno()
                raise OSError(code, "seccomp user notification: " + os.strerror(code))
        except (OSError, AttributeError, ValueError) as exc:
            sock.sendall(b"e" + str(exc).encode("utf-8", "replace")[:300])
            return
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [listener]).tobytes())]
        sock.sendmsg([b"l"], rights)
        os.close(listener)
    except OSError:
        pass
    finally:
        sock.close()


class Layout:
    """What the supervisor compares against: the tests' pid namespace, the agent's files
    (`is_agents(nest path, ctime)`: termgym_snapshot's listing), the work (declared
    outputs, whose files the tests read as data) and where the snapshot is here."""

    def __init__(self, pid_ns: int, is_agents: Callable[[str, float], bool],
                 work: list[str], snapshot: str) -> None:  # fmt: skip
        self.pid_ns = pid_ns
        self.snapshot = snapshot
        self.is_agents = is_agents
        self.work = [w.rstrip("/") + "/" for w in work if w.startswith("/")]


class Watch:
    """The supervisor of one job's tests: a fork of the runner, made before the tests start.
    `preexec()` arms the tests' process (call it last in its preexec chain); `started()`
    after the tests' process was started; `finish()` once every process of theirs ended."""

    def __init__(self, program: bytes, layout: Layout) -> None:
        self.program = program
        self.here, self.there = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.read, write = os.pipe()  # the findings, to the runner
        ended, self.end = os.pipe()  # closed by the runner once the job and its nest ended
        self.pid = os.fork()
        if self.pid == 0:  # the supervisor
            code = 0
            try:
                os.close(self.read)
                os.close(self.end)
                self.there.close()
                with open(write, "w", encoding="utf-8", errors="replace") as out:
                    _Supervisor(layout, out).run(self.here, ended)
            except BaseException:  # noqa: B036 - the pipe's end says the watch ended early
                code = 1
            finally:
                os._exit(code)
        os.close(write)
        os.close(ended)
        self.here.close()

    def preexec(self) -> Callable[[], None]:
        """The tests' process's last step before its exec: `arm`."""
        program, channel = self.program, self.there.fileno()

        def hook() -> None:
            os.set_inheritable(channel, False)
            arm(program, channel)

        return hook

    def started(self) -> None:
        """The tests' process holds its end (or failed to start): the runner lets go of it."""
        self.there.close()

    def finish(self, timeout: float = 10.0) -> str:
        """The findings, once the supervisor ended (every tests' process gone and the
        runner's end closed); an `unwatched` line where it did not end in `timeout`."""
        with contextlib.suppress(OSError):
            self.there.close()
        with contextlib.suppress(OSError):
            os.close(self.end)
        chunks = []
        ready = select.select([self.read], [], [], timeout)[0]
        while ready:
            chunk = os.read(self.read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            ready = select.select([self.read], [], [], timeout)[0]
        text = b"".join(chunks).decode("utf-8", "replace")
        ended = bool(ready)
        if not ended:
            with contextlib.suppress(OSError):
                os.kill(self.pid, 9)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.read)
        if not ended or status != 0:
            text += f"{UNWATCHED}\tthe kernel watch ended before the tests did\n"
        return text


def _read_string(pid: int, address: int, limit: int = 4096) -> str:
    """A NUL-terminated string of the process's memory (a path a call names)."""
    data = b""
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        while len(data) < limit:
            mem.seek(address + len(data))
            page_left = 4096 - (address + len(data)) % 4096
            chunk = mem.read(page_left)
            if not chunk:
                break
            end = chunk.find(b"\0")
            if end >= 0:
                return (data + chunk[:end]).decode("utf-8", "surrogateescape")
            data += chunk
    raise OSError(errno.ENAMETOOLONG, "no end to the path")


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]  # fmt: skip


def openat2(dirfd: int, path: str, flags: int, resolve: int) -> int:
    """openat2(2) (Linux 5.6): a descriptor of `path` under `dirfd`, resolved as `resolve` says."""
    how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
    fd = libc().syscall(_OPENAT2, dirfd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int(fd)


def _mnt_id(fd: int) -> int:
    with open(f"/proc/self/fdinfo/{fd}") as handle:
        for line in handle:
            if line.startswith("mnt_id:"):
                return int(line.split()[1])
    return -1


class _Supervisor:
    """The supervisor's loop and its look at each call (the module docstring)."""

    def __init__(self, layout: Layout, out: Any) -> None:
        self.layout = layout
        self.out = out
        self.roots = {}  # type: dict[int, int]
        self.opened = {}  # type: dict[str, tuple[int, float]]
        self.said = set()  # type: set[tuple[str, str]]

    def say(self, kind: str, path: str) -> None:
        if (kind, path) not in self.said and len(self.said) < 1000:
            self.said.add((kind, path))
            self.out.write(f"{kind}\t{path}\n")
            self.out.flush()

    def run(self, channel: socket.socket, ended: int) -> None:
        size = socket.CMSG_SPACE(array.array("i").itemsize)
        message, ancillary, _, _ = channel.recvmsg(1024, size)
        fds = array.array("i")
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if not message.startswith(b"l") or not fds:
            why = message[1:].decode("utf-8", "replace") or "the tests never started"
            self.say(UNWATCHED, why)
            return
        listener = fds[0]
        poller = select.poll()
        channel.close()
        poller.register(listener, select.POLLIN)
        poller.register(ended, select.POLLIN)
        while True:
            events = dict(poller.poll())
            if events.get(listener, 0) & select.POLLIN:
                self.answer(listener)
                continue
            if events.get(listener, 0) & (select.POLLHUP | select.POLLERR):
                break  # every process under the filter ended
            if ended in events:
                break  # the runner ended the job (and its nest)
        self.recheck()

    def answer(self, listener: int) -> None:
        buffer = bytearray(_NOTIF.size)
        try:
            fcntl.ioctl(listener, NOTIF_RECV, buffer, True)
        except OSError:  # the caller died meanwhile
            return
        ident, pid, _, nr, _, _, *args = _NOTIF.unpack(bytes(buffer))
        # OSError: the caller is gone, or what it names is not there (nothing of it ran)
        with contextlib.suppress(OSError):
            self.look(pid, _NR.get(nr, ""), args)
        reply = bytearray(_RESP.pack(ident, 0, 0, FLAG_CONTINUE))
        with contextlib.suppress(OSError):  # ENOENT: it was interrupted meanwhile
            fcntl.ioctl(listener, NOTIF_SEND, reply, True)

    def look(self, pid: int, call: str, args: list[int]) -> None:
        if os.stat(f"/proc/{pid}/ns/pid").st_ino != self.layout.pid_ns:
            return  # a program of the agent's, in a nest below the tests'
        if call in ("execve", "execveat"):
            if call == "execve":
                dirfd, path, flags = AT_FDCWD, _read_string(pid, args[0]), 0
            else:
                dirfd, path, flags = _signed(args[0]), _read_string(pid, args[1]), args[4]
            self.ran(pid, dirfd, path, flags)
        elif call == "mmap":
            self.mapped(pid, _signed(args[4]))
        elif call == "mprotect":
            self.protected(pid, args[0])
        elif call in ("open", "openat", "openat2"):
            if call == "open":
                dirfd, path, flags = AT_FDCWD, _read_string(pid, args[0]), args[1]
            else:
                dirfd, path = _signed(args[0]), _read_string(pid, args[1])
                flags = args[2] if call == "openat" else _how_flags(pid, args[2])
            self.opened_file(pid, dirfd, path, flags)

    # -- what a call names ----------------------------------------------------------------

    def resolve(self, pid: int, dirfd: int, path: str, flags: int) -> tuple[int, str]:
        """A descriptor (O_PATH) of what `path` names to the process, and its path there."""
        if path == "" and flags & AT_EMPTY_PATH or path.startswith(("/proc/self/fd/",
                                                                     "/dev/fd/")):  # fmt: skip
            number = path.rsplit("/", 1)[-1] if path else str(dirfd)
            fd = os.open(f"/proc/{pid}/fd/{number}", O_PATH | os.O_CLOEXEC)
        else:
            if not path.startswith("/"):
                base = os.readlink(f"/proc/{pid}/cwd" if dirfd == AT_FDCWD
                                   else f"/proc/{pid}/fd/{dirfd}")  # fmt: skip
                path = base.rstrip("/") + "/" + path
            root = os.open(f"/proc/{pid}/root", O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                follow = O_NOFOLLOW if flags & O_NOFOLLOW else 0
                fd = openat2(root, path.lstrip("/") or ".", O_PATH | follow,
                             RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)  # fmt: skip
            finally:
                os.close(root)
        return fd, os.readlink(f"/proc/self/fd/{fd}")

    def on_snapshot(self, pid: int, fd: int, where: str) -> bool:
        """Whether `fd` (resolved for `pid`) is a file of the snapshot: on the root mount of
        the process's own mount namespace, outside termgym's places."""
        if where.startswith(TERMGYM_PLACES) or not where.startswith("/"):
            return False
        return _mnt_id(fd) == self.root_mount(pid)

    def root_mount(self, pid: int) -> int:
        ns = os.stat(f"/proc/{pid}/ns/mnt").st_ino
        if ns not in self.roots:
            found = -1
            with open(f"/proc/{pid}/mountinfo") as handle:
                for line in handle:
                    fields = line.split()
                    if len(fields) > 4 and fields[4] == "/":
                        found = int(fields[0])  # the last mount on "/" is the root
            self.roots[ns] = found
        return self.roots[ns]

    def agents(self, fd: int, where: str) -> bool:
        return self.layout.is_agents(where, os.fstat(fd).st_ctime)

    # -- each kind of call ----------------------------------------------------------------

    def ran(self, pid: int, dirfd: int, path: str, flags: int) -> None:
        """The tests' processes run the toolchain's programs and termgym's, by their paths
        under /.termgym or by descriptor: any other program is the snapshot's, or reached
        through it (where a link of the agent's could be swapped after this look)."""
        fd_path = path.startswith(("/proc/self/fd/", "/dev/fd/")) or (
            path == "" and flags & AT_EMPTY_PATH
        )
        if not fd_path and (not path.startswith("/.termgym/") or "/../" in path + "/"):
            self.say(RAN, path)
            return
        try:
            fd, where = self.resolve(pid, dirfd, path, flags)
        except OSError:
            return  # nothing there: the exec fails too
        try:
            if self.on_snapshot(pid, fd, where) or not where.startswith("/.termgym/"):
                self.say(RAN, where)
        finally:
            os.close(fd)

    def mapped(self, pid: int, number: int) -> None:
        self.running(pid)
        if number < 0:
            return
        fd = os.open(f"/proc/{pid}/fd/{number}", O_PATH | os.O_CLOEXEC)
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
            if self.on_snapshot(pid, fd, where) and self.agents(fd, where):
                self.say(MAPPED, where)
        finally:
            os.close(fd)

    def running(self, pid: int) -> None:
        """A process that maps code is running some program: one of the snapshot's is seen."""
        fd = os.open(f"/proc/{pid}/exe", O_PATH | os.O_CLOEXEC)
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
            if self.on_snapshot(pid, fd, where):
                self.say(RAN, where)
        finally:
            os.close(fd)

    def protected(self, pid: int, address: int) -> None:
        """mprotect(PROT_EXEC): the file mapped at `address`, looked up in the process's maps
        and resolved in its root (anonymous memory and memfds are nobody's file)."""
        with open(f"/proc/{pid}/maps") as handle:
            for line in handle:
                fields = line.split(None, 5)
                start, _, end = fields[0].partition("-")
                if int(start, 16) <= address < int(end, 16):
                    inode, path = int(fields[4]), fields[5].strip() if len(fields) > 5 else ""
                    if inode and path.startswith("/"):
                        self.opened_file(pid, AT_FDCWD, path, 0, code=True, mapped=inode)
                    return

    def opened_file(self, pid: int, dirfd: int, path: str, flags: int,
                    code: bool = False, mapped: int = 0) -> None:  # fmt: skip
        if not code and not _is_code(path):
            return  # a cheap test first: most opens are of data, or of the toolchain's
        try:
            fd, where = self.resolve(pid, dirfd, path, flags)
        except OSError:
            return  # nothing there: the open fails too (or makes a new file, the tests')
        try:
            info = os.fstat(fd)
            if mapped and info.st_ino != mapped:
                self.say(CHANGED, where)
            if not _is_regular(info.st_mode) or not self.on_snapshot(pid, fd, where):
                return
            if not code and not _is_code(where):
                return
            if any(where.startswith(w) for w in self.layout.work):
                return  # the work is read as data (its code is refused in the tests)
            if self.agents(fd, where):
                self.say(MAPPED if mapped else LOADED, where)
            else:
                self.opened[where] = (info.st_ino, info.st_ctime)
        finally:
            os.close(fd)

    def recheck(self) -> None:
        """After the tests: each clean code file they opened on the snapshot is still that
        file, unchanged (a program of the agent's could have swapped one in for the moment
        of the open, then back: the swap changes its status or leaves another file)."""
        if not self.opened:
            return
        try:
            root = os.open(self.layout.snapshot, O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.say(CHANGED, self.layout.snapshot)
            return
        try:
            for where, (inode, ctime) in sorted(self.opened.items()):
                try:
                    fd = openat2(root, where.lstrip("/"), O_PATH,
                                 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)  # fmt: skip
                except OSError:
                    self.say(CHANGED, where)
                    continue
                try:
                    info = os.fstat(fd)
                    if (info.st_ino, info.st_ctime) != (inode, ctime):
                        self.say(CHANGED, where)
                finally:
                    os.close(fd)
        finally:
            os.close(root)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _how_flags(pid: int, address: int) -> int:
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        mem.seek(address)
        return int(struct.unpack("=Q", mem.read(8))[0])


def _is_code(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(CODE_SUFFIXES) or ".so." in name


def _is_regular(mode: int) -> bool:
    return mode & 0o170000 == 0o100000
