"""The bwrap backend: bubblewrap namespaces over the base image's root filesystem, no daemon.

The image's root filesystem is exported once into the cache folder (`termgym.images`). Each
episode gets a fresh writable root: as root, an overlay mount (read-only image below, a
per-episode upper folder above) bound as `/`; otherwise a read-only root with fresh writable
folders bound at the workdir, /tmp, /var/tmp, /root and /home. Limits come from host cgroups
where they can be written (pids, memory, CPU); `limits` says which hold. All capabilities
are dropped; network only when the config asks for it.

The agent's shell is a bwrap process running bash: when it exits or is restarted its pid
namespace ends, so background jobs end with it; files stay.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from termgym.errors import BackendUnavailable, SandboxError
from termgym.sandbox._base import RunResult, SandboxConfig
from termgym.sandbox._cgroup import Cgroup, remove_stale_cgroups
from termgym.sandbox._common import ShellSandbox, run_host
from termgym.sandbox._shell import BASH_ARGV

WRITABLE = ("/tmp", "/var/tmp", "/root", "/home")
"""Folders made writable when no overlay root can be mounted (plus the workdir)."""


def episodes_dir() -> Path:
    from termgym.images import cache_dir

    return cache_dir() / "episodes"


class BwrapSandbox(ShellSandbox):
    """A bubblewrap sandbox; see the module docstring."""

    backend = "bwrap"

    def __init__(self, config: SandboxConfig | None = None) -> None:
        super().__init__(config)
        self.name = "termgym-" + secrets.token_hex(6)
        self.home: Path | None = None
        self.rootfs: Path | None = None
        self.mode = ""
        self.binds: dict[str, Path] = {}
        self.cgroup: Cgroup | None = None

    @property
    def limits(self) -> list[str]:
        """Which limits hold: some of "pids", "memory", "cpu" (from host cgroups)."""
        return list(self.cgroup.applied) if self.cgroup else []

    def start(self) -> None:
        """Prepare the writable root and start the agent's shell."""
        from termgym.images import rootfs_for

        if shutil.which("bwrap") is None:
            raise BackendUnavailable(
                "Expected bubblewrap (`bwrap`) on PATH for the bwrap backend; found none. "
                "Install it (`apt-get install bubblewrap`, or `make system`)."
            )
        self.rootfs = rootfs_for(self.config.image)
        episodes_dir().mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix=self.name + "-", dir=episodes_dir()))
        (self.home / "owner.pid").write_text(str(os.getpid()))
        try:
            self._make_root()
            self.cgroup = Cgroup(
                self.name, pids=self.config.pids, memory_mb=self.config.memory_mb,
                cpus=self.config.cpus,
            )  # fmt: skip
            self._preexec = self._enter_limits
            self.host_path(self.config.workdir).mkdir(parents=True, exist_ok=True)
            self._start_shell()
        except BaseException:
            self.close()
            raise

    def _enter_limits(self) -> None:
        """In the spawned child: join the cgroups, or fall back to RLIMIT_NPROC for pids.

        RLIMIT_NPROC counts every process of the host user and does not bind root, so the
        fallback allows the user's current count plus `pids`; it is what holds on a machine
        without writable cgroups.
        """
        assert self.cgroup is not None
        self.cgroup.join()
        if "pids" not in self.cgroup.applied and os.geteuid() != 0:
            import resource

            mine = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p))
            limit = mine + self.config.pids
            resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))

    def _make_root(self) -> None:
        assert self.home is not None and self.rootfs is not None
        merged = self.home / "merged"
        if os.geteuid() == 0:
            for part in ("upper", "work", "merged"):
                (self.home / part).mkdir()
            upper, work = self.home / "upper", self.home / "work"
            options = f"lowerdir={self.rootfs},upperdir={upper},workdir={work}"
            done = subprocess.run(
                ["mount", "-t", "overlay", "overlay", "-o", options, str(merged)],
                capture_output=True,
                check=False,
            )
            if done.returncode == 0:
                self.mode = "overlay"
                return
        self.mode = "binds"
        for dest in (self.config.workdir, *WRITABLE):
            folder = self.home / "binds" / dest.strip("/").replace("/", "_")
            folder.mkdir(parents=True, exist_ok=True)
            self.binds[dest] = folder

    def host_path(self, path: str) -> Path:
        """Where the sandbox path `path` (absolute) is on the host."""
        if self.home is None:
            raise SandboxError("The bwrap sandbox is not started; call start() first.")
        if self.mode == "overlay":
            return self.home / "merged" / path.lstrip("/")
        for dest, folder in sorted(self.binds.items(), key=lambda item: -len(item[0])):
            if path == dest or path.startswith(dest.rstrip("/") + "/"):
                return folder / path[len(dest) :].lstrip("/")
        raise SandboxError(
            f"Expected a path under the writable folders {sorted(self.binds)} (this bwrap "
            f"sandbox has a read-only root because no overlay could be mounted); got {path!r}."
        )

    def _bwrap_argv(
        self, workdir: str | None = None, env: Mapping[str, str] | None = None
    ) -> list[str]:
        assert self.home is not None and self.rootfs is not None
        # No --new-session: the shell's terminal is a pty of its own (nothing outside to
        # inject keys into), and a new session would cut bash from it: no Ctrl-C, no jobs.
        argv = ["bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
        if self.config.network:
            argv.append("--share-net")
        if os.geteuid() != 0:
            argv += ["--uid", "0", "--gid", "0"]
        if self.mode == "overlay":
            argv += ["--bind", str(self.home / "merged"), "/"]
        else:
            argv += ["--ro-bind", str(self.rootfs), "/"]
            for dest, folder in self.binds.items():
                argv += ["--bind", str(folder), dest]
        argv += ["--proc", "/proc", "--dev", "/dev", "--hostname", "sandbox", "--clearenv"]
        for key, value in {**self._shell_env(), **(env or {})}.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", workdir or self.config.workdir]
        return argv

    def _shell_argv(self) -> list[str]:
        return [*self._bwrap_argv(), "--", *BASH_ARGV]

    def _on_shell_death(self) -> None:
        home = self.home
        if self.mode == "overlay" and home is not None and not os.path.ismount(home / "merged"):
            self._crash(f"The bwrap sandbox {self.name} lost its root filesystem.")

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or folder to `dest` (absolute); `dest` names the copy."""
        _copy(Path(src), self.host_path(dest))

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy the sandbox file or folder `src` to the host path `dest`."""
        path = self.host_path(src)
        if not path.exists() and self.mode != "overlay":
            path = self.rootfs / src.lstrip("/") if self.rootfs else path
        _copy(path, Path(dest))

    def freeze(self) -> None:
        """Kill the agent's shell and every process it started; files stay."""
        if self.shell is not None:
            self.shell.close()
        if self.cgroup is not None and not self.cgroup.kill_all():
            raise SandboxError(f"Could not stop the agent's processes in {self.name}.")

    def exec(
        self,
        argv: Sequence[str],
        timeout: float = 60.0,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run `argv` in a new bwrap over the same writable root (not in the agent's shell)."""
        if self.home is None:
            raise SandboxError("The bwrap sandbox is not started; call start() first.")
        full = [*self._bwrap_argv(workdir, env), "--", *argv]
        return run_host(
            full, timeout=timeout, limit=self.config.output_limit, preexec_fn=self._preexec
        )

    def close(self) -> None:
        """Stop every process, unmount and delete the episode's folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.shell is not None:
            self.shell.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.home is not None:
            remove_episode(self.home)


def remove_episode(home: Path) -> None:
    """Unmount (if mounted) and delete one episode folder."""
    merged = home / "merged"
    if os.path.ismount(merged):
        done = subprocess.run(["umount", str(merged)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(merged)], capture_output=True, check=False)
    shutil.rmtree(home, ignore_errors=True)


def collect_bwrap_garbage() -> list[str]:
    """Remove episode folders whose owning process is gone; return their names."""
    removed: list[str] = []
    if not episodes_dir().is_dir():
        return removed
    for home in episodes_dir().iterdir():
        with contextlib.suppress(OSError, ValueError):
            owner = int((home / "owner.pid").read_text())
            if Path(f"/proc/{owner}").exists():
                continue
        remove_episode(home)
        removed.append(home.name)
    live = {home.name.rsplit("-", 1)[0] for home in episodes_dir().iterdir()}
    remove_stale_cgroups(live)
    return removed


def _owned(proc: Path) -> bool:
    try:
        return proc.stat().st_uid == os.geteuid()
    except OSError:
        return False


def _copy(src: Path, dest: Path) -> None:
    if not src.exists() and not src.is_symlink():
        raise SandboxError(f"Expected {src} to exist to copy it; found nothing there.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest, follow_symlinks=False)
