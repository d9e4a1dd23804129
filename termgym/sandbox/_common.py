"""What the three backends share: the persistent shell, the context manager, run/send_keys."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from termgym.errors import SandboxCrashed, SandboxError, SandboxStartError
from termgym.sandbox._base import RunResult, SandboxConfig, StandbyProgram
from termgym.sandbox._shell import Channel, PersistentShell, _Collector
from termgym.sandbox._spawn import Launch, spawn

DEFAULT_ENV: Mapping[str, str] = {
    "HOME": "/root",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm-256color",
}
"""Exported into every agent shell before the task's own variables."""


class ShellSandbox:
    """Base of the backends: owns one PersistentShell; subclasses make the place it runs in."""

    backend = "base"

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.shell: PersistentShell | None = None
        self._crashed: str | None = None
        self._crash_error: type[SandboxCrashed] = SandboxCrashed
        self._closed = False
        self._starting = False
        """A start is under way (in another thread than a close, when a stop closes it)."""

    # subclasses fill in _shell_argv (a host command on a pty) or _connect (a Channel)
    def _shell_argv(self) -> list[str]:
        raise NotImplementedError

    _connect: Callable[[tuple[int, int]], Channel] | None = None

    def _shell_env(self) -> dict[str, str]:
        return {**DEFAULT_ENV, **self.config.env}

    def _shell_workdir(self) -> str:
        return self.config.workdir

    def _kill_hook(self, pid: int) -> None:  # noqa: B027 - optional hook
        """Kill the shell (in-sandbox pid) and its foreground job, where the host cannot."""

    def _on_shell_death(self) -> None:  # noqa: B027 - optional hook
        """Raise SandboxCrashed when the shell died because the whole sandbox is gone."""

    def _reclaim(self) -> None:  # noqa: B027 - optional hook
        """Stop every agent process so that a fresh shell can start (see PersistentShell)."""

    # the Protocol
    def _start_shell(self, timeout: float = 30.0) -> None:
        """Start the agent's shell; SandboxError if it has not answered within `timeout` s."""
        self.shell = PersistentShell(
            None if self._connect is not None else self._shell_argv(),
            connect=self._connect,
            workdir=self._shell_workdir(),
            env=self._shell_env(),
            output_limit=self.config.output_limit,
            host_env=self._host_env(),
            on_death=self._on_shell_death,
            kill_hook=self._kill_hook,
            reclaim=self._reclaim,
            size=(self.config.rows, self.config.cols),
            interactive=self.config.interactive,
        )
        self.shell.start(timeout=timeout)

    def _host_env(self) -> dict[str, str] | None:
        return None

    def _live_shell(self) -> PersistentShell:
        if self._crashed is not None:
            raise self._crash_error(self._crashed)
        if self.shell is None:
            raise SandboxError(f"The {self.backend} sandbox is not started; call start() first.")
        return self.shell

    def _crash(self, message: str, error: type[SandboxCrashed] = SandboxCrashed) -> None:
        self._crashed = message
        self._crash_error = error
        if self.shell is not None:
            self.shell.close()
        raise error(message)

    def run(self, command: str, timeout: float = 30.0) -> RunResult:
        """Run one command in the persistent shell and wait for it to complete."""
        return self._live_shell().run(command, timeout=timeout)

    def send_keys(self, keys: str | bytes, settle: float = 0.2, timeout: float = 5.0) -> RunResult:
        """Type raw keystrokes (control keys included); return once output goes quiet."""
        return self._live_shell().send_keys(keys, settle=settle, timeout=timeout)

    def start(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class KeepsStandby:
    """The standby program of a backend that declares `Capabilities.standby` (docker, bwrap,
    local).

    A subclass's `start()` calls `_start_standby(config, begin)` last (`begin` starts the
    config's standby and gives it `first`; the ready line is waited for within the start's
    `deadline` too, if one is given), `close()` calls `_drop_standby()` first.
    """

    _standby: StandbyProgram | None = None

    @staticmethod
    def _refuse_misplaced_standby(config: SandboxConfig) -> None:
        if config.standby is not None and config.role != "verifier":
            raise SandboxStartError(
                f"Expected a standby program on a verifier (role='verifier') only; this "
                f"sandbox's role is {config.role!r}."
            )

    def _start_standby(
        self, config: SandboxConfig, begin: Callable[[], StandbyProgram], *, deadline: float = 0.0
    ) -> None:
        if config.standby is None:
            return
        self._refuse_misplaced_standby(config)
        standby = begin()
        patience = config.standby.ready_timeout
        if deadline:
            patience = min(patience, max(0.0, deadline - time.monotonic()))
        if config.standby.ready and not standby.wait_for(config.standby.ready, timeout=patience):
            standby.kill()  # never ready: the grading runs cold, and says what went wrong
            return
        self._standby = standby

    def take_standby(self) -> StandbyProgram | None:
        """The standby started with the sandbox, once; None if it is not waiting (any more)."""
        standby, self._standby = self._standby, None
        if standby is not None and not standby.alive():
            standby.kill()
            return None
        return standby

    def _drop_standby(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None:
            standby.kill()


def collected(
    collector: _Collector, code: int | None, *, began: float, timed_out: bool
) -> RunResult:
    """The RunResult of a program whose output `collector` holds."""
    raw, truncated = collector.finish()
    return RunResult(
        output=raw.replace(b"\r\n", b"\n").decode("utf-8", "replace"),
        exit_code=None if timed_out else code,
        duration=time.monotonic() - began,
        timed_out=timed_out,
        truncated=truncated,
        raw=raw,
    )


def run_host(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    limit: int = 1_000_000,
    launch: Launch | None = None,
    pass_fds: Sequence[int] = (),
) -> RunResult:
    """Run a host process (no terminal), stdout and stderr merged, in its own session, after
    `launch`'s steps (`termgym.sandbox._spawn`).

    Output beyond `limit` bytes is dropped behind a marker as it arrives (a flood costs no
    memory); at `timeout` the whole session is killed and the result says `timed_out`.
    """
    process = HostProcess(
        argv, cwd=cwd, env=env, limit=limit, launch=launch, pass_fds=pass_fds, stdin=False,
    )  # fmt: skip
    return process.finish(b"", timeout=timeout)


class HostProcess:
    """A host process started now and waited for later: `finish()` hands it the rest of its
    input and collects its output as `run_host` does (a standby program, SandboxConfig).

    Stdout and stderr are merged into one pipe nothing reads before `finish()` but
    `wait_for()`, so a program that waits for its input must stay quiet until then, past
    the line it may print to say it waits (a pipe holds 64 KiB).

    Args:
        first: Bytes written to its stdin at once (the stdin pipe stays open after).
        stdin: False gives the program /dev/null instead of a pipe.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        limit: int = 1_000_000,
        launch: Launch | None = None,
        pass_fds: Sequence[int] = (),
        stdin: bool = True,
        first: bytes = b"",
    ) -> None:
        self.limit = limit
        self.proc = spawn(
            argv, launch=launch, cwd=cwd, env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=pass_fds,
        )  # fmt: skip
        self._finished = False
        self._collector = _Collector(limit)  # everything it printed, from its start
        self._input = bytearray(first)  # what is still to be written to its stdin
        self._close_input = False  # close its stdin once the input is written
        if self.proc.stdin is not None:
            os.set_blocking(self.proc.stdin.fileno(), False)
            self._pump_input()

    def alive(self) -> bool:
        """True while the program runs and `finish()` has not been called."""
        return not self._finished and self.proc.poll() is None

    def _pump_input(self) -> None:
        """Write what its stdin takes now without waiting; close it when all is written and
        `_close_input` says so. A program that died takes nothing: its status says why."""
        stdin = self.proc.stdin
        if stdin is None or stdin.closed:
            return
        try:
            while self._input:
                del self._input[: os.write(stdin.fileno(), self._input)]
        except BlockingIOError:
            return
        except OSError:
            self._input.clear()
        if self._close_input and not self._input:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self, deadline: float, stop: bytes = b"") -> bool:
        """Collect its output (and write its pending input) until EOF (True), `deadline`, or
        (with `stop`) until the output holds `stop` (False both). Never blocks on either
        pipe, so neither a program that does not read nor one that floods holds it."""
        stdout, stdin = self.proc.stdout, self.proc.stdin
        assert stdout is not None
        fd = stdout.fileno()
        while not (stop and stop in self._collector.buf):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            writing = [stdin.fileno()] if stdin is not None and not stdin.closed else []
            ready, writable, _ = select.select(
                [fd], writing if self._input else [], [], min(remaining, 1.0)
            )
            if writable:
                self._pump_input()
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return True
            self._collector.feed(chunk)
            self._collector.trim()
        return False

    def wait_for(self, line: bytes, *, timeout: float) -> bool:
        """Read its output up to the line `line` (which is dropped; what came before it is
        kept for `finish()`); False if it ended, flooded past the output limit or `timeout`
        passed first."""
        wanted, buf = line + b"\n", self._collector.buf
        self._read(time.monotonic() + timeout, stop=wanted)
        at = buf.find(wanted)
        if at < 0 or self._collector.head is not None:
            return False
        del buf[at : at + len(wanted)]
        return True

    def finish(self, data: bytes, *, timeout: float) -> RunResult:
        """Write `data` to its stdin, close it, and wait up to `timeout` seconds for the end.

        The output is every byte the program (and whatever it started that kept the pipe)
        wrote since it started; at `timeout` its whole session is killed, whether it was
        still writing or still had input to take.
        """
        if self._finished:
            raise SandboxError("This host process was already finished.")
        self._finished = True
        began = time.monotonic()
        self._input += data
        self._close_input = True
        self._pump_input()
        proc = self.proc
        assert proc.stdout is not None
        timed_out = not self._read(began + timeout)
        if timed_out:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
            timed_out = True
        return collected(self._collector, code, began=began, timed_out=timed_out)

    def kill(self) -> None:
        """Kill its session and reap it (a standby never finished); safe to call twice."""
        self._finished = True
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def kill_session(sid: int) -> int:
    """SIGKILL every host process whose session id is `sid`; return how many were signalled."""
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed
