"""Runs inside the verifier: every program the graders start runs as an unprivileged user.

Injected beside the runner as the module `termgym_agentexec` (stdlib only, Python 3.7+).
`install()` wraps `subprocess.Popen` (and so `subprocess.run`, `check_output`, `os.popen`)
and `os.system` in the grader's process: unless the program it starts is a file in the
grader folder (a grader's own helper: `argv[0]`, or the script an interpreter is given),
a child runs as AGENT_UID with no supplementary groups, its environment stripped of
TERMGYM_* and PYTEST_* variables, and out-of-memory first in line. (No RLIMIT_NPROC: it
counts a user's processes across every sandbox of the machine, so one agent's fork bomb
would starve another episode's grading; each sandbox's own pids limit holds a fork bomb,
at the cost of that episode's grading only.) A grader-folder path among the *arguments*
of another program does not make it the grader's own: the agent's program would then run
as root. Such a child cannot read the grader folder, the manifest or the rule files (0700,
root), cannot open the runner's or the grader's output (another user's /proc entries),
and cannot signal or trace them.

Folders registered with `share()` (pytest's temporary folders) are handed to the agent's
user before each such start, so the agent's program can read the inputs a test wrote and
write its outputs there; so is a file directly in the temp folder that the command line
names (a test's NamedTemporaryFile given to `cat`). `stop_agent_processes()` kills
whatever the agent's programs left running (after each test, keeping their nest for the
next test where it can: `termgym_nest`); `as_agent(fn, ...)` calls fn in a child that
has become the agent's user (how the declarative checks read the agent's files: a symlink
cannot lead them anywhere the agent's own user could not go).

When the grading records inputs (TERMGYM_RECORD_INPUTS=1, `termgym check`), every start
as the agent's user is fingerprinted by `termgym_inputprint` before the program starts and
after it ends (`wait`, `poll`, `communicate`), into the job's result folder.

A grader that starts programs another way (os.fork and exec, os.spawn*, ctypes) runs them
as root; so does a bash script grader that runs the agent's program itself: such graders
call it through `$TERMGYM_AS_AGENT program args...` (see docs/task-format.md).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pickle
import re
import shlex
import signal
import stat
import subprocess
import sys
import tempfile

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")

AGENT_UID = int(os.environ.get("TERMGYM_AGENT_UID", "60000"))
GRADER_DIR = os.path.dirname(os.path.abspath(__file__))
AGENT_HOME = "/tmp/.termgym-agent-home"

_shared = []  # type: list[str]
_original_popen_init = subprocess.Popen.__init__
_original_wait = subprocess.Popen.wait
_original_poll = subprocess.Popen.poll
_original_communicate = subprocess.Popen.communicate
_installed = [False]
_recorder = []  # type: list[Any]
_INTERPRETERS = re.compile(r"^(python[0-9.]*|bash|sh|dash)$")
_SHELL_SYNTAX = re.compile(r"[;&|<>`$(){}\n*?~]")


_CAP_SETGID, _CAP_SETUID = 6, 7
_can_switch = []  # type: list[bool]


def privileged() -> bool:
    """True when this process can switch users (the verifier's root, with CAP_SETUID)."""
    if not _can_switch:
        effective = 0
        try:
            with open("/proc/self/status") as handle:
                for line in handle:
                    if line.startswith("CapEff:"):
                        effective = int(line.split()[1], 16)
        except (OSError, ValueError):
            pass
        needed = (1 << _CAP_SETUID) | (1 << _CAP_SETGID)
        _can_switch.append(os.geteuid() == 0 and effective & needed == needed)
    return _can_switch[0]


def share(folder: str) -> None:
    """Hand `folder` (and what is later made in it) to the agent's user before each start."""
    if folder not in _shared:
        _shared.append(str(folder))


NEST_ENV = "TERMGYM_NEST"
"""The nest's spec (JSON, `termgym_nest.Nest`) in a grader's environment; absent or "" when
the agent's programs run by an id switch alone (a verifier where no nest can be made)."""

_nest_spec = []  # type: list[dict[str, Any]]
_nest = []  # type: list[Any]


def configure_nest(spec: dict[str, Any] | None) -> None:
    """Run the agent's programs started from now on in nests made from `spec` (None: by an
    id switch alone). Read from NEST_ENV by `install()`."""
    del _nest_spec[:]
    if spec:
        _nest_spec.append(dict(spec))


def nest_spec() -> dict[str, Any] | None:
    """The spec nests are made from here (None: none are)."""
    return _nest_spec[0] if _nest_spec else None


def hide(paths: Sequence[str], writable: Sequence[str] = ()) -> None:
    """Cover `paths` in the nests made from now on, and make `writable` writable there
    (the current nest, made without them, ends: the next program gets a fresh one)."""
    _end_nest()
    if _nest_spec:
        spec = _nest_spec[0]
        spec["hidden"] = list(spec["hidden"]) + [str(p) for p in paths]
        spec["writable"] = list(spec["writable"]) + [str(p) for p in writable]


def _current_nest() -> Any:
    """The nest the agent's programs of this test run in, made at the first program of
    the job (or of a test after one whose nest ended: `stop_agent_processes`)."""
    if not _nest_spec or not privileged():
        return None
    if not _nest:
        if GRADER_DIR not in sys.path:
            sys.path.insert(0, GRADER_DIR)  # the grader folder is root's: safe to import from
        import termgym_nest

        _nest.append(termgym_nest.Nest(_nest_spec[0], _launcher()))
    return _nest[0]


def _end_nest() -> None:
    if _nest:
        _nest.pop().close()


def _hand_over() -> None:
    """Give every shared folder's entries to the agent's user, without ever acting by path
    on what that user could change: the agent's program may still be running and swap a
    folder for a symlink mid-walk. The walk holds a descriptor of every folder it enters
    (`os.fwalk`, which skips a folder replaced since it was listed) and changes owners
    through descriptors of what it opened without following links."""
    for folder in _shared:
        try:
            top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            _give_fd(top)
            for _, _dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                _give_fd(fd)
                for name in files:
                    _give_entry(name, fd)
        finally:
            os.close(top)


def _give_entry(name: str, parent: int) -> None:
    """The entry `name` of the folder open as `parent`, given to the agent's user when it is
    a regular file with one link (a hard link would carry another file's owner along)."""
    try:
        if os.lstat(name, dir_fd=parent).st_uid == AGENT_UID:
            return
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=parent)
    except OSError:
        return  # a symlink (ELOOP), gone, or unreadable: nothing to give
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
            _give_fd(fd)
    finally:
        os.close(fd)


