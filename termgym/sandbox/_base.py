"""The Sandbox protocol every backend implements, the VerifierSandbox protocol a backend
that grades adds (declared in its `Capabilities`), and the values they return."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, ClassVar, Literal, Protocol, runtime_checkable

from termgym._vocabulary import TERMINAL
from termgym.images import BASE_IMAGE
from termgym.sandbox._copylimits import CopyBudget, CopyLimits

Role = Literal["agent", "verifier"]

NO_BYTECODE: Mapping[str, str] = {"PYTHONDONTWRITEBYTECODE": "1"}
"""termgym's own tasks' convention (their shells and verifiers write no bytecode caches;
their base image sets it too). Not a default: an imported task runs in its image's
environment, as under its harness, where Python caches bytecode (a program the tests start
twice compiles its imports once)."""

DOCKER_DEFAULT_CAPS: tuple[str, ...] = (
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
)  # fmt: skip
"""The capabilities Docker gives a container's root by default, which Terminal-Bench and
Harbor run their tasks with (apt-get and pip need several): a task's `limits.capabilities:
default`. On bwrap they hold inside the sandbox's user namespace only."""

VERIFIER_CAPS: tuple[str, ...] = (
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "KILL", "SETGID", "SETUID",
)  # fmt: skip
"""A verifier's root keeps these: to read and tidy the agent's files and to run the agent's
programs as an unprivileged user (and stop them). An agent's sandbox keeps none."""


@dataclass(frozen=True)
class StandbySpec:
    """A program a verifier starts with itself, before anything is imported into it, and
    that waits on its stdin until `StandbyProgram.finish` hands it the rest (how grading
    skips starting the runner's interpreter per grading: docs/security.md, "The standby
    runner").

    Attributes:
        argv: The program, run as the verifier's root from `workdir`, in a session of its own.
        env: Its environment, over the backend's defaults (as an exec's `env`).
        first: Bytes written to its stdin at once (the runner's source).
        workdir: Where it starts.
        ready: The line it prints once it waits: `start()` returns after it (within
            `ready_timeout` seconds), so a pooled verifier is ready when its standby is. A
            standby that never prints it is stopped and not used. Empty: no wait.
        zygote: Where the backend can (bwrap as root), fork the standby from a zygote
            instead of starting it anew (`termgym.sandbox._zygote`): the program is started
            once per process and spec, in a sandbox of its own over the clean image; it
            finds TERMGYM_ZYGOTE in its environment and, on its stdin after `first`, the
            sources of the modules `termgym_kernel` and `termgym_zygote` (each: its length
            in digits and a newline, then the source); once it has loaded what it loads
            before any work exists, it prints `ready` and calls
            `termgym_zygote.serve(child)`, and each verifier's standby is a child that runs
            `child()` in that verifier. Without TERMGYM_ZYGOTE it is the verifier's own
            standby, as with `zygote` False.
    """

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    first: bytes = b""
    workdir: str = "/"
    ready: bytes = b""
    ready_timeout: float = 30.0
    zygote: bool = False


GATEWAY_PORT = 38291
"""Where agents find the model gateway inside their sandbox unless told otherwise."""


@dataclass(frozen=True)
class GatewayMount:
    """How an agent's sandbox reaches termgym's model gateway (`termgym.gateway`), and
    nothing else: the gateway's unix socket on the host, bound into the sandbox, and the
    loopback port inside the sandbox where a relay in front of every agent process termgym
    starts there listens (`termgym.sandbox._gateway`; docs/security.md, "The model gateway").

    Attributes:
        socket: The gateway's unix socket (a host path; the engine must be on this host).
        port: Where in-sandbox agents find it: http://127.0.0.1:<port>.
    """

    socket: str
    port: int = GATEWAY_PORT

    def __post_init__(self) -> None:
        if (
            isinstance(self.port, bool)
            or not isinstance(self.port, int)
            or not 0 < self.port < 65536
        ):
            raise ValueError(
                f"GatewayMount.port: expected a TCP port (1-65535), found {self.port!r}"
            )
        if not isinstance(self.socket, str) or not self.socket.startswith("/"):
            raise ValueError(
                f"GatewayMount.socket: expected the absolute host path of the gateway's unix "
                f"socket, found {self.socket!r}"
            )


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do besides an agent's sandbox, declared on its class
    (`capabilities = Capabilities(...)`) so that grading and the registry read it without
    starting anything (`backend_capabilities(name)`), as Harbor's environments declare theirs.

    An agent's sandbox needs the `Sandbox` protocol only. A backend whose sandboxes grade
    (`verifier=True`) implements `VerifierSandbox` too; the rest say which of its parts hold.

    Attributes:
        verifier: It starts verifiers (`SandboxConfig.role="verifier"`: no shell, a root
            keeping VERIFIER_CAPS) that take the work by `import_archive` and run the graders
            by `exec`. False: its episodes cannot be graded (refused before grading starts).
        standby: Its verifiers start `SandboxConfig.standby` with themselves and hand it over
            by `take_standby()`; False: grading runs the runner by a cold `exec`.
        live: Its agents' sandboxes give `network_handle()`, which a verifier's
            `SandboxConfig.network_of` joins (tasks graded in live state).
        snapshot: Its agents' sandboxes give `snapshot_handle()`, which a verifier's
            `SandboxConfig.snapshot_of` grades (`grading.filesystem: snapshot`).
    """

    verifier: bool = False
    standby: bool = False
    live: bool = False
    snapshot: bool = False

    def __post_init__(self) -> None:
        for name in ("verifier", "standby", "live", "snapshot"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"Capabilities.{name}: expected True or False, found {getattr(self, name)!r}"
                )
        extra = [n for n in ("standby", "live", "snapshot") if getattr(self, n)]
        if extra and not self.verifier:
            raise ValueError(
                f"Capabilities: {', '.join(extra)} are parts of a verifier backend; expected "
                f"verifier=True with them, found verifier=False"
            )


@dataclass(frozen=True)
class FileTree:
    """Files made in memory, for `Sandbox.copy_in(tree, dest)`: {path relative to `dest`:
    (content, mode)}. They arrive below `dest`, root's, with their modes, each folder between
    them and `dest` 0755; `dest` itself is made where it is missing and otherwise keeps its
    mode and owner (a host folder copied in names `dest` and gives it its own)."""

    files: Mapping[str, tuple[bytes, int]]


@dataclass(frozen=True)
class SandboxConfig:
    """What a sandbox is started with.

    Attributes:
        image: Image (docker) or exported root filesystem source (bwrap) to run.
        workdir: Working directory of the agent's shell; created if missing.
        network: Give the sandbox a network. Off unless a task asks for it.
        memory_mb: Memory limit in MiB.
        cpus: CPU limit (fractional cores).
        pids: Maximum number of processes (a fork bomb stops here).
        env: Extra environment variables for the shell.
        output_limit: Bytes of output kept per command; the rest is dropped behind a marker.
        labels: Extra labels (docker) identifying the run and episode.
        rows: Terminal height of the agent's shell (what full-screen programs draw on).
        cols: Terminal width of the agent's shell.
        disk_mb: What the sandbox may write, in MiB (docker: a watchdog stops the container
            past it; bwrap: its writable layer is a filesystem of this size, so ENOSPC).
        runtime: Docker runtime to start the container with (e.g. "runsc" for gVisor);
            None is the engine's default. Other backends refuse any runtime.
        role: "agent" (a shell for the agent, no capabilities) or "verifier" (a clean
            sandbox grading runs in: no shell, the capabilities in VERIFIER_CAPS).
        network_of: Join the network of another sandbox (its `network_handle()`): how a
            live-state verifier reaches the services an agent left running.
        interactive: The agent's shell is a person's terminal (a prompt, echo, readline
            line editing, history, completion), as keys mode and `termgym play` want; False
            is the bare shell command mode runs commands in (no prompt, no echo).
        standby: A verifier's standby program, started by `start()` (backends that are
            `Capabilities.standby`: docker, bwrap, local).
        capabilities: What the agent's root keeps (names without CAP_, e.g.
            DOCKER_DEFAULT_CAPS); none by default. A verifier keeps VERIFIER_CAPS and these.
        snapshot_of: A verifier's: grade this agent sandbox's final filesystem (its
            `snapshot_handle()`), found at SNAPSHOT_PATH in the verifier (termgym.sandbox.
            _snapshot); "" for none.
        gateway: An agent's: reach the model gateway at http://127.0.0.1:<port> (backends
            whose registry entry declares `gateway=True`: docker, bwrap); None: no gateway.
            The network stays as `network` says (off: the gateway is all it reaches).
    """

    image: str = BASE_IMAGE
    workdir: str = "/app"
    network: bool = False
    memory_mb: int = 1024
    cpus: float = 1.0
    pids: int = 256
    env: Mapping[str, str] = field(default_factory=dict)
    output_limit: int = 1_000_000
    labels: Mapping[str, str] = field(default_factory=dict)
    rows: int = TERMINAL.rows
    cols: int = TERMINAL.cols
    disk_mb: int = 1024
    runtime: str | None = None
    role: Role = "agent"
    network_of: str = ""
    interactive: bool = False
    standby: StandbySpec | None = None
    capabilities: tuple[str, ...] = ()
    snapshot_of: str = ""
    gateway: GatewayMount | None = None


@dataclass(frozen=True)
class RunResult:
    """What one command (or one burst of keystrokes) produced.

    Attributes:
        output: Decoded output (UTF-8 with replacement, CRLF folded to LF); never holds the
            completion sentinel.
        exit_code: The command's exit status; None for keystrokes, or when it timed out.
        duration: Wall seconds from sending to completion.
        timed_out: The command overran its timeout and was interrupted.
        truncated: Output passed `output_limit` and was cut behind a visible marker.
        restarted: The shell had to be killed and restarted (state such as cwd is lost).
        raw: The terminal bytes as received (escape sequences kept), for screen emulation
            and asciicast recordings.
        memory_kills: Processes of the sandbox its memory limit killed by the time the
            program ended, where the backend counts them (a verifier's standby forked from
            a zygote, whose exit status the host cannot see); else 0.
    """

    output: str
    exit_code: int | None
    duration: float
    timed_out: bool = False
    truncated: bool = False
    restarted: bool = False
    raw: bytes = b""
    memory_kills: int = 0


class StandbyProgram(Protocol):
    """A started program waiting for its input (`SandboxConfig.standby`)."""

    def alive(self) -> bool:
        """True while it runs and waits."""

    def wait_for(self, line: bytes, *, timeout: float) -> bool:
        """Read its output up to `line` (dropped from it); False if it ended or timed out."""

    def finish(self, data: bytes, *, timeout: float) -> RunResult:
        """Write `data` to its stdin, close it, wait up to `timeout` s for it to end."""

    def kill(self) -> None:
        """Stop it unfinished."""


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place where an agent's commands run through one persistent shell: what
    a backend implements for an agent's sandbox.

    Lifecycle: `start()`, any number of `run()` / `send_keys()` / copies / `exec()`, then
    `freeze()` (every agent process stopped, through the engine or the host, never through a
    program inside) and `export_paths()` of the agent's work, then `close()`. Every call has
    a host-side deadline. Usable as a context manager, which starts and closes it.

    Grading happens in another sandbox, a verifier: what a backend adds for it is
    `VerifierSandbox`, and which of it holds its class declares in `capabilities`.
    """

    backend: str
    capabilities: ClassVar[Capabilities]
    """What the backend does besides an agent's sandbox; `Capabilities()` for nothing."""

    def start(self) -> None:
        """Start the sandbox and its persistent shell."""

    def run(self, command: str, timeout: float = 30.0) -> RunResult:
        """Run one command in the persistent shell and wait for it to complete."""

    def send_keys(self, keys: str | bytes, settle: float = 0.2, timeout: float = 5.0) -> RunResult:
        """Type raw keystrokes (control keys included); return once output goes quiet."""

    def copy_in(self, src: Path | FileTree, dest: str) -> None:
        """Copy a host file or folder into the sandbox at `dest` (an absolute path), which
        names the copy; or the files of a `FileTree`, below `dest`."""

    def copy_out(self, src: str, dest: Path) -> None:
        """Copy a sandbox file or folder at `src` to the host path `dest`."""

    def exec(
        self,
        argv: Sequence[str],
        timeout: float = 60.0,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run a program outside the agent's shell (used for setup and grading)."""

    def freeze(self) -> None:
        """Stop every agent process; the filesystem stays as the agent left it."""

    def export_paths(self, paths: Sequence[str], out: BinaryIO, limits: CopyLimits) -> None:
        """Write a tar of the sandbox `paths` (absolute; missing ones skipped) to `out`.

        Members are named by their sandbox paths, owners are sandbox ids, symlinks are
        stored, never followed. The archive streams (`out` is written as it is read, never
        held whole). Raises ArchiveTooLarge past any of `limits` (bytes, files, depth,
        time): the agent's work was more than its task allows.
        """

    def close(self) -> None:
        """Stop the sandbox and remove everything it made. Safe to call twice."""

    def __enter__(self) -> Sandbox:
        """Start the sandbox; return it."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the sandbox."""


@runtime_checkable
class HoldsStandby(Protocol):
    """A sandbox that hands over the standby program it started with (`take_standby`)."""

    def take_standby(self) -> StandbyProgram | None:
        """The standby started with the sandbox, once: None if none was asked for, it was
        taken already, or it is no longer waiting (a dead standby is never used)."""


@runtime_checkable
class VerifierSandbox(Sandbox, HoldsStandby, Protocol):
    """What a backend adds to `Sandbox` so that its episodes are graded on it, declared by
    `capabilities = Capabilities(verifier=True, ...)` on its class.

    A verifier (`SandboxConfig.role="verifier"`) is a clean sandbox of the task's image with
    no shell: it gets the agent's work by `import_archive()` and runs the graders by `exec()`
    as a root that keeps VERIFIER_CAPS. An agent's sandbox of the backend gives the handles
    a verifier's `SandboxConfig.network_of` and `snapshot_of` name. Which of these hold is
    in `capabilities`: `take_standby()` returns None where `standby` is False,
    `network_handle()` and `snapshot_handle()` raise SandboxError where `live` and
    `snapshot` are.
    """

    def import_archive(self, archive: BinaryIO, budget: CopyBudget | None = None) -> None:
        """Unpack a tar (members named by sandbox paths) at the sandbox's root, streamed;
        with `budget`, ArchiveTooLarge once it takes longer than the budget's time."""

    def network_handle(self) -> str:
        """What a verifier's `SandboxConfig.network_of` names to join this sandbox's network."""

    def snapshot_handle(self) -> str:
        """What a verifier's `SandboxConfig.snapshot_of` names to grade this (frozen)
        sandbox's whole filesystem; raises SandboxError where the backend cannot."""
