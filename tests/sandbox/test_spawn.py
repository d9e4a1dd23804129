"""How sandbox processes start (bwrap and local): no Python between fork and exec, nothing
but stdio handed down, cgroups joined and signals reset before the program runs, and starts
that end in an error instead of a hang."""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from termgym.errors import SandboxStartError
from termgym.sandbox import Sandbox, SandboxConfig, StandbySpec, _deadline, _spawn, make_sandbox
from termgym.sandbox._bwrap import HOST_ENV, BwrapSandbox
from termgym.sandbox._common import HostProcess
from termgym.sandbox._local import LocalSandbox
from termgym.sandbox._spawn import HELPER_OFF, SPAWN_LAUNCH, Launch, spawn
from tests.conftest import _unavailable, built_by_every_compiler

_WATCH: dict[str, int] = {}


def _child_ran_python() -> None:
    fd = _WATCH.get("fd")
    if fd is not None:
        os.write(fd, b".")


os.register_at_fork(after_in_child=_child_ran_python)


@pytest.fixture
def python_in_children() -> Iterator[Callable[[], int]]:
    """How many forked children of this process ran Python before their exec, from now on
    (a fork hook runs in every child that does: a pre-exec hook, pty.fork, os.fork)."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    _WATCH["fd"] = write

    def count() -> int:
        seen = 0
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(read, 4096):
                seen += len(chunk)
        return seen

    yield count
    _WATCH.pop("fd", None)
    os.close(read)
    os.close(write)


@pytest.fixture(params=["helper", "programs"])
def launch_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Sandbox processes launched by termgym's spawn helper, or by the host's small programs
    (sh, prlimit, env, nsenter: TERMGYM_SPAWN_HELPER=0, as where no compiler builds it)."""
    if request.param == "programs":
        monkeypatch.setenv(HELPER_OFF, "0")
    elif _spawn._helper() is None:
        _unavailable("termgym's spawn helper", "no C compiler here builds a static program")
    return str(request.param)


@pytest.fixture(params=["bwrap", "local"])
def starts(request: pytest.FixtureRequest) -> Iterator[Callable[..., Sandbox]]:
    """Start sandboxes of bwrap or local (config fields as keywords); all closed after."""
    made: list[Sandbox] = []
    if request.param == "bwrap":
        request.getfixturevalue("base_rootfs")

    def start(**fields: object) -> Sandbox:
        config = SandboxConfig(**fields)  # type: ignore[arg-type]
        if request.param == "local":
            with pytest.warns(RuntimeWarning):
                box = make_sandbox("local", config, allow_local=True)
        else:
            box = make_sandbox("bwrap", config)
        made.append(box)
        box.start()
        return box

    yield start
    for box in made:
        box.close()


def test_no_sandbox_process_runs_python_between_its_fork_and_its_exec(
    python_in_children: Callable[[], int], starts: Callable[..., Sandbox]
) -> None:
    """The agent's shell (and its restart), an exec and a standby all start without a
    pre-exec hook, so no lock another thread holds at that moment can hold the child."""
    subprocess.run(["true"], preexec_fn=lambda: None, check=True)  # the watch sees hooks
    assert python_in_children() == 1
    agent = starts()
    assert agent.run("echo hi").output == "hi\n"
    assert agent.exec(["true"]).exit_code == 0
    agent.shell.restart()  # type: ignore[attr-defined]
    assert agent.run("echo again").output == "again\n"
    standby = StandbySpec(argv=("sh", "-c", "echo waiting; cat"), ready=b"waiting")
    verifier = starts(role="verifier", standby=standby)
    program = verifier.take_standby()  # type: ignore[attr-defined]
    assert program is not None and program.finish(b"in\n", timeout=30).output == "in\n"
    assert python_in_children() == 0


def test_sandbox_processes_get_no_descriptor_but_stdio(
    launch_by: str, starts: Callable[..., Sandbox]
) -> None:
    box = starts()
    listed = "ls /proc/self/fd"  # ls's own listing of the folder is its fd 3
    assert box.run(listed).output.split() == ["0", "1", "2", "3"]
    assert box.exec(["sh", "-c", listed]).output.split() == ["0", "1", "2", "3"]


