"""Sandbox processes started with nothing between fork and exec: no lock, no allocation, no Python.

A thread that forks while another thread holds a lock gives the child that lock, held
forever: a child that runs Python before its exec (a pre-exec hook) can block on it, and
its parent blocks with it, waiting for the exec. So every process a sandbox starts (the
agent's shell, an exec, a standby program) is started by `spawn`: `subprocess.Popen`
without `preexec_fn` (vfork, then only C code of CPython's until the exec), and what the
process needs before its program runs is done by a program it execs first (`Launch`):
termgym's own spawn helper (`spawn_launch.c`, a static program built once per host:
`termgym.sandbox._static`) takes every step below in one process. Where it cannot be built
(no C compiler) or TERMGYM_SPAWN_HELPER=0, small programs of the host's take them, each
ending in an exec of the next, a process start each (about a millisecond of CPU apiece):

- `sh` writes its own pid into the sandbox's `cgroup.procs` files, so that bwrap is
  already inside the cgroups when it clones the sandbox's namespaces (its cgroup namespace
  is rooted there), and opens the pty as its controlling terminal;
- `prlimit` sets RLIMIT_NPROC where no pids cgroup holds (a fork bomb stops there);
- `env --default-signal` puts signals this process ignores back to their defaults, only
  when some are (Popen itself resets SIGPIPE and SIGXFSZ, which Python ignores);
- `nsenter` joins a network namespace (a live-state verifier's), then the shifted user
  namespace, as its root (termgym as root: `termgym.isolation`). It opens the
  namespace through this process's own descriptor (`/proc/<pid>/fd/<n>`), so no
  descriptor of it is handed down to the sandbox.

Two things are done in this process instead. glibc keeps signals 32 and 33 for itself:
`sigaction` refuses them, so no helper can reset them, yet an ignored disposition of them
is inherited (CI runners hand one down). This process resets them to the default when it
finds them ignored (glibc installs its own handlers for them when it needs them, whatever
the disposition was). glibc's own posix_spawn is not used for the same reason: its child
sets both to ignored. And a child's signal mask is that of the thread that spawns it, so
a thread with blocked signals unblocks them for the moment of the spawn.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from termgym.errors import BackendUnavailable
from termgym.isolation import RESERVED_SIGNALS, SIGNALS_HELPER, reset_reserved
from termgym.sandbox._static import static_program

_RESET_BY_POPEN = frozenset({signal.SIGPIPE, signal.SIGXFSZ})
"""Popen's `restore_signals` puts these back to SIG_DFL in the child itself."""
_FREE_OF_HELPER = sum(1 << (number - 1) for number in (*_RESET_BY_POPEN, *RESERVED_SIGNALS))
"""Ignored signals that need no helper: Popen resets some, this process glibc's own."""


@dataclass(frozen=True)
class Launch:
    """What a sandbox's process needs before its program runs (see the module docstring).

    Attributes:
        cgroups: `cgroup.procs` files it joins first.
        nproc: The RLIMIT_NPROC it gets (soft and hard); None leaves the limit alone.
        userns: A user namespace file it enters as that namespace's root.
        netns: A network namespace file it enters before the user namespace.
    """

    cgroups: tuple[str, ...] = ()
    nproc: int | None = None
    userns: str = ""
    netns: str = ""

    def argv(
        self, program: Sequence[str], *, tty: str = "", default_signals: bool = False
    ) -> list[str]:
        """The command line that runs `program` after these steps.

        Args:
            tty: A terminal the process opens as its controlling terminal (its stdin).
            default_signals: Reset every signal's disposition before `program` runs.
        """
        if not (self.cgroups or tty or self.nproc is not None or default_signals) and not (
            self.userns or self.netns
        ):
            return list(program)
        helper = _helper()
        if helper is not None:
            return [helper, *self._helper_steps(tty), "--", *program]
        steps: list[str] = []
        script = [f"echo $$ >{shlex.quote(path)} || exit 125" for path in self.cgroups]
        if tty:
            script.append(f"exec 0<>{shlex.quote(tty)}")
        if script:  # a shell exports the PWD it starts in: the program gets only its env
            script += ["unset PWD OLDPWD SHLVL", 'exec "$@"']
            steps += [_shell(), "-c", "; ".join(script), "termgym-launch"]
        if self.nproc is not None:
            steps += [_tool("prlimit"), f"--nproc={self.nproc}:{self.nproc}", "--"]
        if default_signals:
            steps += _signal_helper()
        if self.userns or self.netns:
            steps.append(_tool("nsenter"))
            if self.netns:
                steps.append(f"--net={self.netns}")
            if self.userns:
                steps.append(f"--user={self.userns}")
            steps.append("--")
        return steps + list(program)

    def _helper_steps(self, tty: str) -> list[str]:
        """The spawn helper's arguments for these steps (it resets every signal itself)."""
        steps: list[str] = []
        for path in self.cgroups:
            steps += ["-c", path]
        if tty:
            steps += ["-t", tty]
        if self.nproc is not None:
            steps += ["-n", str(self.nproc)]
        if self.netns:
            steps += ["-N", self.netns]
        if self.userns:
            steps += ["-U", self.userns]
        return steps


