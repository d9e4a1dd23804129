"""The local backend: a plain bash in a temporary folder on the host. Nothing is isolated."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, ClassVar

from termgym._stopping import track, untrack
from termgym.errors import SandboxError, SandboxStartError
from termgym.sandbox import _deadline, _fscopy
from termgym.sandbox._base import Capabilities, FileTree, RunResult, SandboxConfig
from termgym.sandbox._common import HostProcess, KeepsStandby, ShellSandbox, kill_session, run_host
from termgym.sandbox._copylimits import CopyBudget, CopyLimits
from termgym.sandbox._shell import BASH_ARGV


class LocalSandbox(KeepsStandby, ShellSandbox):
    """A bash on the host, its absolute sandbox paths mapped under a temporary root folder.

    `/app` in the config or in copy_in/copy_out means `<root>/app` on the host. Commands the
    agent types are NOT rewritten: an absolute path in a command reaches the real host path.
    Only for quick checks on machines with neither Docker nor bubblewrap.
    """

    backend = "local"
    capabilities: ClassVar[Capabilities] = Capabilities(verifier=True, standby=True, live=True)
    """Its verifiers keep a standby; live state is the host's network; no snapshot (the
    filesystem is the host's)."""
    shell_argv: tuple[str, ...] = BASH_ARGV
    """The agent's shell."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        super().__init__(config)
        self.root: Path | None = None

    def host_path(self, path: str) -> Path:
        """Where the sandbox path `path` (absolute) lives on the host."""
        if self.root is None:
            raise SandboxError("The local sandbox is not started; call start() first.")
        return self.root / path.lstrip("/")

    def start(self) -> None:
        """Make the temporary root (and, for an agent, start the shell), within
        START_DEADLINE."""
        if self.config.runtime:
            raise SandboxStartError(
                f"The local backend takes no runtime; got runtime={self.config.runtime!r}."
            )
        deadline = time.monotonic() + _deadline.START_DEADLINE
        track(self)  # closed by a stop of the process from here on (`_stopping`)
        self.root = Path(tempfile.mkdtemp(prefix="termgym-local-"))
        try:
            self.host_path(self.config.workdir).mkdir(parents=True, exist_ok=True)
            if self.config.role == "agent":
                self._start_shell(timeout=min(30.0, max(0.0, deadline - time.monotonic())))
            self._start_standby(self.config, self._spawn_standby, deadline=deadline)
        except BaseException as exc:
            self.close()
            if isinstance(exc, OSError | SandboxError) and not isinstance(exc, SandboxStartError):
                raise SandboxStartError(f"Could not start the local sandbox: {exc}") from exc
            raise

    def _shell_argv(self) -> list[str]:
        return list(self.shell_argv)

    def _shell_env(self) -> dict[str, str]:
        env = super()._shell_env()
        env["HOME"] = str(self.root)
        env["PATH"] = os.environ.get("PATH", env["PATH"])
        return env

    def _shell_workdir(self) -> str:
        return str(self.host_path(self.config.workdir))

    def _kill_hook(self, pid: int) -> None:
        kill_session(pid)

    def copy_in(self, src: Path | FileTree, dest: str) -> None:
        """Copy a host file or folder to the sandbox path `dest` (resolved inside the root)."""
        _fscopy.copy_in(self._root(), src, dest)

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy the sandbox path `src` to the host path `dest` (resolved inside the root)."""
        _fscopy.copy_out(self._root(), src, Path(dest))

    def export_paths(self, paths: Sequence[str], out: BinaryIO, limits: CopyLimits) -> None:
        """A tar of the mapped `paths`, never following a symlink out of the root."""
        _fscopy.export_tree(self._root(), paths, out, budget=limits.budget(), uid_base=os.geteuid())

    def import_archive(self, archive: BinaryIO, budget: CopyBudget | None = None) -> None:
        """Unpack a tar under the root (owned by this user: nothing else is possible)."""
        _fscopy.import_tree(
            self._root(), archive, uid_base=os.geteuid(), keep_ids=False, budget=budget
        )

    def network_handle(self) -> str:
        """The host's network (the local backend has no network of its own)."""
        return ""

    def snapshot_handle(self) -> str:
        """None: the local backend's "filesystem" is the host's, which no snapshot can grade."""
        raise SandboxError(
            "Snapshot grading (grading.filesystem: snapshot) needs the docker or bwrap backend; "
            "the local backend runs on the host itself."
        )

    def _root(self) -> Path:
        if self.root is None:
            raise SandboxError("The local sandbox is not started; call start() first.")
        return self.root

    def freeze(self) -> None:
        """Kill the shell and everything it started (its session)."""
        if self.shell is not None and self.shell.shell_pid is not None:
            kill_session(self.shell.shell_pid)
            self.shell.close()

    def exec(
        self,
        argv: Sequence[str],
        timeout: float = 60.0,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run a host program in the mapped workdir."""
        cwd = self.host_path(workdir or self.config.workdir)
        return run_host(
            argv, timeout=timeout, cwd=cwd, env=self._exec_env(env),
            limit=self.config.output_limit,
        )  # fmt: skip

    def _exec_env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        # an evaluator's secret (termgym.tasks.SECRET_ENV) never reaches a program run here
        host = {k: v for k, v in os.environ.items() if k != "TERMGYM_SECRET"}
        return {**host, **self._shell_env(), **(env or {})}

    def _spawn_standby(self) -> HostProcess:
        standby = self.config.standby
        assert standby is not None
        return HostProcess(
            standby.argv, cwd=self.host_path(standby.workdir),
            env=self._exec_env(dict(standby.env)), limit=self.config.output_limit,
            first=standby.first,
        )  # fmt: skip

    def close(self) -> None:
        """Kill every process and delete the temporary root (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._drop_standby()
            self.freeze()
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)
        finally:
            untrack(self)