@pytest.mark.bwrap
def test_bwrap_starts_with_nothing_of_the_hosts_environment(base_rootfs: str) -> None:
    """The sandbox's pid 1 is bwrap: its environment is what bwrap was started with."""
    with make_sandbox("bwrap", SandboxConfig()) as box:
        for environ in (box.run("cat /proc/1/environ").output, _pid1_environ(box)):
            assert environ.split("\0") == [f"PATH={HOST_ENV['PATH']}", ""]


def _pid1_environ(box: Sandbox) -> str:
    return box.exec(["cat", "/proc/1/environ"]).output


def test_a_process_limit_holds_from_the_start_where_no_pids_cgroup_does(launch_by: str) -> None:
    """The RLIMIT_NPROC fallback (termgym without root and without delegated cgroups)."""
    process = spawn(
        ["grep", "Max processes", "/proc/self/limits"], launch=Launch(nproc=77),
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = process.communicate(timeout=30)
    assert out.split()[2:4] == [b"77", b"77"]


def _set_raw_disposition(number: int, handler: int) -> None:
    """glibc's sigaction refuses signals 32 and 33: set them as a CI runner can, raw."""
    action = ctypes.create_string_buffer(32)
    ctypes.memmove(action, ctypes.byref(ctypes.c_ulong(handler)), 8)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(13, number, action, None, 8) == 0, os.strerror(ctypes.get_errno())


@pytest.fixture
def signals_handed_down() -> Iterator[None]:
    """This thread blocks SIGUSR1 and SIGTERM; this process ignores SIGHUP (as under nohup)
    and glibc's signal 33 (as a CI runner left it)."""
    raw = platform.machine() == "x86_64"  # the system call's number above is x86_64's
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM})
    hangup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if raw:
        _set_raw_disposition(33, 1)  # SIG_IGN
    yield
    if raw:
        _set_raw_disposition(33, 0)  # SIG_DFL, as it was
    signal.signal(signal.SIGHUP, hangup)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def test_no_blocked_or_ignored_signal_reaches_a_sandbox(
    launch_by: str, signals_handed_down: None, starts: Callable[..., Sandbox]
) -> None:
    box = starts()
    status = "grep -E '^Sig(Blk|Ign)' /proc/self/status"
    expected = ["SigBlk:", "0" * 16, "SigIgn:", "0" * 16]
    assert box.run(status).output.split() == expected
    assert box.exec(["sh", "-c", status]).output.split() == expected
    assert signal.pthread_sigmask(signal.SIG_BLOCK, ()) == {signal.SIGUSR1, signal.SIGTERM}


@pytest.mark.bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and the shifted user namespace need root")
def test_every_bwrap_process_starts_inside_its_cgroups_and_as_the_shifted_root(
    launch_by: str, base_rootfs: str
) -> None:
    """Joined before bwrap clones the sandbox: the sandbox's cgroup namespace is rooted at
    its own cgroups, which hold the shell and each exec from the host's view too."""
    with make_sandbox("bwrap", SandboxConfig(role="agent")) as box:
        assert isinstance(box, BwrapSandbox) and box.cgroup is not None
        held = set(box.cgroup.applied)
        assert {"pids", "memory"} <= held
        for where in (box.run("cat /proc/self/cgroup").output, _exec_output(box)):
            seen = _cgroup_paths(where)
            assert all(seen.get(name, seen.get("")) == "/" for name in held), where
        shell = box.shell._child.pid  # type: ignore[union-attr]
        assert shell in box.cgroup.pids()
        host_ids = Path(f"/proc/{shell}/status").read_text().split("Uid:")[1].split()[:4]
        assert host_ids == [str(box.uid_base)] * 4
        assert box.run("id -u; grep Groups /proc/self/status").output.split() == ["0", "Groups:"]


def _exec_output(box: Sandbox) -> str:
    return box.exec(["cat", "/proc/self/cgroup"]).output


