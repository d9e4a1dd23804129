"""Runs inside the verifier (or a zygote): what a standby runner loads before any work exists.

Injected beside the runner as the module `termgym_prepare` (stdlib only, Python 3.7+). A
standby runner whose spec names a grading folder (`termgym.grading._standby`) unpacks that
folder (the task's graders and the support files, no manifest: no rule set, no key exists
yet) at its place, imports the support modules from it, and hands each job whose
environment names a preparing module (TERMGYM_PREPARE, the pytest kind's `termgym_pytest`)
to that module's `prepare(args, then)`, which loads the job's program as far as it can go
before the work exists (pytest: configured, its tests collected) and calls `then(handle)`
from there; a handle of None means the job is run as usual.

At grading time the runner asks `prepared(job, ...)` for a job's handle. A job with one
runs in a fork of the runner (`run_in_fork`): a session of its own, its environment and
working folder, its output to its log, stdin /dev/null, without the runner's channel, as
the job's own interpreter would have run it; a job without one runs as usual. A verifier's
only job runs in the runner itself instead (`run_here`): the same environment, folder,
output, stdin and timeout, and the runner put back as it was afterwards. A fork would copy
every page of memory both processes touch, twice where the runner is itself a zygote's
fork, and the runner has nothing left to do but report that one job (why that is as sound:
docs/security.md, "The standby runner"). Why loading before the work arrives is sound:
the same section.

A zygote (the standby forked for each verifier, `termgym.sandbox._zygote`) holds nothing a
fork would share with another: `check_forkable()` refuses a zygote with a thread or with a
descriptor open but its stdio, its control socket and /dev/null.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Callable
    from typing import Any

SUPPORT = (
    "termgym_jobs", "termgym_agentexec", "termgym_agentcode", "termgym_nest",
    "termgym_inputprint",
)  # fmt: skip
"""Support modules every grading imports: loaded from the folder before the work exists."""
KIND_SUPPORT = ("termgym_checks",)
"""termgym's modules a grader kind adds to the folder (the file, json and regex checks):
loaded before the work exists too where the folder holds them, so that no grading compiles
them again. A task's own modules are not: they may look at the work when imported."""
PREPARE_ENV = "TERMGYM_PREPARE"
"""In a job's environment: the module of the grading folder that can prepare it."""
_HANDLES = {}  # type: dict[str, dict[str, Any]]
_CHANNEL = [-1]


def prepare(spec: dict[str, Any], folder: str, then: Callable[[], None]) -> None:
    """Import the support modules, prepare each of `spec["jobs"]`, then `then()` (which does
    not return): the module docstring. `spec`: {"jobs": [{"id", "argv", "env", "results",
    "scratch"}], "workdir", "rulesets"} with the folder's paths filled in."""
    sys.path[:0] = [os.path.join(folder, "graders"), folder]
    for name in SUPPORT:
        __import__(name)
    for name in KIND_SUPPORT:
        if os.path.isfile(os.path.join(folder, name + ".py")):
            __import__(name)
    sys.modules["termgym_agentexec"].install()
    _prepare_from(list(spec.get("jobs") or []), spec, then)


def _prepare_from(
    jobs: list[dict[str, Any]], spec: dict[str, Any], then: Callable[[], None]
) -> None:
    """Prepare `jobs[0]`, then the rest from inside it (a prepared job's program waits on
    the stack below the rest), then `then()`."""
    if not jobs:
        then()
        return
    job, rest = jobs[0], jobs[1:]
    module = job["env"].get(PREPARE_ENV, "")
    saved, cwd = dict(os.environ), os.getcwd()
    workdir = spec.get("workdir") or "/"
    env = dict(saved)
    env.update(job["env"])
    env.update({"TERMGYM_WORKDIR": workdir, "TERMGYM_GRADER_DIR": os.path.dirname(job["results"])})
    continued = []

    def after(handle: Any) -> None:
        continued.append(True)
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)
        if handle is not None:
            _HANDLES[job["id"]] = {"job": job, "handle": handle}
        _prepare_from(rest, spec, then)

    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(workdir if os.path.isdir(workdir) else "/")
        __import__(module).prepare(_args(job["argv"]), list(spec.get("rulesets") or []),
                                   _work(spec), after)  # fmt: skip
    except Exception:  # noqa: BLE001 - a job that cannot be prepared runs as usual
        pass
    if not continued:
        after(None)


def _args(argv: list[str]) -> list[str]:
    """The arguments after `python3 -m MODULE`."""
    return list(argv[3:]) if argv[1:2] == ["-m"] else list(argv[2:])


def _work(spec: dict[str, Any]) -> list[str]:
    return [p for p in spec.get("work") or [spec.get("workdir") or "/app"] if p]


def prepared(job: dict[str, Any], argv: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    """The prepared handle of `job` (its prepared paths and program), if one was prepared
    for exactly this job: the same id, command and environment templates."""
    entry = _HANDLES.get(job["id"])
    if entry is None:
        return None
    mine = entry["job"]
    if mine["template"] != [list(job["argv"]), dict(job.get("env") or {})]:
        return None
    return entry


def take_channel(fd: int) -> None:
    """The runner's channel: closed in every fork `run_in_fork` makes."""
    _CHANNEL[0] = fd


def run_in_fork(
    entry: dict[str, Any], env: dict[str, str], cwd: str, log: int, timeout: float
) -> tuple[int | None, bool]:
    """Run the prepared program of `entry` in a fork of this process (module docstring);
    (its exit status, timed out). At `timeout` its session is killed."""
    done_read, done_write = os.pipe()
    pidfds = _pidfds()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.close(done_read)
            if pidfds:
                os.close(done_write)  # the parent watches this process itself
            _become_job(env, cwd, log)
            code = int(entry["handle"].run() or 0)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: B036 - said in its log, as an interpreter would
            import traceback

            os.write(2, traceback.format_exc().encode("utf-8", "replace"))
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):  # leaving anyway
                    stream.flush()
            os._exit(code)
    os.close(done_write)
    watched = done_read
    if pidfds:  # the fork's end, not its descriptors'
        os.close(done_read)
        watched = os.pidfd_open(pid)
    try:
        ended = _wait_closed(watched, timeout)
    finally:
        os.close(watched)
    if not ended:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not ended:
        return None, True
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status), False
    return os.WEXITSTATUS(status), False


