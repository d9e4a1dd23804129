"""The docker backend: one locked-down container per episode, the agent's shell one exec in it.

The shell is a `docker exec` with a tty whose stream is the engine's raw socket (what
`docker exec -it` does, without the CLI process in between), attached once per episode.

The container's main process is `sleep infinity` under docker's init, running as `nobody`;
the agent's shell and every `exec` run as root without capabilities. So `kill -9 -1` run as
root stops every agent process but cannot touch init or the main process (signalling another
user needs CAP_KILL): that is `freeze()`.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import socket
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from termgym.errors import SandboxCrashed, SandboxError
from termgym.sandbox._base import SANDBOX_LABEL, RunResult, SandboxConfig
from termgym.sandbox._common import DEFAULT_ENV, ShellSandbox
from termgym.sandbox._engine import docker_client
from termgym.sandbox._shell import BASH_ARGV, _Collector, _nonblocking

KEEP_CAPS: tuple[str, ...] = ()
"""Capabilities added back after dropping ALL; bash, python, git and make need none."""

MAIN_USER = "65534:65534"
"""The container's main process runs as nobody so root's `kill -9 -1` cannot stop it."""

AGENT_USER = "0:0"
SHELL_COPY_LIMIT = 256 * 1024
"""Tar archives up to this size are copied in through the attached shell, not put_archive."""

OWNER_HOST_LABEL = "io.termgym.host"
OWNER_PID_LABEL = "io.termgym.pid"
"""Who started a container; `termgym gc` removes those whose starter is gone."""

DETACH_KEYS = "ctrl-^,ctrl-_,ctrl-^,ctrl-_"
"""Docker swallows Ctrl-P by default in an attached exec (its detach prefix); move it away."""


_FREEZE_SCRIPT = """
kill -9 -1 2>/dev/null
for i in 1 2 3 4 5 6 7 8 9 10; do
    left=$(ps -e -o user=,sid= | awk -v s=$$ '$1 != "nobody" && $2 != s' | wc -l)
    [ "$left" -eq 0 ] && exit 0
    kill -9 -1 2>/dev/null
    sleep 0.02
