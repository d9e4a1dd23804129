"""The docker backend: one locked-down container per episode, the agent's shell one exec in it.

The shell is a `docker exec` with a tty whose stream is the engine's raw socket (what
`docker exec -it` does, without the CLI process in between), attached once per episode.

The container's main process is `sleep infinity` under docker's init, running as `nobody`;
the agent's shell runs as root without capabilities, so it cannot signal init or the main
process. Nothing termgym does to a container after the agent has acted runs a program
inside it: `freeze()` is the engine's SIGKILL of the container (every process dies, the
files stay), the agent's work leaves by the engine's `get_archive`, which works on a stopped
container, and a command that overran is killed from the host by its host pid. Every engine
call has a host-side deadline (`termgym.sandbox._deadline`).

A verifier (`role="verifier"`) is a container of the same clean image with no shell and the
capabilities grading needs (`VERIFIER_CAPS`); `network_of` puts it in an agent container's
network. Disk limits: `termgym.isolation._disk`.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import os
import re
import secrets
import select
import shutil
import signal
import socket
import struct
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, ClassVar

from termgym._stopping import stopping, track, untrack
from termgym.errors import (
    DiskLimitExceeded,
    EngineError,
    SandboxCrashed,
    SandboxError,
    SandboxStartError,
)
from termgym.images import (
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    SANDBOX_LABEL,
    docker_client,
    engine_address,
    owner_labels,
)
from termgym.isolation import (
    DiskBound,
    LayerDisk,
    bridge_for,
    engine_quota,
    hide_processes,
    quota_option,
    refuses_quota,
    remember_quota,
    remove_orphans,
    say_disk_limit,
    say_once,
    shared_watch,
    verifier_profile,
    wall_docker,
)
from termgym.sandbox._base import (
    VERIFIER_CAPS,
    Capabilities,
    FileTree,
    RunResult,
    SandboxConfig,
)
from termgym.sandbox._common import DEFAULT_ENV, KeepsStandby, ShellSandbox, collected
from termgym.sandbox._copylimits import HOST_COPY, CopyBudget, CopyLimits
from termgym.sandbox._deadline import ENGINE_DEADLINE, within
from termgym.sandbox._dockernet import docker_network
from termgym.sandbox._fscopy import tree_archive
from termgym.sandbox._gateway import binds as gateway_binds
from termgym.sandbox._gateway import relayed, wanted
from termgym.sandbox._removals import remove_later, used_engine
from termgym.sandbox._shell import BASH_ARGV, _Collector, _nonblocking
from termgym.sandbox._snapshot import SNAPSHOT_PATH, SnapshotLayers, SnapshotMount

log = logging.getLogger(__name__)

MAIN_USER = "65534:65534"
"""The container's main process runs as nobody so root's `kill -9 -1` cannot stop it."""

AGENT_USER = "0:0"
SHELL_COPY_LIMIT = 256 * 1024
"""Tar archives up to this size are copied in through the attached shell, not put_archive."""

EXEC_GRACE = 2.0
"""Seconds an exec's output may go on after its processes were killed at the timeout, before
the host gives up on it and kills the whole container."""

START_RETRIES = (0.5, 2.0)
"""Waits before each new try of a container start the engine refused under load."""

ENGINE_BUSY = re.compile(
    r"resource temporarily unavailable|context deadline exceeded|failed to create shim|"
    r"connection reset by peer|device or resource busy|error creating overlay mount|"
    r"cannot allocate memory|no such process|unable to freeze|Timeout",
    re.IGNORECASE,
)
"""What the engine says when it refuses a start for a moment (a loaded machine: the runtime
could not fork, a mount was busy, a call timed out inside the engine), not for good."""

PAUSE_RETRIES = (0.0, 0.1, 0.3, 1.0)
"""Waits before each try of a pause the kernel's freezer refused ("unable to freeze")."""

DETACH_KEYS = "ctrl-^,ctrl-_,ctrl-^,ctrl-_"
"""Docker swallows Ctrl-P by default in an attached exec (its detach prefix); move it away."""


class DockerExecChannel:
    """The agent's shell as a `docker exec` with a tty, its stream a raw socket to the engine.

    Equivalent to `docker exec -it <cid> bash ...` without the CLI process in between.
    """

    echo_off = False  # the engine's pty starts as every pty does

    def __init__(self, container: Any, argv: Sequence[str], workdir: str, size: tuple[int, int]):
        api = container.client.api
        self.api = api
        self.description = f"docker exec {container.name} {' '.join(argv)}"
        self.exec_id = within(ENGINE_DEADLINE, "creating the shell's exec", lambda: api.exec_create(
            container.id, list(argv), stdin=True, tty=True, user=AGENT_USER, workdir=workdir,
            detach_keys=DETACH_KEYS,
        ))["Id"]  # fmt: skip
        self.sock = within(
            ENGINE_DEADLINE,
            "attaching the shell",
            lambda: api.exec_start(self.exec_id, tty=True, socket=True),
        )
        self.fd: int = self.sock.fileno()
        _nonblocking(self.fd)
        with contextlib.suppress(Exception):
            within(5, "resizing the shell", lambda: api.exec_resize(
                self.exec_id, height=size[0], width=size[1]))  # fmt: skip
        self.host_pid = 0
        with contextlib.suppress(Exception):
            self.host_pid = int(within(5, "inspecting the shell", lambda: api.exec_inspect(
                self.exec_id)).get("Pid") or 0)  # fmt: skip
        self._closed = False

    def alive(self) -> bool:
        return not self._closed

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(Exception):
                self.sock.close()
            with contextlib.suppress(Exception):
                self.sock._sock.close()

    def exit_status(self) -> int | None:
        self.close()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                info = within(
                    5, "inspecting the shell", lambda: self.api.exec_inspect(self.exec_id)
                )
            except Exception:
                return None
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(0.025)
        return None


