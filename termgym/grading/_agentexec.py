"""Runs inside the verifier: every program the graders start runs as an unprivileged user.

Injected beside the runner as the module `termgym_agentexec` (stdlib only, Python 3.7+).
`install()` wraps `subprocess.Popen` (and so `subprocess.run`, `check_output`, `os.popen`)
and `os.system` in the grader's process: unless its command line names a file in the
grader folder (a grader's own helper), a child runs as AGENT_UID with no supplementary
groups, its environment stripped of TERMGYM_* and PYTEST_* variables, and out-of-memory
first in line. (No RLIMIT_NPROC: it counts a user's processes across every sandbox of the
machine, so one agent's fork bomb would starve another episode's grading; each sandbox's own
pids limit holds a fork bomb, at the cost of that episode's grading only.) Such a child
cannot read the grader folder, the manifest or the rule files (0700, root), cannot open the
runner's or the grader's output (another user's /proc entries), and cannot signal or trace
them.

Folders registered with `share()` (pytest's temporary folders) are handed to the agent's
user before each such start, so the agent's program can read the inputs a test wrote and
write its outputs there. `stop_agent_processes()` kills whatever the agent's programs left
running; `as_agent(fn, ...)` calls fn in a child that has become the agent's user (how the
declarative checks read the agent's files: a symlink cannot lead them anywhere the agent's
own user could not go).

A grader that starts programs another way (os.fork and exec, os.spawn*, ctypes) runs them
as root; so does a bash script grader that runs the agent's program itself: such graders
call it through `$TERMGYM_AS_AGENT program args...` (see docs/task-format.md).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

AGENT_UID = int(os.environ.get("TERMGYM_AGENT_UID", "60000"))
GRADER_DIR = os.path.dirname(os.path.abspath(__file__))
AGENT_HOME = "/tmp/.termgym-agent-home"

_shared = []  # type: list[str]
_original_popen_init = subprocess.Popen.__init__
_installed = [False]


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


def _hand_over() -> None:
    for folder in _shared:
        for base, dirs, files in os.walk(folder):
            for name in [base] + [os.path.join(base, n) for n in dirs + files]:
                try:
                    info = os.lstat(name)
                    if info.st_uid != AGENT_UID:
                        os.lchown(name, AGENT_UID, AGENT_UID)
                except OSError:
                    pass


def _graders_own(argv: Sequence[Any]) -> bool:
    for arg in argv:
        text = os.fsdecode(arg) if isinstance(arg, (bytes, os.PathLike)) else str(arg)
        if GRADER_DIR in text:
            return True
    return False


def agent_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment an agent's program gets: the grader's (or `env`), minus termgym's."""
    source = dict(os.environ if env is None else env)
    clean = {}
    for key, value in source.items():
        if key.startswith(("TERMGYM_", "PYTEST_")) or GRADER_DIR in str(value):
            continue
        clean[key] = value
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
    if privileged() and not _graders_own(argv) and "user" not in kwargs:
        _ensure_home()
        _hand_over()
        kwargs["user"] = AGENT_UID
        kwargs["group"] = AGENT_UID
        kwargs["extra_groups"] = []
        kwargs["env"] = agent_env(kwargs.get("env"))
        kwargs["preexec_fn"] = _chain(kwargs.get("preexec_fn"), _child_setup)
    _original_popen_init(self, args, *rest, **kwargs)


def _system(command: Any) -> int:
    code = subprocess.call(["/bin/sh", "-c", command])
    return code << 8 if code >= 0 else -code


def _ensure_home() -> None:
    if not os.path.isdir(AGENT_HOME):
        try:
            os.mkdir(AGENT_HOME, 0o700)
            os.chown(AGENT_HOME, AGENT_UID, AGENT_UID)
        except OSError:
            pass


def install() -> None:
    """Wrap subprocess.Popen and os.system in this process (idempotent)."""
    if _installed[0]:
        return
    _installed[0] = True
    subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
    os.system = _system


def stop_agent_processes() -> None:
    """SIGKILL every process of the agent's user (what its programs left running)."""
    if not privileged():
        return
    for _ in range(20):
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
        if not _agent_pids():
            return


def _agent_pids() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat("/proc/" + entry).st_uid == AGENT_UID:
                    found.append(int(entry))
            except OSError:
                pass
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


def _main(argv: list[str]) -> int:
    """`python3 termgym_agentexec.py PROGRAM ARGS...`: run a program as the agent's user."""
    if not argv:
        sys.stderr.write("usage: $TERMGYM_AS_AGENT PROGRAM [ARGS...]\n")
        return 2
    install()
    return subprocess.call(argv)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