done
exit 1
"""
"""Run as root in its own session (every exec gets one): kill all but init and `nobody`."""


class DockerExecChannel:
    """The agent's shell as a `docker exec` with a tty, its stream a raw socket to the engine.

    Equivalent to `docker exec -it <cid> bash ...` without the CLI process in between.
    """

    def __init__(self, container: Any, argv: Sequence[str], workdir: str, size: tuple[int, int]):
        api = container.client.api
        self.api = api
        self.description = f"docker exec {container.name} {' '.join(argv)}"
        self.exec_id = api.exec_create(
            container.id, list(argv), stdin=True, tty=True, user=AGENT_USER, workdir=workdir,
            detach_keys=DETACH_KEYS,
        )["Id"]  # fmt: skip
        self.sock = api.exec_start(self.exec_id, tty=True, socket=True)
        self.fd: int = self.sock.fileno()
        _nonblocking(self.fd)
        with contextlib.suppress(Exception):
            api.exec_resize(self.exec_id, height=size[0], width=size[1])
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
        for _ in range(20):
            try:
                info = self.api.exec_inspect(self.exec_id)
            except Exception:
                return None
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(0.025)
        return None


class DockerSandbox(ShellSandbox):
    """A container started through the Docker SDK; see the module docstring."""

    backend = "docker"

    def __init__(self, config: SandboxConfig | None = None) -> None:
        super().__init__(config)
        self.container: Any = None
        self.name = "termgym-" + secrets.token_hex(6)

    @property
    def container_id(self) -> str:
        if self.container is None:
            raise SandboxError("The docker sandbox is not started; call start() first.")
        return str(self.container.id)

    def start(self) -> None:
        """Start the container and attach the persistent shell."""
        import docker.errors

        client = docker_client()
        config = self.config
        try:
            # create + start, not run: run would try to pull a missing image from a registry
            self.container = client.containers.create(
                config.image,
                command=["sleep", "infinity"],
                name=self.name,
                init=True,
                user=MAIN_USER,
                working_dir=config.workdir,
                network_mode="bridge" if config.network else "none",
                cap_drop=["ALL"],
                cap_add=list(KEEP_CAPS) or None,
                security_opt=["no-new-privileges"],
                pids_limit=config.pids,
                mem_limit=f"{config.memory_mb}m",
                memswap_limit=f"{config.memory_mb}m",
                nano_cpus=int(config.cpus * 1e9),
                labels={
                    SANDBOX_LABEL: "1",
                    OWNER_HOST_LABEL: socket.gethostname(),
                    OWNER_PID_LABEL: str(os.getpid()),
                    **config.labels,
                },
                hostname="sandbox",
            )
            self.container.start()
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                f"Expected image {config.image} in the Docker engine; found none. "
                "Build the base image with `termgym image build-base`."
            ) from exc
        except docker.errors.APIError as exc:
            self.close()
            raise SandboxError(f"Docker could not start {config.image}: {exc}") from exc
        try:
            self._start_shell()
        except BaseException:
            self.close()
            raise

    def _connect(self, size: tuple[int, int]) -> DockerExecChannel:
        try:
            return DockerExecChannel(self.container, BASH_ARGV, self.config.workdir, size)
        except Exception as exc:  # docker's APIError and connection errors
            raise SandboxError(f"Could not attach a shell to {self.name}: {exc}") from exc

    def _kill_hook(self, pid: int) -> None:
        script = f"t=$(ps -o tpgid= -p {pid}); kill -9 -$((t)) {pid} 2>/dev/null; kill -9 {pid}"
        with contextlib.suppress(Exception):
            self.container.exec_run(["sh", "-c", script], user=AGENT_USER)

    def _on_shell_death(self) -> None:
        try:
            self.container.reload()
            state = self.container.attrs["State"]
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
                "its files are gone with it: start a new sandbox."
            )

    def _check_running(self) -> None:
        if self._crashed is not None:
            raise SandboxCrashed(self._crashed)
        if self.container is None:
            raise SandboxError("The docker sandbox is not started; call start() first.")

    def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or folder to `dest` (absolute); `dest` names the copy."""
        self._check_running()
        src = Path(src)
        if not src.exists():
            raise SandboxError(f"Expected {src} to exist to copy it in; found nothing there.")
        target = PurePosixPath(dest)
        if not target.is_absolute():
            raise SandboxError(f"Expected an absolute sandbox path to copy to; got {dest!r}.")
        with tempfile.TemporaryFile() as spool:
            with tarfile.open(fileobj=spool, mode="w") as tar:
                tar.add(str(src), arcname=str(target).lstrip("/") or ".", filter=_as_root)
            size = spool.tell()
            spool.seek(0)
            if size <= SHELL_COPY_LIMIT and self.shell is not None and self.shell.alive:
                self._untar_through_shell(spool.read(), src, dest)
            elif not self.container.put_archive("/", spool):
                raise SandboxError(f"Docker refused to copy {src} to {dest}.")

    def _untar_through_shell(self, archive: bytes, src: Path, dest: str) -> None:
        """Small copies ride the attached shell as base64 (a few ms; put_archive costs ~60)."""
        marker = "TERMGYM_COPY_" + secrets.token_hex(8)
        text = base64.encodebytes(archive).decode("ascii")
        command = f"base64 -d <<'{marker}' | tar -x -C /\n{text}{marker}"
        result = self.shell.run(command, timeout=60)  # type: ignore[union-attr]
        if result.exit_code != 0:
            raise SandboxError(
                f"Copying {src} to {dest} through the shell failed (exit {result.exit_code}): "
                f"{result.output.strip()[-500:]}"
            )

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy the sandbox file or folder `src` to the host path `dest` (which names the copy)."""
        import docker.errors

        self._check_running()
        dest = Path(dest)
        try:
            stream, _ = self.container.get_archive(src)
        except docker.errors.NotFound as exc:
            raise SandboxError(f"Expected {src} in the sandbox; found nothing there.") from exc
        with tempfile.TemporaryDirectory(prefix="termgym-out-") as tmp:
            with tempfile.TemporaryFile() as spool:
                for chunk in stream:
                    spool.write(chunk)
                spool.seek(0)
                with tarfile.open(fileobj=spool, mode="r") as tar:
                    tar.extractall(tmp, filter="tar")
            entries = os.listdir(tmp)
            if len(entries) != 1:
                raise SandboxError(f"Expected one entry when copying {src} out; got {entries}.")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.is_dir() and (Path(tmp) / entries[0]).is_dir():
                shutil.copytree(Path(tmp) / entries[0], dest, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.move(str(Path(tmp) / entries[0]), dest)

    def freeze(self) -> None:
        """Kill every agent process (`kill -9 -1` as root); files stay as the agent left them.

        One exec both kills and checks that nothing but init, the main process (nobody) and
        the exec's own session is left; it is retried while a fork bomb holds every pid.
        """
        self._check_running()
        for _ in range(50):
            with contextlib.suppress(Exception):
                done = self.container.exec_run(
                    ["sh", "-c", _FREEZE_SCRIPT], user=AGENT_USER, workdir="/"
                )
                if done.exit_code == 0:
                    break
            time.sleep(0.05)
        else:
            raise SandboxError(f"Could not stop the agent's processes in {self.name}.")
        if self.shell is not None:
            hook, self.shell.kill_hook = self.shell.kill_hook, None
            self.shell.close()
            self.shell.kill_hook = hook

    def exec(
        self,
        argv: Sequence[str],
        timeout: float = 60.0,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run `argv` as root in the container (not in the agent's shell), output merged."""
        self._check_running()
        began = time.monotonic()
        api = self.container.client.api
        full_env = {**DEFAULT_ENV, **self.config.env, **(env or {})}
        exec_id = api.exec_create(
            self.container_id,
            ["timeout", "-k", "2", f"{timeout:g}", *argv],
            workdir=workdir or self.config.workdir,
            environment=full_env,
            user=AGENT_USER,
            stdout=True,
            stderr=True,
        )["Id"]
        collector = _Collector(self.config.output_limit)
        for chunk in api.exec_start(exec_id, stream=True):
            collector.feed(chunk)
            collector.trim()
        code = api.exec_inspect(exec_id).get("ExitCode")
        duration = time.monotonic() - began
        raw, truncated = collector.finish()
        timed_out = code in (124, 137) and duration >= timeout
        return RunResult(
            output=raw.replace(b"\r\n", b"\n").decode("utf-8", "replace"),
            exit_code=None if timed_out else code,
            duration=duration,
            timed_out=timed_out,
            truncated=truncated,
            raw=raw,
        )

    def close(self) -> None:
        """Kill and remove the container (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.shell is not None:
            self.shell.kill_hook = None
            self.shell.close()
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True)


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def collect_garbage(*, everything: bool = False) -> list[str]:
    """Remove leftover sandbox containers; return their names.

    A container is left over when the process that started it (labels `io.termgym.host` and
    `io.termgym.pid`) is gone from this host, or when it is not running. With `everything`,
    every container labelled as a termgym sandbox goes, live episodes included.
    """
    client = docker_client()
    removed = []
    listed = client.containers.list(all=True, filters={"label": SANDBOX_LABEL}, sparse=True)
    for container in listed:
        name = container.attrs["Names"][0].lstrip("/")
        if everything or not _owner_alive(container.attrs):
            with contextlib.suppress(Exception):
                container.remove(force=True)
                removed.append(name)
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