_PIDFDS = []  # type: list[bool]


def _pidfds() -> bool:
    """Whether this process can watch a fork by its pidfd: Python 3.9+ on a kernel that has
    pidfd_open (gVisor's has none: ENOSYS)."""
    if not _PIDFDS:
        works = hasattr(os, "pidfd_open")
        if works:
            try:
                os.close(os.pidfd_open(os.getpid()))
            except OSError:
                works = False
        _PIDFDS.append(works)
    return _PIDFDS[0]


def _wait_closed(fd: int, timeout: float) -> bool:
    """Until the fork ended (its pidfd readable, or, without pidfds, its end of the pipe
    closed: a descriptor only it and what it forks hold); False at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            ready = select.select([fd], [], [], remaining)[0]
        except InterruptedError:
            continue
        if ready:
            try:
                if not os.read(fd, 64):
                    return True
            except OSError:
                return True  # a pidfd: readable once the process ended


def _become_job(env: dict[str, str], cwd: str, log: int) -> None:
    """In the fork: the job's session, stdio, environment and folder; nothing of the runner's
    channel. Non-dumpable as the runner (kept across the fork)."""
    os.setsid()
    if _CHANNEL[0] >= 0:
        os.close(_CHANNEL[0])
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    _enter_job(env, cwd, log)


_JOB_SIGNALS = (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM)
"""Signals a job starts with at their default disposition (and SIGALRM, its timer's)."""


def _enter_job(env: dict[str, str], cwd: str, log: int) -> None:
    """The job's stdio (stdin /dev/null, stdout and stderr its log), signals, environment
    and folder, in the process that runs it."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for number in _JOB_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


GRACE = 5.0
"""Seconds a job run in the runner (`run_here`) has, once interrupted at its timeout, to end
its session before the runner leaves without a report."""


class Overran(KeyboardInterrupt):
    """Raised in a job run in the runner at its timeout: a KeyboardInterrupt, which pytest
    lets through its tests to end the session (its report written as far as it got)."""


def run_here(
    entry: dict[str, Any], env: dict[str, str], cwd: str, log: int, timeout: float
) -> tuple[int | None, bool]:
    """Run the prepared program of `entry` in this process, with what `run_in_fork` gives a
    fork (`_enter_job`; the runner's channel stays close-on-exec, so no program the job
    starts holds it), then put this process back as it was; (its exit status, or None once
    it overran; timed out).

    At `timeout` the job is interrupted (`Overran`); one that is still running `GRACE`
    seconds later ends this process at once: no report, which the host takes for a failed
    grading. A job that takes SIGALRM for itself takes its own timer with it (the host's
    budget for the whole run still holds)."""
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    env_before, cwd_before = dict(os.environ), os.getcwd()
    signals = {number: signal.getsignal(number) for number in (signal.SIGALRM, *_JOB_SIGNALS)}
    overran = []  # type: list[bool]
    over = [False]  # the job ended: a timer that fires from here on stops nothing

    def alarm(signum: int, frame: object) -> None:
        if over[0]:
            return
        if overran:
            os._exit(124)
        overran.append(True)
        signal.setitimer(signal.ITIMER_REAL, GRACE)
        raise Overran()

    code = 3  # type: int | None
    try:
        _enter_job(env, cwd, log)
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            code = int(entry["handle"].run() or 0)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Overran:
            pass
        except BaseException:  # noqa: B036 - said in its log, as an interpreter would
            import traceback

            os.write(2, traceback.format_exc().encode("utf-8", "replace"))
    finally:
        over[0] = True  # first, and no call: a pending timer's handler runs at a call
        signal.setitimer(signal.ITIMER_REAL, 0)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # its output is in the log, or lost with it
                stream.flush()
        for number, handler in signals.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
        for fd, copy in enumerate(saved):  # fds 0, 1 and 2
            os.dup2(copy, fd)
            os.close(copy)
        os.chdir(cwd_before)
        os.environ.clear()
        os.environ.update(env_before)
    return (None, True) if overran else (code, False)


def check_forkable(control: int) -> str:
    """ "" when every fork of this process starts with nothing another fork holds too: one
    thread, and no descriptor open but 0, 1, 2, `control` and /dev/null; else what is not."""
    tasks = os.listdir("/proc/self/task")
    if len(tasks) != 1:
        return f"it runs {len(tasks)} threads"
    null = os.stat(os.devnull)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in (0, 1, 2, control):
            continue
        try:
            info = os.fstat(fd)
        except OSError:
            continue  # the listing's own descriptor, closed since
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == null.st_rdev:
            continue
        try:
            what = os.readlink("/proc/self/fd/" + name)
        except OSError:
            what = "?"
        return f"descriptor {fd} ({what}) is open"
    return ""