class DockerSandbox(KeepsStandby, ShellSandbox):
    """A container started through the Docker SDK; see the module docstring."""

    backend = "docker"
    capabilities: ClassVar[Capabilities] = Capabilities(
        verifier=True, standby=True, live=True, snapshot=True
    )
    """Snapshots need a local engine with the overlay2 storage driver (`snapshot_handle`)."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        super().__init__(config)
        self.container: Any = None
        self.name = "termgym-" + secrets.token_hex(6)
        self.init_pid = 0
        self.disk_limit: DiskBound = "none"
        """What bounds the writable layer: "engine" (its quota), "filesystem" (one of the
        limit's size under the layer), "watchdog" (a poll) or "none" (docs/security.md)."""
        self._disk_why = ""
        self.layer_disk: LayerDisk | None = None
        self._disk_exceeded: str | None = None
        self.snapshot: SnapshotMount | None = None
        self._frozen = False
        """Every process of the container was killed (`freeze`): none of the agent's runs."""
        self._created = False
        """The engine was asked to create the container (it may exist before `container`
        is set: a close from another thread then removes it by name)."""

    @property
    def container_id(self) -> str:
        if self.container is None:
            raise SandboxError("The docker sandbox is not started; call start() first.")
        return str(self.container.id)

    @property
    def _api(self) -> Any:
        return self.container.client.api

    def start(self) -> None:
        """Start the container (and, for an agent, attach the persistent shell)."""

        config = self.config
        self._refuse_misplaced_standby(config)  # before a container is made for nothing
        client = docker_client()
        track(self)  # closed by a stop of the process from here on (`_stopping`)
        used_engine()  # at this process's exit, its containers still there are removed
        self._starting = True
        try:
            self._start_tracked(client)
        finally:
            self._starting = False
            if self._closed:  # closed from another thread as it started: its leftovers go
                with contextlib.suppress(Exception):
                    self._teardown()
                untrack(self)  # only now: a stop waits for this start, not just the close

    def _start_tracked(self, client: Any) -> None:
        import docker.errors

        config = self.config
        if config.snapshot_of:
            from termgym.images import cache_dir

            self.snapshot = SnapshotMount(
                SnapshotLayers.parse(config.snapshot_of), cache_dir() / "snapshots" / self.name,
                size_mb=config.disk_mb, owner=0,
            )  # fmt: skip
        try:
            self._create_and_start(client)
        except docker.errors.ImageNotFound as exc:
            self.close()
            raise SandboxStartError(
                f"Expected image {config.image} in the Docker engine; found none. "
                "Build the base image with `termgym image build-base`."
            ) from exc
        except SandboxStartError:
            self._remove_container()
            raise
        except (docker.errors.APIError, EngineError) as exc:
            self.close()
            hint = ""
            if config.runtime and "runtime" in str(exc).lower():
                hint = (
                    f" The engine does not know the runtime {config.runtime!r}: register it "
                    "(`make system` does so for runsc when it starts dockerd; docs/security.md)."
                )
            raise SandboxStartError(f"Docker could not start {config.image}: {exc}.{hint}") from exc
        self._check_disk()
        if config.role != "agent":
            self._hide_processes()
            try:
                self._start_standby(config, self._spawn_standby)
            except BaseException:
                self.close()
                raise
            return
        try:
            self._start_shell()
        except BaseException as exc:
            self.close()
            if isinstance(exc, SandboxError) and not isinstance(exc, SandboxStartError):
                raise SandboxStartError(str(exc)) from exc
            raise

    def _create_and_start(self, client: Any) -> None:
        """Create and start the container (create + start, not run: run would pull a missing
        image from a registry); a refusal the engine makes only under load (`ENGINE_BUSY`) is
        tried again, on a fresh container, after `START_RETRIES`' waits."""
        import docker.errors

        for delay in (*START_RETRIES, None):
            try:
                self.container = self._create(client)
                if self._closed:  # closed while the engine made it (the process is stopping)
                    raise SandboxStartError(
                        f"The docker sandbox {self.name} was closed as it started."
                    )
                self._bound_disk()
                within(ENGINE_DEADLINE, "starting a container", self.container.start)
                self.container.reload()
                self.init_pid = int(self.container.attrs["State"].get("Pid") or 0)
                return
            except docker.errors.APIError as exc:
                if delay is None or not ENGINE_BUSY.search(str(exc)) or self._closed:
                    raise
                log.info("%s: the engine refused under load (%s); trying again", self.name, exc)
                self._remove_container()
                if self.layer_disk is not None:
                    self.layer_disk.close()
                self.container, self.layer_disk, self.disk_limit = None, None, "none"
                time.sleep(delay)

    def _create_options(self) -> dict[str, Any]:
        config = self.config
        verifier = config.role == "verifier"
        if config.network_of:
            network = f"container:{config.network_of}"
        elif config.network and not verifier:
            network = self._network()
        else:
            network = "none"
        options: dict[str, Any] = {
            "command": ["sleep", "infinity"],
            "name": self.name,
            "init": True,
            # A verifier's main process is root: its execs inherit the capabilities of the
            # main process (none under nobody); nothing of the agent's runs as root there.
            # An agent whose task keeps capabilities gets a root main process too (so its
            # shell has them); it can then stop its own container, and nothing else.
            "user": "0:0" if verifier or config.capabilities else MAIN_USER,
            "working_dir": config.workdir,
            "network_mode": network,
            "cap_drop": ["ALL"],
            "cap_add": [*(VERIFIER_CAPS if verifier else ()), *config.capabilities] or None,
            # A verifier's profile lets its grading make the nests the agent's programs
            # run in (termgym/verifier/nest.py), which apply the strict filter to them.
            "security_opt": ["no-new-privileges"]
            + (["seccomp=" + verifier_profile()] if verifier else []),
            "pids_limit": config.pids,
            "mem_limit": f"{config.memory_mb}m",
            "memswap_limit": f"{config.memory_mb}m",
            "nano_cpus": int(config.cpus * 1e9),
            "labels": {**owner_labels(config.role), **config.labels},
        }
        if not config.network_of:
            options["hostname"] = "sandbox"
        if not verifier:
            # /etc/hosts, /etc/hostname and /etc/resolv.conf are the engine's files on the
            # host's disk, bound in writable and outside every disk limit: no file of the
            # agent's (those three included) grows past the limit
            size = config.disk_mb << 20
            options["ulimits"] = [{"Name": "fsize", "Soft": size, "Hard": size}]
        volumes: dict[str, dict[str, str]] = {}
        if self.snapshot is not None:
            volumes[str(self.snapshot.merged)] = {"bind": SNAPSHOT_PATH, "mode": "rw"}
        mount = wanted(config)
        if mount is not None:  # the model gateway's socket and relay (termgym.sandbox._gateway)
            volumes.update(
                {src: {"bind": dest, "mode": "ro"} for src, dest in gateway_binds(mount)}
            )
        if volumes:
            options["volumes"] = volumes
        if config.runtime:
            options["runtime"] = config.runtime
        return options

    def _network(self) -> str:
        """termgym's bridge network (`termgym.sandbox._dockernet`), its host kept out of reach
        where termgym can set the rule (`termgym.isolation._hostwall`); said once where it
        cannot."""
        name = docker_network(docker_client(), engine_address())
        bridge = bridge_for(engine_address())
        why = (
            wall_docker(bridge)
            if os.path.exists(f"/sys/class/net/{bridge}")
            else "the engine's bridge is not on this host"
        )
        if why:
            say_once(
                "network",
                "Networked docker sandboxes can reach the services the host binds to its "
                f"bridge's address ({why}); see docs/security.md.",
            )
        return name

    def _create(self, client: Any) -> Any:
        """Create the container, its writable layer bounded by the engine where it can
        (`--storage-opt size`: asked once per engine; a refusal is remembered)."""
        import docker.errors

        options = self._create_options()
        address = engine_address()
        self._created = True
        if engine_quota(address) is not False:
            try:
                container = within(
                    ENGINE_DEADLINE,
                    f"creating a container of {self.config.image}",
                    lambda: client.containers.create(
                        self.config.image, storage_opt=quota_option(self.config.disk_mb), **options
                    ),
                )
            except docker.errors.APIError as exc:
                if not refuses_quota(exc):
                    raise
                remember_quota(address, False)
            else:
                remember_quota(address, True)
                self.disk_limit = "engine"
                return container
        return within(
            ENGINE_DEADLINE,
            f"creating a container of {self.config.image}",
            lambda: client.containers.create(self.config.image, **options),
        )

    def _bound_disk(self) -> None:
        """Before the container starts: its writable layer on a filesystem of the disk limit
        (`termgym.isolation._layerdisk`) unless the engine bounds it already."""
        if self.disk_limit == "engine":
            return
        from termgym.images import cache_dir

        data = (self.container.attrs.get("GraphDriver") or {}).get("Data") or {}
        upper = data.get("UpperDir") or ""
        made = (
            LayerDisk.make(upper, self.config.disk_mb, cache_dir() / "layer-disks")
            if upper and os.path.isdir(upper)
            else "its writable layer is not on this host"
        )
        if isinstance(made, LayerDisk):
            self.layer_disk, self.disk_limit = made, "filesystem"
        else:
            self._disk_why = made

    def _check_disk(self) -> None:
        """After the start: make sure the bound holds (the engine's overlay sits on the
        filesystem made for it), else fall back on the watchdog; say once which holds."""
        if self._closed:  # closed as it started (a stop): its layer is gone, nothing to say
            self._remove_container()
            raise SandboxStartError(f"The docker sandbox {self.name} was closed as it started.")
        if self.disk_limit == "filesystem" and not self._on_layer_disk():
            self._disk_why = "the engine does not see termgym's mounts (a mount namespace)"
            self.disk_limit = "none"
        if self.disk_limit == "none":
            data = (self.container.attrs.get("GraphDriver") or {}).get("Data") or {}
            if shared_watch().watch(
                id(self), data.get("UpperDir"), self.config.disk_mb, self._over_disk
            ):
                self.disk_limit = "watchdog"
        say_disk_limit(self.disk_limit, self._disk_why)

    def _on_layer_disk(self) -> bool:
        """The container's root reports the size of its layer's filesystem (overlayfs
        reports its upper filesystem's)."""
        try:
            found = os.statvfs(f"/proc/{self.init_pid}/root")
        except OSError:
            return False
        return found.f_blocks * found.f_frsize <= (self.config.disk_mb << 20) and self.init_pid > 0

    def _over_disk(self, what: str) -> None:
        self._disk_exceeded = (
            f"The docker sandbox {self.name} wrote {what}: it passed its disk limit and was "
            "stopped."
        )
        with contextlib.suppress(Exception):
            within(
                ENGINE_DEADLINE, "killing a container", lambda: self._api.kill(self.container.id)
            )

    def _connect(self, size: tuple[int, int]) -> DockerExecChannel:
        try:
            shell = relayed(BASH_ARGV, wanted(self.config))
            return DockerExecChannel(self.container, shell, self.config.workdir, size)
        except Exception as exc:  # docker's APIError, connection errors, deadlines
            raise SandboxError(f"Could not attach a shell to {self.name}: {exc}") from exc

    def _hide_processes(self) -> None:
        """A verifier's /proc shows a process only to its own user and to termgym's group
        (`_procview`), remounted from the host: a local engine, termgym as root."""
        why = "only root beside a local engine remounts a container's /proc"
        if os.geteuid() == 0 and self._local():
            why = hide_processes(self.init_pid) or ""
        if why:
            say_once("procview", f"the agent's programs may list a verifier's processes: {why}")

    def _local(self) -> bool:
        """True when this container's processes are host processes termgym can signal."""
        if self.config.runtime not in (None, "runc") or not self.init_pid:
            return False
        try:
            return self.container.id in Path(f"/proc/{self.init_pid}/cgroup").read_text()
        except OSError:
            return False

    def _kill_hook(self, pid: int) -> None:
        """Kill the shell and its foreground job from the host (by host pid)."""
        channel = self.shell._child if self.shell is not None else None  # noqa: SLF001
        host_pid = getattr(channel, "host_pid", 0)
        if self._local() and host_pid:
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{host_pid}/stat").read_text()
                tpgid = int(stat[stat.rfind(")") + 2 :].split()[5])
                if tpgid > 1:
                    os.killpg(tpgid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(host_pid, signal.SIGKILL)
            return
        script = f"t=$(ps -o tpgid= -p {pid}); kill -9 -$((t)) {pid} 2>/dev/null; kill -9 {pid}"
        with contextlib.suppress(Exception):
            within(10, "killing the shell", lambda: self.container.exec_run(
                ["/bin/sh", "-c", script], user=AGENT_USER, workdir="/"))  # fmt: skip

    def _reclaim(self) -> None:
        """Kill every agent process (a fork bomb holding every pid) from the host."""
        if not self._local():
            return
        procs = _cgroup_procs(self.init_pid)
        keep = {self.init_pid, *_children(self.init_pid)}
        with contextlib.suppress(Exception):
            within(
                ENGINE_DEADLINE, "pausing a container", lambda: self._api.pause(self.container.id)
            )
        try:
            for _ in range(20):
                left = [pid for pid in _cgroup_procs(self.init_pid) or procs if pid not in keep]
                if not left:
                    break
                for pid in left:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)
        finally:
            with contextlib.suppress(Exception):
                within(ENGINE_DEADLINE, "unpausing", lambda: self._api.unpause(self.container.id))

    def _on_shell_death(self) -> None:
        if self._disk_exceeded:
            self._crash(self._disk_exceeded, DiskLimitExceeded)
            return
        try:
            state = self._state()
        except Exception as exc:
            self._crash(
                f"The docker sandbox {self.name} vanished while a command ran "
                f"({type(exc).__name__}: {exc}); start a new sandbox."
            )
            return
        if state.get("Status") != "running":
            oom = ", killed for exceeding its memory limit" if state.get("OOMKilled") else ""
            self._crash(
                f"The docker sandbox {self.name} stopped while a command ran (status "
                f"{state.get('Status')}, exit code {state.get('ExitCode')}{oom}); "
                "start a new sandbox (its files can still be graded)."
            )

    def _state(self) -> dict[str, Any]:
        attrs = within(
            ENGINE_DEADLINE, "inspecting a container", lambda: self._api.inspect_container(
                self.container.id)
        )  # fmt: skip
        return dict(attrs["State"])

    def _check_running(self) -> None:
        if self._crashed is not None:
            raise SandboxCrashed(self._crashed)
        if self.container is None:
            raise SandboxError("The docker sandbox is not started; call start() first.")

    def copy_in(self, src: Path | FileTree, dest: str) -> None:
        """Copy a host file or folder to `dest` (absolute; it names the copy), or a
        FileTree's files below it."""
        self._check_running()
        target = PurePosixPath(dest)
        if not target.is_absolute():
            raise SandboxError(f"Expected an absolute sandbox path to copy to; got {dest!r}.")
        if isinstance(src, FileTree):
            self._copy_archive(tree_archive(src, dest), "files made in memory", dest)
            return
        src = Path(src)
        if not src.exists():
            raise SandboxError(f"Expected {src} to exist to copy it in; found nothing there.")
        with tempfile.TemporaryFile() as spool:
            with tarfile.open(fileobj=spool, mode="w") as tar:
                tar.add(str(src), arcname=str(target).lstrip("/") or ".", filter=_as_root)
            size = spool.tell()
            spool.seek(0)
            if size <= SHELL_COPY_LIMIT:
                self._copy_archive(spool.read(), str(src), dest)
            else:
                self.import_archive(spool)

    def _copy_archive(self, archive: bytes, what: str, dest: str) -> None:
        """A small tar through the shell (`_untar_through_shell`), else through the engine."""
        if len(archive) <= SHELL_COPY_LIMIT and self.shell is not None and self.shell.alive:
            self._untar_through_shell(archive, what, dest)
        else:
            self.import_archive(io.BytesIO(archive))

    def _untar_through_shell(self, archive: bytes, what: str, dest: str) -> None:
        """Small copies ride the attached shell as base64 (a few ms; put_archive costs ~60).

        Only ever used before the agent acts (laying out a task's files)."""
        marker = "TERMGYM_COPY_" + secrets.token_hex(8)
        text = base64.encodebytes(archive).decode("ascii")
        command = f"base64 -d <<'{marker}' | tar -x -C /\n{text}{marker}"
        result = self.shell.run(command, timeout=60)  # type: ignore[union-attr]
        if result.exit_code != 0:
            raise SandboxError(
                f"Copying {what} to {dest} through the shell failed (exit {result.exit_code}): "
                f"{result.output.strip()[-500:]}"
            )

    def import_archive(self, archive: BinaryIO, budget: CopyBudget | None = None) -> None:
        """Unpack a tar at the container's root through the engine (which resolves in-root).

        The archive streams from its file to the engine (never read whole). With `budget`
        (a copy of the agent's work), a copy that takes longer than the budget's time is
        ArchiveTooLarge: the agent's work was too much to move in time."""
        import docker.errors

        self._check_running()
        seconds = budget.left() if budget is not None else ENGINE_DEADLINE
        try:
            done = within(
                seconds,
                "copying files in",
                lambda: self._api.put_archive(self.container.id, "/", _Body(archive)),
            )
        except docker.errors.APIError as exc:
            raise SandboxError(f"Docker refused to copy files into {self.name}: {exc}") from exc
        except EngineError:
            if budget is None:
                raise
            budget.check_time()
            raise
        if not done:
            raise SandboxError(f"Docker refused to copy files into {self.name}.")

    def export_paths(self, paths: Sequence[str], out: BinaryIO, limits: CopyLimits) -> None:
        """A tar of `paths` from the container (running or stopped) through the engine,
        streamed from the engine's archive into `out` within `limits`."""
        if self.container is None:
            raise SandboxError("The docker sandbox is not started; call start() first.")
        budget = limits.budget()
        try:
            with self._held_still():
                within(
                    limits.seconds + ENGINE_DEADLINE,  # past the copy's own time: a stall
                    "copying files out",
                    lambda: self._export(paths, out, budget),
                )
        except EngineError:
            if self._frozen:
                raise  # nothing of the agent's ran to hold the copy: the engine stalled
            # the agent's processes still run (live-state grading): one can hold the
            # engine's reads (a file lease waits 45 s an open), past the copy's own time
            budget.check_time()
            raise

    @contextlib.contextmanager
    def _held_still(self) -> Iterator[None]:
        """While the engine copies files out of a container whose processes still run
        (live-state grading), they are paused (the cgroup freezer): none can swap a file it
        looks at for a fifo before it opens it, an open that waits for a writer forever and
        holds the engine's lock of the container (no kill, no removal) with it.

        A freeze the kernel refuses for a moment ("unable to freeze": a process busy in the
        kernel, on a loaded machine) is tried again; where it keeps failing and the
        container's processes are this host's, they are held by SIGSTOP instead, which no
        process can catch (`_stop_all`)."""
        if self._frozen:
            yield
            return
        how = self._pause()
        if how == "":
            yield  # not running (the agent stopped it): nothing moves
            return
        try:
            yield
        except BaseException:
            # the copy failed (past its time, say: the engine still reads, holding the
            # container): the unpause goes on in its thread and lands when the engine lets it
            with contextlib.suppress(Exception):
                self._unpause(how, 1.0)
            raise
        self._unpause(how, ENGINE_DEADLINE)

    def _pause(self) -> str:
        """Hold every process of the running container still: "paused" (the engine's
        freezer), "stopped" (SIGSTOP, where the freezer kept refusing), or "" when the
        container is not running."""
        import docker.errors

        failure: docker.errors.APIError | None = None
        for delay in PAUSE_RETRIES:
            time.sleep(delay)
            try:
                within(ENGINE_DEADLINE, "pausing a container", lambda: self._api.pause(
                    self.container.id))  # fmt: skip
                return "paused"
            except docker.errors.APIError as exc:
                if exc.status_code == 409:
                    return ""
                failure = exc
                if "freez" not in str(exc).lower():
                    break  # not the freezer's moment: no use asking again
        if self._local() and self._stop_all():
            log.info("%s: the freezer refused (%s); held by SIGSTOP instead", self.name, failure)
            return "stopped"
        raise EngineError(f"Docker could not pause {self.name}: {failure}") from failure

    def _unpause(self, how: str, seconds: float) -> None:
        import docker.errors

        if how == "stopped":
            for pid in _cgroup_procs(self.init_pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGCONT)
            return
        try:
            within(seconds, "unpausing a container", lambda: self._api.unpause(
                self.container.id))  # fmt: skip
        except docker.errors.APIError as exc:
            raise EngineError(f"Docker could not unpause {self.name}: {exc}") from exc

    def _stop_all(self) -> bool:
        """SIGSTOP every process of the container (from the host, by host pid) until all
        are stopped twice in a row (a child forked as its parent was stopped starts running:
        it is stopped in the next round); False if they could not be listed."""
        calm = 0
        for _ in range(200):
            found = _cgroup_procs(self.init_pid)
            if not found:
                return False
            running = [pid for pid in found if _state(pid) not in "TtZX"]
            for pid in running:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            calm = 0 if running else calm + 1
            if calm == 2:
                return True
            time.sleep(0.002)
        return False

    def _export(self, paths: Sequence[str], out: BinaryIO, budget: CopyBudget) -> None:
        import docker.errors

        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for path in paths:
                parent = str(PurePosixPath(path).parent).strip("/")
                try:
                    stream, _ = self._api.get_archive(self.container.id, path)
                except docker.errors.NotFound:
                    continue
                reader = _ChunkReader(stream, budget)
                try:
                    with tarfile.open(fileobj=reader, mode="r|") as source:
                        for member in source:
                            member.name = f"{parent}/{member.name}".lstrip("/")
                            budget.spend(member.name, member.size if member.isfile() else 0)
                            data = source.extractfile(member) if member.isfile() else None
                            if member.islnk():
                                member.linkname = f"{parent}/{member.linkname}".lstrip("/")
                            if member.ischr() or member.isblk():
                                continue
                            tar.addfile(member, data)
                finally:
                    reader.close_stream()

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy the sandbox file or folder `src` to the host path `dest` (which names the copy)."""
        dest = Path(dest)
        with tempfile.TemporaryDirectory(prefix="termgym-out-") as tmp:
            with tempfile.TemporaryFile() as spool:
                self.export_paths([src], spool, HOST_COPY)
                if spool.tell() == 0:
                    raise SandboxError(f"Expected {src} in the sandbox; found nothing there.")
                spool.seek(0)
                with tarfile.open(fileobj=spool, mode="r") as tar:
                    tar.extractall(tmp, filter="tar")
            found = Path(tmp, *PurePosixPath(src).parts[1:])
            if not found.exists() and not found.is_symlink():
                raise SandboxError(f"Expected {src} in the sandbox; found nothing there.")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.is_dir() and found.is_dir():
                shutil.copytree(found, dest, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.move(str(found), dest)

    def freeze(self) -> None:
        """SIGKILL the container through the engine: every process dies, the files stay."""
        if self.container is None:
            raise SandboxError("The docker sandbox is not started; call start() first.")
        if self.shell is not None:
            hook, self.shell.kill_hook = self.shell.kill_hook, None
            self.shell.close()
            self.shell.kill_hook = hook
        import docker.errors

        try:
            with contextlib.suppress(docker.errors.APIError):  # 409: already stopped
                within(ENGINE_DEADLINE, "killing a container", lambda: self._api.kill(
                    self.container.id))  # fmt: skip
            deadline = time.monotonic() + ENGINE_DEADLINE
            while self._state().get("Running"):
                if time.monotonic() > deadline:
                    raise EngineError(f"The docker sandbox {self.name} did not stop when killed.")
                time.sleep(0.01)
            self._frozen = True
        except docker.errors.NotFound as exc:
            raise EngineError(f"The docker sandbox {self.name} is gone: {exc}") from exc
        except docker.errors.APIError as exc:
            raise EngineError(f"Docker could not stop {self.name}: {exc}") from exc

    def network_handle(self) -> str:
        """The container id (a verifier joins it as `network_mode=container:<id>`), while
        the container runs."""
        self._check_running()
        state = self._state()
        if not state.get("Running"):
            raise SandboxError(
                f"The docker sandbox {self.name} stopped ({state.get('Status', 'gone')})."
            )
        return self.container_id

    def snapshot_handle(self) -> str:
        """The container's overlay2 layers on this host: its writable layer, then the image's."""
        data = (self.container.attrs.get("GraphDriver") or {}).get("Data") or {}
        upper, lower = data.get("UpperDir"), data.get("LowerDir") or ""
        if not upper or not os.path.isdir(upper):
            raise SandboxError(
                "Snapshot grading on docker needs a local engine with the overlay2 storage "
                "driver (the container's writable layer readable on this host); found "
                f"{data!r:.200}"
            )
        return SnapshotLayers((upper, *[p for p in lower.split(":") if p])).handle()

    def exec(
        self,
        argv: Sequence[str],
        timeout: float = 60.0,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run `argv` as root in the container (not in the agent's shell), output merged.

        The host stops waiting `EXEC_GRACE` seconds past `timeout` and kills the container
        (a program that trickles output forever cannot hold the caller)."""
        self._check_running()
        began = time.monotonic()
        api = self._api
        full_env = {**DEFAULT_ENV, **self.config.env, **(env or {})}
        program = relayed(argv, wanted(self.config))
        exec_id = within(ENGINE_DEADLINE, "creating an exec", lambda: api.exec_create(
            self.container_id, program, workdir=workdir or self.config.workdir,
            environment=full_env, user=AGENT_USER, stdout=True, stderr=True,
        ))["Id"]  # fmt: skip
        sock = within(ENGINE_DEADLINE, "starting an exec", lambda: api.exec_start(
            exec_id, socket=True))  # fmt: skip
        frames = _Frames(sock, _Collector(self.config.output_limit))
        return self._finish_exec(exec_id, frames, began, timeout)

    def _finish_exec(
        self, exec_id: str, frames: _Frames, began: float, timeout: float
    ) -> RunResult:
        """Read an exec's output to its end (or kill it past `timeout` from `began`)."""
        finished = frames.until(began + timeout)
        code: int | None = None
        if finished:
            code = within(ENGINE_DEADLINE, "inspecting an exec", lambda: self._api.exec_inspect(
                exec_id)).get("ExitCode")  # fmt: skip
        else:
            self._kill_overrun(exec_id, frames)
        return collected(frames.collector, code, began=began, timed_out=not finished)

    # ---- the standby program (SandboxConfig.standby) -------------------------------------

    def _spawn_standby(self) -> DockerStandby:
        """The config's standby: an exec with its stdin attached, given `first` at once."""
        spec = self.config.standby
        assert spec is not None
        api = self._api
        env = {**DEFAULT_ENV, **dict(spec.env)}
        exec_id = within(ENGINE_DEADLINE, "creating an exec", lambda: api.exec_create(
            self.container_id, list(spec.argv), workdir=spec.workdir, environment=env,
            user=AGENT_USER, stdout=True, stderr=True, stdin=True,
        ))["Id"]  # fmt: skip
        sock = within(ENGINE_DEADLINE, "starting an exec", lambda: api.exec_start(
            exec_id, socket=True))  # fmt: skip
        standby = DockerStandby(self, exec_id, _Frames(sock, _Collector(self.config.output_limit)))
        if not standby.send(spec.first):
            standby.frames.close()  # its stream is gone: never ready, never used
        return standby

    def _kill_overrun(self, exec_id: str, frames: _Frames) -> None:
        """An exec overran: kill its processes by host pid if possible, else the container."""
        pid = 0
        with contextlib.suppress(Exception):
            pid = int(within(5, "inspecting an exec", lambda: self._api.exec_inspect(
                exec_id)).get("Pid") or 0)  # fmt: skip
        if pid and self._local():
            for each in _descendants(pid):
                with contextlib.suppress(OSError):
                    os.kill(each, signal.SIGKILL)
            if frames.until(time.monotonic() + EXEC_GRACE):
                return
        frames.close()
        self._crashed = f"The docker sandbox {self.name} was killed: a program overran its time."
        with contextlib.suppress(Exception):
            within(ENGINE_DEADLINE, "killing a container", lambda: self._api.kill(
                self.container.id))  # fmt: skip

    def close(self) -> None:
        """Kill and remove the container (idempotent; a hung engine is given up on)."""
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
        shared_watch().forget(id(self))
        if self.shell is not None:
            self.shell.kill_hook = None
            self.shell.close()
        self._remove_container()
        if self.layer_disk is not None:
            self.layer_disk.close()
        if self.snapshot is not None:
            self.snapshot.close()

    def _remove_container(self) -> None:
        """Remove the container, by name where its creation has not answered yet (a close
        from another thread as it starts: the process stopping)."""
        if self.container is None and not self._created:
            return
        import docker.errors

        target = self.container.id if self.container is not None else self.name
        try:
            api = docker_client().api
            within(ENGINE_DEADLINE, "removing a container", lambda: api.remove_container(
                target, force=True))  # fmt: skip
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if not (exc.status_code == 409 and "already in progress" in str(exc)):
                self._remove_later(target, exc)
        except Exception as exc:  # noqa: BLE001 - the engine away for a moment: later
            self._remove_later(target, exc)

    def _remove_later(self, target: str, exc: BaseException) -> None:
        if not stopping():  # a stop removes what it can and exits: nothing to say then
            log.warning("could not remove %s (%s); trying again in the background", self.name, exc)
        remove_later(target)


class DockerStandby:
    """A standby program in a container: an exec started with its stdin attached, waiting."""

    def __init__(self, sandbox: DockerSandbox, exec_id: str, frames: _Frames) -> None:
        self.sandbox, self.exec_id, self.frames = sandbox, exec_id, frames
        self._finished = False

    def send(self, data: bytes) -> bool:
        """Write `data` to its stdin; False if the stream is gone."""
        if not data:
            return True
        raw = self.frames.raw
        try:
            raw.setblocking(True)
            raw.settimeout(ENGINE_DEADLINE)
            raw.sendall(data)
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                raw.setblocking(False)
        return True

    def wait_for(self, line: bytes, *, timeout: float) -> bool:
        """Read its output up to the line `line` (dropped from it); False if it ended, flooded
        past the output limit or `timeout` passed first."""
        wanted, buf = line + b"\n", self.frames.collector.buf
        self.frames.until(time.monotonic() + timeout, stop=wanted)
        at = buf.find(wanted)
        if at < 0 or self.frames.collector.head is not None:
            return False
        del buf[at : at + len(wanted)]
        return True

    def alive(self) -> bool:
        """True while it waits: its stream open and quiet since its ready line."""
        if self._finished or self.frames.closed:
            return False
        try:
            ready, _, _ = select.select([self.frames.raw], [], [], 0)
        except (OSError, ValueError):
            return False
        return not ready  # anything to read now is its end, or output it should not have made

    def finish(self, data: bytes, *, timeout: float) -> RunResult:
        """Hand it `data` on its stdin and read its output to its end (killed past `timeout`)."""
        if self._finished:
            raise SandboxError("This standby was already finished.")
        self._finished = True
        began = time.monotonic()
        self.send(data)
        return self.sandbox._finish_exec(self.exec_id, self.frames, began, timeout)  # noqa: SLF001

    def kill(self) -> None:
        """Stop it unfinished: its stream closed, its processes killed with the container."""
        self._finished = True
        self.frames.close()


class _ChunkReader(io.RawIOBase):
    """A file-like view of docker-py's archive chunk iterator, for tarfile's stream mode,
    within a copy's time."""

    def __init__(self, chunks: Any, budget: CopyBudget | None = None) -> None:
        self.source = chunks
        self.chunks = iter(chunks)
        self.pending = b""
        self.budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self.pending:
            if self.budget is not None:
                self.budget.check_time()
            try:
                self.pending = next(self.chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size

    def close_stream(self) -> None:
        """Stop the engine's stream (a copy that stopped early leaves no reply half read)."""
        with contextlib.suppress(Exception):
            self.source.close()


class _Body:
    """A file's remaining bytes as an HTTP request body (streamed, with its length)."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        here = handle.tell()
        self.len = handle.seek(0, io.SEEK_END) - here
        handle.seek(here)

    def read(self, size: int = -1) -> bytes:
        return self.handle.read(size)


def _close_quietly(sock: Any) -> None:
    with contextlib.suppress(Exception):
        sock.close()
    with contextlib.suppress(Exception):
        getattr(sock, "_sock", sock).close()


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it (host pids)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return found


class _Frames:
    """Reads a non-tty exec's multiplexed stream (8-byte headers) into a collector."""

    def __init__(self, sock: Any, collector: _Collector) -> None:
        self.sock, self.collector = sock, collector
        self.raw = getattr(sock, "_sock", sock)
        self.raw.setblocking(False)
        self.buffer = b""
        self.closed = False

    def until(self, deadline: float, stop: bytes = b"") -> bool:
        """Read until EOF (True, socket closed) or `deadline` (False, socket left open); with
        `stop`, also return (False) once the output holds it."""
        while not self.closed:
            if stop and stop in self.collector.buf:
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                ready, _, _ = select.select([self.raw], [], [], min(remaining, 1.0))
                if not ready:
                    continue
                chunk = self.raw.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                break
            self.buffer += chunk
            while len(self.buffer) >= 8:
                size = struct.unpack(">I", self.buffer[4:8])[0]
                if len(self.buffer) < 8 + size:
                    break
                self.collector.feed(self.buffer[8 : 8 + size])
                self.collector.trim()
                self.buffer = self.buffer[8 + size :]
        return True

    def close(self) -> None:
        self.closed = True
        _close_quietly(self.sock)


def _cgroup_procs(pid: int) -> list[int]:
    """Every process in the pids cgroup of host process `pid` (cgroup v1 or v2)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "pids":
            folder = Path("/sys/fs/cgroup/pids") / path.lstrip("/")
        elif controllers == "":
            folder = Path("/sys/fs/cgroup") / path.lstrip("/")
        else:
            continue
        with contextlib.suppress(OSError, ValueError):
            return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    return []


def _state(pid: int) -> str:
    """A host process's state letter (R, S, D, T ...); "X" when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "X"
    return stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] or "X"


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def collect_garbage(
    *,
    everything: bool = False,
    labels: Mapping[str, str] | None = None,
    dry_run: bool = False,
) -> list[str]:
    """Remove leftover sandbox containers; return their names.

    A container is left over when the process that started it (labels `io.termgym.host` and
    `io.termgym.pid`) is gone from this host; one started on another host, when it is not
    running. With `everything`, every container labelled as a termgym sandbox goes, live
    episodes included. `labels` narrows the search to containers carrying all of them
    (`{"io.termgym.run": ID}`: one run's). `dry_run` removes nothing and names what would go.
    """
    import docker.errors

    client = docker_client()
    removed = []
    wanted = [SANDBOX_LABEL, *(f"{key}={value}" for key, value in (labels or {}).items())]
    listed = client.containers.list(all=True, filters={"label": wanted}, sparse=True)
    for container in listed:
        name = container.attrs["Names"][0].lstrip("/")
        if not (everything or not _owner_alive(container.attrs)):
            continue
        if dry_run:
            removed.append(name)
            continue
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            continue  # gone meanwhile (its owner closed it)
        except Exception as exc:  # noqa: BLE001 - named, and left for the next gc
            log.warning("could not remove %s: %s", name, exc)
            continue
        removed.append(name)
    if not dry_run:
        from termgym.images import cache_dir

        remove_orphans(cache_dir() / "layer-disks")  # their containers' filesystems
    return removed


def _owner_alive(attrs: Mapping[str, Any]) -> bool:
    """True when the starter of this container still runs (or, if unknown, it runs)."""
    labels = attrs.get("Labels") or {}
    if labels.get(OWNER_HOST_LABEL) != socket.gethostname():
        return bool(attrs.get("State") == "running")
    try:
        pid = int(labels.get(OWNER_PID_LABEL, "0"))
        if pid <= 0:
            return False
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True
