"""The bwrap backend: bubblewrap namespaces over the image's root filesystem, no daemon.

The image's root filesystem is exported once into the cache folder (`termgym.sandbox`). As
root, each sandbox gets a fresh writable root: an overlay (the read-only image below, an
upper folder on a tmpfs of `disk_mb` above, so writing past the limit is ENOSPC) bound as
`/`; otherwise a read-only root with fresh writable folders bound at the workdir, /tmp,
/var/tmp, /root and /home. Limits come from host cgroups where they can be written (pids,
memory, CPU); `limits` says which hold.

What keeps the sandbox from the host (docs/security.md):
- as root, every bwrap process enters a user namespace whose root is host uid
  `UID_BASE` (`termgym.isolation._userns`), after joining the sandbox's cgroups, before bwrap
  runs (`termgym.sandbox._spawn`: nothing runs between fork and exec): the sandbox's root
  owns nothing on the host, cannot write global sysctls or reach the host's keyrings, and a
  setuid file it makes is an unprivileged user's (and the overlay is mounted nosuid, nodev);
- a seccomp filter (`termgym.isolation._seccomp`) refuses new namespaces, mounts, keyrings,
  bpf, perf and the like; `/proc/sys` is read-only; every capability is dropped;
- bwrap starts with an empty environment, so the sandbox's /proc/1/environ holds nothing
  of the host's; execs run in a new session (the shell runs on a pty of its own);
- copies in and out resolve every path inside the sandbox's root (`_fscopy`): a symlink the
  agent planted never leads the host outside it.

The agent's shell is a bwrap process running bash: when it exits or is restarted its pid
namespace ends, so background jobs end with it; files stay. A verifier
(`role="verifier"`) has no shell; its execs keep the capabilities grading needs. A
verifier whose standby is a zygote's (`StandbySpec.zygote`, termgym as root) runs no bwrap
process of its own: its standby is forked from the zygote into namespaces made over the
verifier's root (`termgym.sandbox._zygote`); its execs (a cold grading) are bwrap's as usual.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import secrets
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, ClassVar

from termgym import isolation
from termgym._programs import on_path
from termgym._stopping import stopping, track, untrack
from termgym.errors import BackendUnavailable, SandboxError, SandboxStartError
from termgym.isolation import (
    MS_NODEV,
    MS_NOSUID,
    Cgroup,
    first_child,
    hide_processes,
    mount,
    remove_stale_cgroups,
    say_once,
    wall_bwrap,
)
from termgym.sandbox import _deadline, _fscopy, _gateway
from termgym.sandbox._base import (
    VERIFIER_CAPS,
    Capabilities,
    FileTree,
    RunResult,
    SandboxConfig,
    StandbyProgram,
)
from termgym.sandbox._common import HostProcess, KeepsStandby, ShellSandbox, run_host
from termgym.sandbox._copylimits import CopyBudget, CopyLimits, HoleSpool
from termgym.sandbox._episodes import (
    LABELS,
    episodes_dir,
    labels_of,
    owner_gone,
    ready_episodes_dir,
    remove_episode,
)
from termgym.sandbox._shell import BASH_ARGV, PtyChannel
from termgym.sandbox._snapshot import SNAPSHOT_PATH, SnapshotLayers, SnapshotMount
from termgym.sandbox._spawn import Launch
from termgym.sandbox._usernet import UserNet, resolv_conf
from termgym.sandbox._zygote import CONTROL_ENV, ZygoteProcess, zygote_for, zygote_runtime

log = logging.getLogger(__name__)

WRITABLE = ("/tmp", "/var/tmp", "/root", "/home")
"""Folders made writable when no overlay root can be mounted (plus the workdir)."""

HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
"""The whole environment bwrap itself starts with (the sandbox's comes from --setenv)."""


class BwrapSandbox(KeepsStandby, ShellSandbox):
    """A bubblewrap sandbox; see the module docstring."""

    backend = "bwrap"
    capabilities: ClassVar[Capabilities] = Capabilities(
        verifier=True, standby=True, live=True, snapshot=True
    )
    """Snapshots (and imports into a verifier) need the overlay root: termgym as root."""
    shell_argv: tuple[str, ...] = BASH_ARGV
    """The agent's shell, inside the sandbox."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        super().__init__(config)
        self.name = "termgym-" + secrets.token_hex(6)
        self.home: Path | None = None
        self.rootfs: Path | None = None
        self.mode = ""
        self.binds: dict[str, Path] = {}
        self.cgroup: Cgroup | None = None
        self.uid_base = isolation.UID_BASE if isolation.mapped() else 0
        self.snapshot: SnapshotMount | None = None
        self.net: UserNet | None = None
        """The sandbox's own network (`limits.network`), entered by every process of it."""
        self.zygote_control = -1
        """A zygote's own sandbox: the descriptor of its program's control socket."""
        self._netns_fd = -1
        """The shell's network namespace, held open once a verifier joins it (live state)."""
        self._gateway_binds: list[tuple[str, str]] = []
        """The model gateway's socket and relay, bound into an agent's sandbox (`_gateway`)."""

    @property
    def limits(self) -> list[str]:
        """Which limits hold: some of "pids", "memory", "cpu" (cgroups), "disk" (tmpfs)."""
        held = list(self.cgroup.applied) if self.cgroup else []
        return held + (["disk"] if self.mode == "overlay" else [])

    def start(self) -> None:
        """Prepare the writable root (and, for an agent, start the shell)."""
        from termgym.images import rootfs_for

        if on_path("bwrap") is None:
            raise BackendUnavailable(
                "Expected bubblewrap (`bwrap`) on PATH for the bwrap backend; found none. "
                "Install it (`apt-get install bubblewrap`, or `make system`)."
            )
        if self.config.runtime:
            raise SandboxStartError(
                f"The bwrap backend takes no runtime; got runtime={self.config.runtime!r} "
                "(runtimes such as runsc are docker's)."
            )
        self.rootfs = rootfs_for(self.config.image)
        track(self)  # closed by a stop of the process from here on (`_stopping`)
        self._starting = True
        try:
            self._start_tracked()
        finally:
            self._starting = False
            if self._closed:  # closed from another thread as it started: its leftovers go
                with contextlib.suppress(Exception):
                    self._teardown()
                untrack(self)  # only now: a stop waits for this start, not just the close

    def _start_tracked(self) -> None:
        deadline = time.monotonic() + _deadline.START_DEADLINE
        self.home = Path(tempfile.mkdtemp(prefix=self.name + "-", dir=ready_episodes_dir()))
        self.home.chmod(0o711)
        # the labels first: a folder that names its owner names its run too (`gc --run`)
        (self.home / LABELS).write_text(json.dumps(dict(self.config.labels)))
        (self.home / "owner.pid").write_text(str(os.getpid()))
        try:
            if self.uid_base:
                isolation.userns_fd()
                _check_reachable(self.home)
            self._make_root()
            if self.config.snapshot_of:
                self._mount_snapshot()
            self.cgroup = Cgroup(
                self.name, pids=self.config.pids, memory_mb=self.config.memory_mb,
                cpus=self.config.cpus,
            )  # fmt: skip
            self._mkdir(self.config.workdir)
            mount = _gateway.wanted(self.config)
            if mount is not None:
                self._gateway_binds = _gateway.binds(mount)
            if self.config.network and not self.config.network_of:
                self._start_network()
            if self.config.role == "agent":
                self._start_shell(timeout=min(30.0, max(0.0, deadline - time.monotonic())))
            self._start_standby(self.config, self._spawn_standby, deadline=deadline)
            self._hide_processes()
            if self._closed:  # closed from another thread as it started (a stop)
                raise SandboxStartError(f"The bwrap sandbox {self.name} was closed as it started.")
        except BaseException as exc:
            if self._closed:
                self._teardown()  # what the start made after that close ran
            self.close()
            if isinstance(exc, OSError | SandboxError) and not isinstance(exc, SandboxStartError):
                raise SandboxStartError(f"Could not start the bwrap sandbox: {exc}") from exc
            raise

    def _hide_processes(self) -> None:
        """A verifier's standby sandbox: its /proc shows a process only to its own user and
        to termgym's group (`_procview`; a zygote's child mounts its own so). A cold exec's
        bwrap has a /proc of its own, shown whole (docs/security.md)."""
        standby = self._standby
        if self.config.role != "verifier" or not self.uid_base or standby is None:
            return
        if self.zygote_control >= 0:
            return  # a zygote's own sandbox: it maps its children's ids through its /proc
        if not isinstance(standby, HostProcess):
            return  # forked from a zygote: its /proc was mounted so
        inside = first_child(standby.proc.pid)
        why = hide_processes(inside) if inside else "bwrap has no child"
        if why:
            say_once("procview", f"the agent's programs may list a verifier's processes: {why}")

    def _start_network(self) -> None:
        """A network namespace of the sandbox's own with outbound access (`_usernet`)."""
        if not self.uid_base:
            raise SandboxStartError(
                "A bwrap sandbox gets a network of its own (never the host's) only when "
                "termgym runs as root; run as root, or use docker, for a task with "
                "limits.network: true."
            )
        assert self.home is not None
        from termgym.images import cache_dir

        why = wall_bwrap(self.uid_base)
        if why:
            say_once(
                "network",
                "Networked bwrap sandboxes can reach the services the host binds to its "
                f"addresses other than the loopback ({why}); see docs/security.md.",
            )
        userns = f"/proc/{os.getpid()}/fd/{isolation.userns_fd()}"
        self.net = UserNet(userns, cache_dir() / "net", self.uid_base)
        resolv = self.home / "resolv.conf"
        resolv.write_text(resolv_conf())
        os.chown(resolv, self.uid_base, self.uid_base)

    def _launch(self) -> Launch:
        """What every bwrap process does before bwrap runs (`termgym.sandbox._spawn`): join
        the cgroups (or, without a pids cgroup, take an RLIMIT_NPROC), then the namespaces.

        RLIMIT_NPROC counts every process of the host user and does not bind root, so the
        fallback allows the user's current count plus `pids`; it is what holds on a machine
        without writable cgroups.
        """
        assert self.cgroup is not None
        nproc = None
        if "pids" not in self.cgroup.applied and os.geteuid() != 0:
            nproc = _processes_of_this_user() + self.config.pids
        if not self.uid_base:
            return Launch(cgroups=self.cgroup.procs_files(), nproc=nproc)
        return Launch(
            cgroups=self.cgroup.procs_files(), nproc=nproc,
            userns=f"/proc/{os.getpid()}/fd/{isolation.userns_fd()}",
            netns=self.net.path if self.net is not None else self.config.network_of,
        )  # fmt: skip

    def _make_root(self) -> None:
        assert self.home is not None and self.rootfs is not None
        if os.geteuid() == 0 and self._mount_overlay():
            self.mode = "overlay"
            return
        self.mode = "binds"
        for dest in (self.config.workdir, *WRITABLE):
            folder = self.home / "binds" / dest.strip("/").replace("/", "_")
            folder.mkdir(parents=True, exist_ok=True)
            self.binds[dest] = folder

    def _mount_overlay(self) -> bool:
        assert self.home is not None and self.rootfs is not None
        disk, merged = self.home / "disk", self.home / "merged"
        disk.mkdir()
        merged.mkdir()
        size = (
            f"size={self.config.disk_mb}m,mode=0711,nr_inodes={max(self.config.disk_mb, 64) * 64}"
        )
        if mount("tmpfs", str(disk), options=size):
            return False
        (disk / "upper").mkdir()
        (disk / "work").mkdir()
        os.chown(disk / "upper", self.uid_base, self.uid_base)
        (disk / "upper").chmod(0o755)
        options = f"lowerdir={self.rootfs},upperdir={disk / 'upper'},workdir={disk / 'work'}"
        return not mount("overlay", str(merged), options=options, flags=MS_NOSUID | MS_NODEV)

    def _mount_snapshot(self) -> None:
        if self.mode != "overlay":
            raise SandboxStartError(
                "Snapshot grading on bwrap needs the overlay root (termgym as root)."
            )
        assert self.home is not None
        layers = SnapshotLayers.parse(self.config.snapshot_of)
        self.snapshot = SnapshotMount(
            layers, self.home / "snap", size_mb=self.config.disk_mb, owner=self.uid_base
        )

    def snapshot_handle(self) -> str:
        """The agent's writable layer over the image's root filesystem (overlay mode)."""
        if self.mode != "overlay" or self.home is None or self.rootfs is None:
            raise SandboxError(
                "Snapshot grading on bwrap needs the overlay root (termgym as root); this "
                "sandbox has read-only binds."
            )
        return SnapshotLayers((str(self.home / "disk" / "upper"), str(self.rootfs))).handle()

    def _mkdir(self, path: str) -> None:
        if self.mode == "overlay":
            with _fscopy_root(self.home / "merged") as root_fd:  # type: ignore[operator]
                parent, name = _fscopy.resolve_parent(root_fd, path, create=True, uid=self.uid_base)
                try:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=parent)
                        os.chown(name, self.uid_base, self.uid_base, dir_fd=parent)
                finally:
                    os.close(parent)
            return
        self.host_path(path).mkdir(parents=True, exist_ok=True)

    def host_path(self, path: str) -> Path:
        """Where the sandbox path `path` (absolute) is on the host (binds mode: its folder).

        A host path is never opened for a sandbox path's sake in overlay mode: copies go
        through `_fscopy`, which resolves inside the root."""
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
        self,
        seccomp_fd: int,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        *,
        session: bool = False,
    ) -> list[str]:
        assert self.home is not None and self.rootfs is not None
        config = self.config
        argv = ["bwrap", "--die-with-parent", "--unshare-ipc", "--unshare-pid", "--unshare-uts"]
        argv.append("--unshare-cgroup-try")
        if self.net is None and not config.network_of:
            argv.append("--unshare-net")  # a namespace with only its loopback
        if os.geteuid() != 0:  # bwrap makes a user namespace mapping the caller only
            argv += ["--unshare-user", "--uid", "0", "--gid", "0"]
        argv += ["--cap-drop", "ALL"]
        kept = config.capabilities
        if config.role == "verifier":
            kept = (*VERIFIER_CAPS, *config.capabilities)
        if self.uid_base:  # in the sandbox's user namespace only
            for cap in kept:
                argv += ["--cap-add", f"CAP_{cap}"]
        if self.mode == "overlay":
            argv += ["--bind", str(self.home / "merged"), "/"]
        else:
            argv += ["--ro-bind", str(self.rootfs), "/"]
            for dest, folder in self.binds.items():
                argv += ["--bind", str(folder), dest]
        if self.snapshot is not None:
            argv += ["--bind", str(self.snapshot.merged), SNAPSHOT_PATH]
        if self.net is not None:
            argv += ["--bind", str(self.home / "resolv.conf"), "/etc/resolv.conf"]
        argv += ["--proc", "/proc"]
        if self.zygote_control < 0:  # a zygote's children mount a /proc of their own, which
            argv += ["--ro-bind", "/proc/sys", "/proc/sys"]  # a mount over its /proc forbids
        argv += ["--dev", "/dev"]
        for source, dest in self._gateway_binds:
            argv += ["--ro-bind", source, dest]
        if not config.network_of:
            argv += ["--hostname", "sandbox"]
        argv.append("--clearenv")
        for key, value in {**self._shell_env(), **(env or {})}.items():
            argv += ["--setenv", key, value]
        argv += ["--seccomp", str(seccomp_fd), "--chdir", workdir or config.workdir]
        if session:
            argv.append("--new-session")
        return argv

    def _connect(self, size: tuple[int, int]) -> PtyChannel:
        fd = isolation.seccomp_filter_fd(nesting=self.config.role == "verifier")
        try:
            shell = _gateway.relayed(self.shell_argv, _gateway.wanted(self.config))
            argv = [*self._bwrap_argv(fd), "--", *shell]
            return PtyChannel(argv, size, HOST_ENV, self._launch(), pass_fds=(fd,))
        finally:
            os.close(fd)

    def _on_shell_death(self) -> None:
        home = self.home
        if self.mode == "overlay" and home is not None and not os.path.ismount(home / "merged"):
            self._crash(f"The bwrap sandbox {self.name} lost its root filesystem.")

    def _reclaim(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill_all()

    # ---- copies: always resolved inside the sandbox's root -------------------------------

    def _roots(self, path: str) -> tuple[Path, str, str]:
        """(host folder standing for the sandbox root, `path` below it, where it is mounted)."""
        if self.home is None:
            raise SandboxError("The bwrap sandbox is not started; call start() first.")
        if self.mode == "overlay":
            return self.home / "merged", path, ""
        for dest, folder in sorted(self.binds.items(), key=lambda item: -len(item[0])):
            if path == dest or path.startswith(dest.rstrip("/") + "/"):
                return folder, "/" + path[len(dest) :].lstrip("/"), dest
        assert self.rootfs is not None
        return self.rootfs, path, ""

    def copy_in(self, src: Path | FileTree, dest: str) -> None:
        """Copy a host file or folder to `dest` (absolute; it names the copy), or a
        FileTree's files below it."""
        root, inner, _ = self._roots(dest)
        if not inner.strip("/"):
            raise SandboxError(f"Expected a path below a writable folder to copy to; got {dest!r}.")
        _fscopy.copy_in(root, src, inner, uid_base=self.uid_base)

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy the sandbox file or folder `src` to the host path `dest`."""
        root, inner, _ = self._roots(src)
        _fscopy.copy_out(root, inner, Path(dest), uid_base=self.uid_base)

    def export_paths(self, paths: Sequence[str], out: BinaryIO, limits: CopyLimits) -> None:
        """A tar of `paths`, read from the host without following any of the sandbox's links,
        within `limits` (ArchiveTooLarge past them)."""
        budget = limits.budget()
        if self.mode == "overlay":
            root, _, _ = self._roots("/")
            _fscopy.export_tree(root, paths, out, budget=budget, uid_base=self.uid_base)
            return
        with HoleSpool() as parts, tarfile.open(fileobj=out, mode="w|") as tar:
            for path in paths:
                root, inner, mounted = self._roots(path)
                parts.seek(0)
                parts.truncate()
                _fscopy.export_tree(root, [inner], parts, budget=budget, uid_base=self.uid_base)
                parts.seek(0)
                with tarfile.open(fileobj=parts, mode="r|") as source:
                    for member in source:
                        data = source.extractfile(member) if member.isfile() else None
                        member.name = (mounted.strip("/") + "/" + member.name).strip("/")
                        tar.addfile(member, data)

    def import_archive(self, archive: BinaryIO, budget: CopyBudget | None = None) -> None:
        """Unpack a tar at the root, resolving every member's path inside the sandbox (within
        `budget`'s time, if given)."""
        if self.mode != "overlay":
            raise SandboxError(
                "Importing an archive at the root needs the overlay root (termgym as root); "
                "this bwrap sandbox has read-only binds."
            )
        root, _, _ = self._roots("/")
        _fscopy.import_tree(root, archive, uid_base=self.uid_base, budget=budget)

    def network_handle(self) -> str:
        """The sandbox's network namespace file: its own network's, else its shell's, held
        open by this process from the first call on (so a pid the shell's namespace holder
        left, and another process took, never names another namespace)."""
        if self.net is not None:
            return self.net.path
        if self._netns_fd < 0:
            self._netns_fd = self._open_shell_netns()
        return f"/proc/{os.getpid()}/fd/{self._netns_fd}"

    def _open_shell_netns(self) -> int:
        channel = self.shell._child if self.shell is not None else None  # noqa: SLF001
        pid = getattr(channel, "pid", 0)
        if not pid:
            raise SandboxError(f"The bwrap sandbox {self.name} has no shell to share a network.")
        children = f"/proc/{pid}/task/{pid}/children"
        try:
            inner = Path(children).read_text().split()[0]
            fd = os.open(f"/proc/{inner}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except (OSError, IndexError) as exc:
            raise SandboxError(f"The bwrap sandbox {self.name}'s shell is gone.") from exc
        try:  # still the shell's: the pid was not let go and taken in between
            still = Path(children).read_text().split()[:1] == [inner]
        except OSError:
            still = False
        if not still:
            os.close(fd)
            raise SandboxError(f"The bwrap sandbox {self.name}'s shell is gone.")
        return fd

    # ---- processes -----------------------------------------------------------------------

    def freeze(self) -> None:
        """Kill the agent's shell and every process it started, from the host; files stay."""
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
        fd = isolation.seccomp_filter_fd(nesting=self.config.role == "verifier")
        try:
            program = _gateway.relayed(argv, _gateway.wanted(self.config))
            full = [*self._bwrap_argv(fd, workdir, env, session=True), "--", *program]
            return run_host(
                full,
                timeout=timeout,
                env=HOST_ENV,
                limit=self.config.output_limit,
                launch=self._launch(),
                pass_fds=(fd,),
            )
        finally:
            os.close(fd)

    def _spawn_standby(self) -> StandbyProgram:
        """The config's standby: forked from its zygote where it has one, else in a new
        bwrap over the same root, as an exec would be (a zygote's own program among them)."""
        standby = self.config.standby
        assert standby is not None
        if standby.zygote and self._forks_standby():
            forked = self._forked_standby()
            if forked is not None:
                return forked
        zygote = self.zygote_control >= 0
        fd = isolation.seccomp_filter_fd(nesting=self.config.role == "verifier", zygote=zygote)
        try:
            env, first, fds = dict(standby.env), standby.first, [fd]
            if zygote:
                env[CONTROL_ENV] = str(self.zygote_control)
                first += zygote_runtime()
                fds.append(self.zygote_control)
            argv = self._bwrap_argv(fd, standby.workdir, env, session=True)
            return HostProcess(
                [*argv, "--", *standby.argv], env=HOST_ENV, limit=self.config.output_limit,
                launch=self._launch(), pass_fds=fds, first=first,
            )  # fmt: skip
        finally:
            os.close(fd)

    def _forks_standby(self) -> bool:
        """Whether this verifier's standby may come from a zygote: termgym as root (the
        overlay root), no snapshot, no network of another sandbox's or its own."""
        config = self.config
        return (
            config.role == "verifier" and self.zygote_control < 0 and bool(self.uid_base)
            and self.mode == "overlay" and not config.snapshot_of and not config.network_of
            and self.net is None
        )  # fmt: skip

    def _forked_standby(self) -> StandbyProgram | None:
        """A standby forked from this process's zygote of the standby's spec and image; None
        (and a warning) if there is none or it could not fork."""
        standby, home, cgroup = self.config.standby, self.home, self.cgroup
        assert standby is not None and home is not None and cgroup is not None
        zygote = zygote_for((str(self.rootfs), standby), self._launch_zygote)
        if zygote is None:
            return None
        try:
            return zygote.fork(
                home / "merged", cgroup.procs_files(),
                env={**self._shell_env(), **dict(standby.env)}, workdir=standby.workdir,
                caps=(*VERIFIER_CAPS, *self.config.capabilities),
                seccomp=isolation.verifier_filter(), limit=self.config.output_limit,
                timeout=standby.ready_timeout, memory_kills=cgroup.memory_kills,
            )  # fmt: skip
        except SandboxError as exc:
            if not stopping():  # a stop closes the zygotes under their forks: nothing to say
                log.warning("the zygote gave no standby, one starts anew: %s", exc)
            return None

    def _launch_zygote(self, control: int) -> ZygoteProcess:
        """The zygote of this verifier's standby: a sandbox of its own over the same clean
        image, whose standby program is the zygote (termgym.sandbox._zygote); it maps its
        children's root (SETFCAP, as a snapshot verifier's nests do)."""
        config = dataclasses.replace(
            self.config, capabilities=("SETFCAP",),
            labels={**self.config.labels, "io.termgym.role": "zygote"},
        )  # fmt: skip
        sandbox = BwrapSandbox(config)
        sandbox.zygote_control = control
        sandbox.start()
        if sandbox._standby is None:
            sandbox.close()
            raise SandboxStartError("the zygote's program never said it was ready")
        return _ZygoteSandbox(sandbox)

    def close(self) -> None:
        """Stop every process, unmount and delete the episode's folder (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._teardown()
        finally:
            if not self._starting:  # else the start untracks it once it has stopped too
                untrack(self)

    def _teardown(self) -> None:
        self._drop_standby()
        if self.shell is not None:
            self.shell.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.net is not None:
            self.net.close()
        if self._netns_fd >= 0:
            os.close(self._netns_fd)
            self._netns_fd = -1
        if self.snapshot is not None:
            self.snapshot.close()
        if self.home is not None:
            remove_episode(self.home)


class _ZygoteSandbox:
    """A zygote (`termgym.sandbox._zygote.ZygoteProcess`): its sandbox, whose standby is it."""

    def __init__(self, sandbox: BwrapSandbox) -> None:
        self.sandbox = sandbox

    def alive(self) -> bool:
        standby = self.sandbox._standby  # noqa: SLF001 - the zygote's program, never taken
        return standby is not None and standby.alive()

    def close(self) -> None:
        self.sandbox.close()


@contextlib.contextmanager
def _fscopy_root(root: Path):  # type: ignore[no-untyped-def]
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        yield fd
    finally:
        os.close(fd)


def _check_reachable(folder: Path) -> None:
    """The sandbox's root (an unprivileged host uid) must be able to walk to its root fs."""
    for parent in [folder, *folder.parents]:
        if not os.stat(parent).st_mode & 0o001:
            raise SandboxStartError(
                f"Expected every folder above {folder} to be open to other users (o+x) so "
                f"that a sandbox's unprivileged root can reach its files; {parent} is not. "
                "Set TERMGYM_CACHE to a folder such as /var/cache/termgym."
            )


def collect_bwrap_garbage(
    *, labels: Mapping[str, str] | None = None, dry_run: bool = False
) -> list[str]:
    """Remove episode folders whose owning process is gone; return their names.

    `labels` narrows it to the folders of sandboxes started with all of them (one run's);
    `dry_run` removes nothing and names what would go."""
    removed: list[str] = []
    if not episodes_dir().is_dir():
        return removed
    wanted = dict(labels or {})
    for home in episodes_dir().iterdir():
        # a folder naming no owner is garbage once it is not one being made this minute
        if not owner_gone(home, unknown=_older_than(home, 60.0)):
            continue
        if wanted and not wanted.items() <= labels_of(home).items():
            continue
        if not dry_run:
            remove_episode(home)
        removed.append(home.name)
    if dry_run:
        return removed
    live = {home.name.rsplit("-", 1)[0] for home in episodes_dir().iterdir()}
    remove_stale_cgroups(live)
    return removed


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False


def _processes_of_this_user() -> int:
    return sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p))


def _owned(proc: Path) -> bool:
    try:
        return proc.stat().st_uid == os.geteuid()
    except OSError:
        return False