SPAWN_LAUNCH = Path(__file__).with_name("spawn_launch.c")
"""The spawn helper's source (built once per host: `static_program`)."""
HELPER_OFF = "TERMGYM_SPAWN_HELPER"
"""Set to 0 to take the launch steps with the host's small programs instead of the helper."""


def _helper() -> str | None:
    """The spawn helper's path, or None where there is none (or it is turned off)."""
    if os.environ.get(HELPER_OFF, "1") == "0":
        return None
    program = static_program(SPAWN_LAUNCH, "termgym_spawn")
    return str(program) if program is not None else None


def spawn(
    argv: Sequence[str],
    *,
    launch: Launch | None = None,
    tty: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: int | IO[Any] | None = None,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start `argv` in a session of its own, after `launch`'s steps, with default signals.

    Every descriptor but stdio and `pass_fds` is closed in the child; `tty` (a pty's slave
    path) becomes its controlling terminal.
    """
    steps = launch or Launch()
    full = steps.argv(argv, tty=tty, default_signals=_signals_need_helper())
    with _unblocked_signals():  # a new session also keeps Popen off glibc's posix_spawn
        return subprocess.Popen(
            full, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd,
            env=dict(env) if env is not None else None, start_new_session=True,
            close_fds=True, pass_fds=tuple(pass_fds),
        )  # fmt: skip


def _signals_need_helper() -> bool:
    """Reset glibc's signals here if ignored; True if any other signal is ignored."""
    ignored = _ignored_signals()
    for number in RESERVED_SIGNALS:
        if ignored >> (number - 1) & 1:
            reset_reserved(number)
    return bool(ignored & ~_FREE_OF_HELPER)


def _ignored_signals() -> int:
    """The mask of signals this process ignores (the kernel's SigIgn, process-wide)."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"SigIgn:"):
                return int(line.split()[1], 16)
    return 0


@contextlib.contextmanager
def _unblocked_signals() -> Iterator[None]:
    """No signal blocked in this thread for the moment of a spawn (a child inherits its
    spawning thread's mask)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    if not blocked:
        yield
        return
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@functools.cache
def _tool(name: str) -> str:
    """The absolute path of a helper program (found once)."""
    found = shutil.which(name, path=os.defpath + ":/usr/sbin:/sbin")
    if found is None:
        raise BackendUnavailable(
            f"Expected {name!r} ({_PACKAGES.get(name, 'util-linux')}) on this machine to "
            "start sandbox processes; found none."
        )
    return found


_PACKAGES = {"sh": "a POSIX shell", "env": "coreutils"}


@functools.cache
def _shell() -> str:
    """dash where there is one (a start costs less than bash's), else sh."""
    return shutil.which("dash", path=os.defpath) or _tool("sh")


@functools.cache
def _signal_helper() -> tuple[str, ...]:
    """`env --default-signal` (coreutils 8.31 and later), else termgym's own helper (a
    Python start, slower, same effect)."""
    env = _tool("env")
    probe = subprocess.run(
        [env, "--default-signal", "true"], capture_output=True, check=False, timeout=30
    )
    if probe.returncode == 0:
        return (env, "--default-signal")
    return (sys.executable, "-I", "-S", SIGNALS_HELPER)