def _cgroup_paths(listing: str) -> dict[str, str]:
    """Controller -> path from a /proc/<pid>/cgroup listing ("" is cgroup v2's)."""
    paths = {}
    for line in listing.splitlines():
        _, names, path = line.split(":", 2)
        paths.update(dict.fromkeys(names.split(","), path))
    return paths


class SilentBwrap(BwrapSandbox):
    """A bwrap sandbox whose shell never answers."""

    shell_argv = ("sleep", "600")


class SilentLocal(LocalSandbox):
    """A local sandbox whose shell never answers."""

    shell_argv = ("sleep", "600")


@pytest.mark.parametrize("kind", ["bwrap", "local"])
def test_a_start_that_would_hang_fails_within_its_deadline_and_leaves_nothing(
    kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind == "bwrap":
        request.getfixturevalue("base_rootfs")
    monkeypatch.setattr(_deadline, "START_DEADLINE", 2.0)
    box = SilentBwrap(SandboxConfig()) if kind == "bwrap" else SilentLocal(SandboxConfig())
    began = time.monotonic()
    with pytest.raises(SandboxStartError, match="did not answer"):
        box.start()
    assert time.monotonic() - began < 30  # 2 s, on a machine of any speed well below 30
    if isinstance(box, SilentBwrap):
        assert box.home is not None and not box.home.exists()
        assert box.cgroup is not None and not box.cgroup.dirs
    else:
        assert box.root is not None and not box.root.exists()


def test_a_standby_that_never_reads_its_input_does_not_hold_the_start(
    starts: Callable[..., Sandbox],
) -> None:
    """Its first bytes are more than a pipe holds; it never reads them nor says it waits."""
    standby = StandbySpec(
        argv=("sleep", "600"), first=b"x" * (1 << 20), ready=b"ready", ready_timeout=2
    )
    began = time.monotonic()
    box = starts(role="verifier", standby=standby)
    assert time.monotonic() - began < 30
    assert box.take_standby() is None  # type: ignore[attr-defined]


def test_input_a_program_never_reads_is_bounded_by_its_timeout() -> None:
    program = HostProcess(["sleep", "600"])
    result = program.finish(b"x" * (1 << 20), timeout=1)
    assert result.timed_out and result.exit_code is None and result.duration < 30


def test_a_cgroup_that_cannot_be_joined_stops_the_start_before_the_program(
    launch_by: str, tmp_path: Path
) -> None:
    """Joining is the first step: a process outside its sandbox's cgroups never runs."""
    ran = tmp_path / "ran"
    process = spawn(
        ["touch", str(ran)], launch=Launch(cgroups=(str(tmp_path / "gone" / "cgroup.procs"),)),
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    _, err = process.communicate(timeout=30)
    assert process.returncode == 125 and b"gone" in err, err
    assert not ran.exists()


def test_the_launch_steps_take_one_process_with_the_helper() -> None:
    launch = Launch(
        cgroups=("/a/cgroup.procs", "/b/cgroup.procs"), nproc=9, userns="/u", netns="/n"
    )
    helper = _spawn._helper()
    if helper is None:
        _unavailable("termgym's spawn helper", "no C compiler here builds a static program")
    assert launch.argv(["bwrap", "x"], tty="/dev/pts/9", default_signals=True) == [
        helper, "-c", "/a/cgroup.procs", "-c", "/b/cgroup.procs", "-t", "/dev/pts/9",
        "-n", "9", "-N", "/n", "-U", "/u", "--", "bwrap", "x",
    ]  # fmt: skip
    assert Launch().argv(["bwrap"]) == ["bwrap"]  # nothing to do: the program alone


def test_the_spawn_helper_builds_with_every_compiler_the_host_has(tmp_path: Path) -> None:
    for program in built_by_every_compiler(SPAWN_LAUNCH, tmp_path).values():
        usage = subprocess.run([str(program), "-q", "x", "--", "true"], capture_output=True)
        assert usage.returncode == 125 and b"unknown step -q" in usage.stderr, usage