def _give_fd(fd: int) -> None:
    try:
        if os.fstat(fd).st_uid != AGENT_UID:
            os.fchown(fd, AGENT_UID, AGENT_UID)
    except OSError:
        pass


def _text(arg: Any) -> str:
    return os.fsdecode(arg) if isinstance(arg, (bytes, os.PathLike)) else str(arg)


def _in_grader_dir(path: str) -> bool:
    return os.path.normpath(path).startswith(GRADER_DIR + os.sep)


def _hand_over_named(argv: Sequence[Any]) -> None:
    """A file a test made in the temp folder and names on the command line (a key file it
    has `cat` read, an input it writes first) goes to the agent's user with the program:
    both harnesses run tests and programs as one root, so tests count on it. Only regular,
    singly linked files directly in the temp folder, none of the graders'."""
    temp = tempfile.gettempdir().rstrip("/") + "/"
    for arg in argv:
        text = _text(arg)
        if not text.startswith(temp) or "/" in text[len(temp) :] or GRADER_DIR in text:
            continue
        try:
            fd = os.open(text, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == 0:
                os.fchown(fd, AGENT_UID, AGENT_UID)
        except OSError:
            pass
        finally:
            os.close(fd)


def _named_paths(argv: Sequence[Any], shell: bool = False) -> list[str]:
    """The absolute paths a command line names: its words, and the values of its
    `--option=PATH` words (a shell command line is split as the shell would)."""
    words = [_text(a) for a in argv]
    if shell:
        try:
            words = [w for text in words for w in shlex.split(text)]
        except ValueError:
            return []
    named = []
    for word in words:
        value = word.partition("=")[2] if "=" in word and not word.startswith("/") else word
        if value.startswith("/"):
            named.append(os.path.normpath(value))
    return named


def _graders_own(argv: Sequence[Any], shell: bool = False) -> bool:
    """Whether the program started is the grader's own helper: a file in the grader folder,
    run directly or as the script of an interpreter. A shell command line counts only when
    it is one plain command (no shell syntax) of that form."""
    words = [_text(a) for a in argv]
    if shell:
        if len(words) != 1 or _SHELL_SYNTAX.search(words[0]):
            return False
        try:
            words = shlex.split(words[0])
        except ValueError:
            return False
    if not words:
        return False
    if _in_grader_dir(words[0]):
        return True
    if not _INTERPRETERS.match(os.path.basename(words[0])):
        return False
    for word in words[1:]:
        if word in ("-c", "-m"):
            return False
        if not word.startswith("-"):
            return _in_grader_dir(word)
    return False


def agent_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment an agent's program gets: the grader's (or `env`), minus termgym's."""
    source = dict(os.environ if env is None else env)
    # snapshot grading: the image's values of what the toolchain set (termgym_snapshot)
    try:
        image = json.loads(source.get("TERMGYM_IMAGE_ENV") or "{}")
    except ValueError:
        image = {}
    for key, value in image.items() if isinstance(image, dict) else ():
        source.pop(key, None)
        if isinstance(value, str):
            source[key] = value
    clean = {}
    for key, value in source.items():
        if key.startswith(("TERMGYM_", "PYTEST_")) or GRADER_DIR in str(value):
            continue
        clean[key] = value
    if not _nest_spec or _nest_spec[0].get("uid", AGENT_UID):  # root's (snapshot) keeps its own
        clean["HOME"] = AGENT_HOME
    return clean


def _child_setup() -> None:
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:
        pass


def _chain(first: Callable[[], object] | None, second: Callable[[], None]) -> Callable[[], None]:
    if first is None:
        return second

    def both() -> None:
        first()
        second()

    return both


def _popen_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    record = None
    shell = bool(kwargs.get("shell")) or isinstance(args, (str, bytes))
    if privileged() and not _graders_own(argv, shell) and "user" not in kwargs:
        _ensure_home()
        kwargs["env"] = agent_env(kwargs.get("env"))
        if _recorder:
            record = _recorder[0].before_start(
                [_text(a) for a in argv], _text(kwargs.get("cwd") or ""), kwargs["env"], _shared
            )
            _recorder[0].stdin_file(record, kwargs.get("stdin"))
        _hand_over()
        _hand_over_named(argv)
        nest = _current_nest()
        if nest is not None:  # the nest switches ids, drops capabilities, filters syscalls
            nest.hand(_named_paths(argv, shell))  # what the test hands it of what is covered
            cwd = _text(kwargs.get("cwd") or os.getcwd())
            uid = int(_nest_spec[0].get("uid", AGENT_UID))
            launch = None if rest else _launch(nest, args, shell, cwd, uid, kwargs)
            if launch is not None:  # by vfork, the launcher standing in for `nest.entry`
                ended = True
                try:
                    try:
                        _original_popen_init(self, launch.args, **launch.kwargs)
                    finally:
                        launch.started()
                    self.args = args
                    launch.check(self)
                    ended = False
                finally:
                    launch.close()
                    self._termgym_record = record  # type: ignore[attr-defined]
                    if record is not None and ended:
                        _finished(self)
                return
            kwargs["preexec_fn"] = _chain(kwargs.get("preexec_fn"), nest.entry(cwd, uid))
        else:
            kwargs["user"] = AGENT_UID
            kwargs["group"] = AGENT_UID
            kwargs["extra_groups"] = []
            kwargs["preexec_fn"] = _chain(kwargs.get("preexec_fn"), _child_setup)
    try:
        _original_popen_init(self, args, *rest, **kwargs)
    finally:
        self._termgym_record = record  # type: ignore[attr-defined]
        if record is not None and getattr(self, "pid", None) is None:
            _finished(self)


LAUNCHER = os.path.join(GRADER_DIR, "termgym_nest_launch")
"""The nests' entry as a static program (termgym_nest_launch, built by the host from
nest_launch.c), where the grading folder has one."""
_launcher_fd = []  # type: list[int]


class _Launch:
    """One start through the launcher: the command line and `Popen` arguments that run the
    program in `nest` (its namespaces, the filter and the launcher passed by descriptor),
    then what the launcher said before the program's exec (`check`)."""

    def __init__(self, nest: Any, program: list[Any], cwd: str, uid: int,
                 kwargs: dict[str, Any], launcher: int) -> None:  # fmt: skip
        self.read, self.write = os.pipe()
        self.filter = -1
        if nest.program:
            self.filter = os.memfd_create("termgym-nest-filter", os.MFD_CLOEXEC)
            os.write(self.filter, nest.program)
        fds = nest.fds
        caps = ",".join(str(c) for c in nest.spec.get("keep_caps") or []) or "-"
        self.program = program
        self.args = [
            "termgym-nest-launch", str(fds["user"]), str(fds["mnt"]), str(fds["pid"]),
            str(uid), cwd, caps, str(self.filter), str(self.write), str(launcher), "--",
            *program,
        ]  # fmt: skip
        passed = (fds["user"], fds["mnt"], fds["pid"], self.write, launcher)
        self.kwargs = dict(kwargs, shell=False, executable=f"/proc/self/fd/{launcher}")
        self.kwargs["pass_fds"] = (
            tuple(kwargs.get("pass_fds") or ()) + passed + ((self.filter,) if nest.program else ())
        )

    def started(self) -> None:
        """The launcher runs (or did not start): only it holds the write end now."""
        for fd in (self.write, self.filter):
            if fd >= 0:
                os.close(fd)
        self.write = self.filter = -1

    def check(self, proc: subprocess.Popen[Any]) -> None:
        """Wait for the program's exec; raise as `subprocess` would where it did not start."""
        said = b""
        try:
            while True:
                chunk = os.read(self.read, 4096)
                if not chunk:
                    break
                said += chunk
        finally:
            os.close(self.read)
            self.read = -1
        if not said:
            return
        proc.wait()
        kind, _, rest = said.decode("utf-8", "replace").partition(" ")
        code, _, what = rest.partition(" ")
        number = int(code) if code.isdigit() else 0
        if kind == "exec":
            raise OSError(number, os.strerror(number), self.program[0])
        raise subprocess.SubprocessError(
            f"termgym: could not start the program in its nest: {what}: {os.strerror(number)}"
        )

    def close(self) -> None:
        """Close what is still open (each descriptor once: its number may be reused)."""
        for fd in (self.read, self.write, self.filter):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.read = self.write = self.filter = -1


def _launch(nest: Any, args: Any, shell: bool, cwd: str, uid: int,
            kwargs: dict[str, Any]) -> _Launch | None:  # fmt: skip
    """A start of `args` through the launcher, or None where the Python entry must do it
    (no launcher here; a preexec function or an executable of the test's own)."""
    if kwargs.get("preexec_fn") is not None or kwargs.get("executable") is not None:
        return None
    if kwargs.get("close_fds") is False:  # the program keeps the test's descriptors
        return None
    if not hasattr(os, "memfd_create"):
        return None
    launcher = _launcher()
    if launcher < 0:
        return None
    single = isinstance(args, (str, bytes, os.PathLike))
    program = [args] if single else list(args)
    if shell:
        program = ["/bin/sh", "-c", *program]
    return _Launch(nest, program, cwd, uid, kwargs, launcher)


def _launcher() -> int:
    """A descriptor of the launcher (opened once, close-on-exec); -1 where the grading
    folder has none."""
    if not _launcher_fd:
        try:
            _launcher_fd.append(os.open(LAUNCHER, os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            _launcher_fd.append(-1)
    return _launcher_fd[0]


def _finished(proc: subprocess.Popen[Any]) -> None:
    record = getattr(proc, "_termgym_record", None)
    if record is not None and _recorder:
        _recorder[0].finished(record, _shared)


def _wait(self: subprocess.Popen[Any], timeout: float | None = None) -> int:
    code = _original_wait(self, timeout)
    _finished(self)
    return code


def _poll(self: subprocess.Popen[Any]) -> int | None:
    code = _original_poll(self)
    if code is not None:
        _finished(self)
    return code


def _communicate(
    self: subprocess.Popen[Any], input: Any = None, timeout: float | None = None
) -> Any:
    record = getattr(self, "_termgym_record", None)
    if record is not None and _recorder and input is not None:
        _recorder[0].stdin(record, input)
    return _original_communicate(self, input, timeout)


def record_into(path: str | None) -> None:
    """Fingerprint every start as the agent's user into the file `path` (None: stop, after
    writing what is pending)."""
    if _recorder:
        _recorder.pop().flush()
    if path:
        if GRADER_DIR not in sys.path:
            sys.path.insert(0, GRADER_DIR)  # the grader folder is root's: safe to import from
        import termgym_inputprint

        _recorder.append(termgym_inputprint.Recorder(path, AGENT_UID))


def recording() -> bool:
    """Whether starts are being fingerprinted."""
    return bool(_recorder)


def context(test: str, ruleset: str) -> None:
    """The test and rule set the next starts belong to (what the shared folders hold now was
    given to earlier tests)."""
    if _recorder:
        _recorder[0].context(test, ruleset, _shared)


def shared_scope(on: bool) -> None:
    """Starts from here on belong to a fixture shared by every rule set (or not)."""
    if _recorder:
        _recorder[0].shared_scope = on


def flush_record() -> None:
    """Write every pending fingerprint."""
    if _recorder:
        _recorder[0].flush()


def _system(command: Any) -> int:
    code = subprocess.call(command, shell=True)
    return code << 8 if code >= 0 else -code


def _ensure_home() -> None:
    """The agent's user's home, made by root and given by descriptor: a link the agent's
    program left at its place is never followed (an existing entry is left as it is)."""
    try:
        os.mkdir(AGENT_HOME, 0o700)
    except OSError:
        return
    try:
        fd = os.open(AGENT_HOME, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        if os.fstat(fd).st_uid == 0:
            os.fchown(fd, AGENT_UID, AGENT_UID)
    except OSError:
        pass
    finally:
        os.close(fd)


def install() -> None:
    """Wrap subprocess.Popen and os.system in this process (idempotent)."""
    if _installed[0]:
        return
    _installed[0] = True
    subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
    subprocess.Popen.wait = _wait  # type: ignore[method-assign]
    subprocess.Popen.poll = _poll  # type: ignore[method-assign]
    subprocess.Popen.communicate = _communicate  # type: ignore[method-assign]
    os.system = _system
    raw = os.environ.get(NEST_ENV)
    if raw and not _nest_spec:
        import json

        configure_nest(json.loads(raw))
    results = os.environ.get("TERMGYM_RESULT_DIR")
    if os.environ.get("TERMGYM_RECORD_INPUTS") == "1" and results and not _recorder:
        record_into(os.path.join(results, ".termgym-inputs.jsonl"))


def reconfigure() -> None:
    """Take the nest spec and the input recording from this process's environment again (a
    job run in a fork of a process that installed this module earlier: termgym_prepare)."""
    import json

    raw = os.environ.get(NEST_ENV)
    configure_nest(json.loads(raw) if raw else None)
    del _shared[:]
    results = os.environ.get("TERMGYM_RESULT_DIR")
    if os.environ.get("TERMGYM_RECORD_INPUTS") == "1" and results:
        record_into(os.path.join(results, ".termgym-inputs.jsonl"))
    elif _recorder:
        record_into(None)


def stop_agent_processes(keep_nest: bool = False) -> None:
    """SIGKILL every process of the agent's user (what its programs left running): the
    nest they ran in ends (the next program gets a fresh one), then any left outside.

    `keep_nest` (between the tests of a job): the nest stays for the next test where it can
    (`Nest.reusable`), its processes killed as those outside are: making one costs forks of
    the test process and mounts, per test."""
    if not privileged():
        return
    if not (keep_nest and _nest and _nest[0].reusable()):
        _end_nest()
    for _ in range(20):
        if not _agent_pids():  # none left, and only such a process could start another
            return
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(AGENT_UID)
                os.setuid(AGENT_UID)
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def _agent_pids() -> list[int]:
    """The agent's user's processes but the dead ones (zombies their parent has yet to
    reap: they run nothing)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat("/proc/" + entry).st_uid != AGENT_UID:
                    continue
                with open("/proc/" + entry + "/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                found.append(int(entry))
    return found


def as_agent(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a child running as the agent's user; its result or exception."""
    if not privileged():
        return function(*args)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(AGENT_UID)
            os.setuid(AGENT_UID)
            outcome: tuple[bool, Any] = (True, function(*args))
        except BaseException as exc:  # noqa: B036 - carried to the parent
            outcome = (False, exc)
        try:
            data = pickle.dumps(outcome)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result
            data = pickle.dumps((False, TypeError(str(exc))))
        with os.fdopen(write, "wb") as handle:
            handle.write(data)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        data = handle.read()
    os.waitpid(pid, 0)
    ok, value = pickle.loads(data)
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


READ_NAME = "termgym-nest-read"
"""The launcher's name in its read mode (its argv[0])."""
_LOOKS = {"read": 0, "look": 1, "exists": 2}


def look_as_agent(path: str, text: bool, limit: int) -> str | None:
    """What the agent's user finds at `path`: None where it does not exist for that user
    (its stat fails, as `os.path.exists` says), else its text if `text` (at most `limit`
    characters, undecodable bytes replaced; what opening or reading it raises is raised),
    else "". Looked at in a process that has become the agent's user: the launcher's read
    mode (a small static program, by posix_spawn) where the grading folder has it, else a
    fork of this one (`as_agent`)."""
    return _looked(path, "look" if text else "exists", limit)


def read_as_agent(path: str, limit: int) -> str:
    """The text of `path` as the agent's user reads it (`look_as_agent`, without the look
    first: what opening it raises is raised, FileNotFoundError included)."""
    return _looked(path, "read", limit) or ""


def _looked(path: str, how: str, limit: int) -> str | None:
    if not privileged():
        return _look_here(path, how, limit)
    launcher = -1
    if "\0" not in path and hasattr(os, "posix_spawn"):
        with contextlib.suppress(OSError):  # opened for this read alone: the runner keeps
            launcher = os.open(LAUNCHER, os.O_RDONLY | os.O_CLOEXEC)  # no descriptor of it
    if launcher < 0:
        return as_agent(_look_here, path, how, limit)
    out, out_w = os.pipe()
    err, err_w = os.pipe()
    pid = 0
    try:
        argv = [READ_NAME, "read", str(AGENT_UID), str(_LOOKS[how]), str(4 * limit), path]
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ]
        try:
            pid = os.posix_spawn(f"/proc/self/fd/{launcher}", argv, {}, file_actions=actions)
        except OSError:  # the launcher is there but cannot run here: a fork reads it
            return as_agent(_look_here, path, how, limit)
        os.close(out_w)
        os.close(err_w)
        out_w = err_w = -1
        with open(out, "rb", closefd=False) as stdout, open(err, "rb", closefd=False) as stderr:
            data, said = stdout.read(), stderr.read()
        _, status = os.waitpid(pid, 0)
        pid = 0
    finally:
        for fd in (launcher, out, out_w, err, err_w):
            if fd >= 0:
                os.close(fd)
        if pid:  # interrupted (the job's timeout): the reader goes too
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    if code == 3 and how != "read":
        return None
    if code == 0:
        if how == "exists":
            return ""
        # as open's text mode reads it: CR LF and CR end lines as LF does, read as "\n"
        text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        return text[:limit]
    number = int(said) if code == 4 and said.strip().isdigit() else 0
    if number:
        raise OSError(number, os.strerror(number), path)
    raise OSError(
        errno.EIO, f"could not read {path} as the agent's user (status {status}, {said[:200]!r})"
    )


def _look_here(path: str, how: str, limit: int) -> str | None:
    """`_looked` in this process (as whoever it runs as)."""
    if how != "read" and not os.path.exists(path):
        return None
    if how == "exists":
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(limit)


def _main(argv: list[str]) -> int:
    """`python3 termgym_agentexec.py PROGRAM ARGS...`: run a program as the agent's user."""
    if not argv:
        sys.stderr.write("usage: $TERMGYM_AS_AGENT PROGRAM [ARGS...]\n")
        return 2
    install()
    try:
        return subprocess.call(argv)
    finally:
        flush_record()


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
