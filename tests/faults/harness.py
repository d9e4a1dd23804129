"""The fault harness: `termgym run` stopped by signals at random points and resumed, the Docker
engine restarted under a run, the run folder's disk full, runs side by side on a fresh cache;
and what each left behind.

What is counted, per backend:

- injected: faults put on a run (a signal that reached it before it ended, an engine
  restart, a full disk, runs started together);
- lost: planned episodes with no graded recording once the run was resumed to its end;
- counted twice: episodes the report counts more than once, or that were never planned;
- leaked: sandboxes of the run (containers with its label or its processes' pids, bwrap
  episode folders with its label or owner) still there after a stopped process exited
  (SIGTERM, SIGHUP, Ctrl-C: none may be left) or after the run's last resume ended (what a
  SIGKILL left is removed by that resume);
- hangs: a stopped process still running `STOP_BOUND` seconds after its signal, or a
  resume still running after `RESUME_BOUND`.

`tests/faults/` runs a few of each in CI; `scripts/fault_suite.py` runs at least fifty per
backend and writes the table of docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TERMGYM = str(Path(sys.executable).parent / "termgym")
TASKS = str(ROOT / "examples" / "tasks")
TASK = "cargo-limit"
STOP_BOUND = 120.0
"""Seconds a process may take to end after SIGTERM, SIGHUP or Ctrl-C (the CLI's own bound is
10 s past the closes; a machine under load makes the closes slow)."""
RESUME_BOUND = 900.0
"""Seconds a resume to the run's end may take."""
GRACEFUL = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


@dataclass
class Tally:
    """Faults injected on one backend and what they left."""

    backend: str
    injected: int = 0
    lost: int = 0
    twice: int = 0
    leaked: int = 0
    hangs: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.injected += other.injected
        self.lost += other.lost
        self.twice += other.twice
        self.leaked += other.leaked
        self.hangs += other.hangs
        self.by_kind.update(other.by_kind)
        self.notes.extend(other.notes)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.twice or self.leaked or self.hangs)


@dataclass(frozen=True)
class RunSpec:
    """One run folder of `termgym run --agent oracle` over cargo-limit."""

    out: Path
    backend: str
    variants: tuple[str, ...] = ("original", "contradicted")
    episodes: int = 3
    concurrency: int = 2
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment of the run's processes (DOCKER_HOST, TERMGYM_CACHE)."""

    @property
    def run_id(self) -> str:
        return self.out.name

    def argv(self) -> list[str]:
        return [
            TERMGYM, "run", "--agent", "oracle", "--path", TASKS, "--tasks", TASK,
            "--variants", ",".join(self.variants), "--episodes", str(self.episodes),
            "--concurrency", str(self.concurrency), "--backend", self.backend,
            "--out", str(self.out), "--no-report",
        ]  # fmt: skip

    def environ(self) -> dict[str, str]:
        return {**os.environ, **dict(self.env)}

    def planned(self) -> set[str]:
        return {
            f"{TASK}--{variant}--{index:03d}"
            for variant in self.variants
            for index in range(self.episodes)
        }


def _as_in_a_terminal() -> None:
    """In the child: SIGINT, SIGTERM and SIGHUP at their defaults, as a shell in a terminal
    starts a program (the harness may run under nohup, or in the background)."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def start(spec: RunSpec, log: Path) -> subprocess.Popen[bytes]:
    """The run as a child process, as a terminal's shell starts it."""
    with log.open("ab") as handle:
        return subprocess.Popen(
            spec.argv(), cwd=ROOT, env=spec.environ(), stdout=handle, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, preexec_fn=_as_in_a_terminal,
        )  # fmt: skip


def leftovers(spec: RunSpec, pids: set[int] | None = None) -> list[str]:
    """The sandboxes still there that the processes `pids` started (any run's), or, with no
    pids, that any process of the run started."""
    found = [f"container {name}" for name in _containers(spec, pids)]
    found += [f"bwrap episode {name}" for name in _episode_folders(spec, pids)]
    return found


def _containers(spec: RunSpec, pids: set[int] | None) -> list[str]:
    if spec.backend != "docker":
        return []
    import docker

    client = docker.DockerClient(base_url=dict(spec.env).get("DOCKER_HOST") or _local_engine())
    try:
        names = set()
        labels = (
            [f"io.termgym.pid={p}" for p in pids] if pids else [f"io.termgym.run={spec.run_id}"]
        )
        for label in labels:
            for found in client.containers.list(all=True, filters={"label": label}, sparse=True):
                labels = found.attrs.get("Labels") or {}
                names.add(
                    f"{found.attrs['Names'][0].lstrip('/')} ({found.attrs.get('State')}, "
                    f"{labels.get('io.termgym.role')} of pid {labels.get('io.termgym.pid')})"
                )
        return sorted(names)
    finally:
        client.close()


def _local_engine() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _episode_folders(spec: RunSpec, pids: set[int] | None) -> list[str]:
    cache = dict(spec.env).get("TERMGYM_CACHE") or os.environ.get("TERMGYM_CACHE")
    folder = Path(cache) / "episodes" if cache else Path("/var/cache/termgym/episodes")
    if os.geteuid() != 0 and not cache:
        folder = Path.home() / ".cache" / "termgym" / "episodes"
    found = []
    with contextlib.suppress(OSError):
        for home in folder.iterdir():
            labels, owner = {}, 0
            with contextlib.suppress(OSError, ValueError):
                labels = json.loads((home / "labels.json").read_text())
            with contextlib.suppress(OSError, ValueError):
                owner = int((home / "owner.pid").read_text())
            if (owner in pids) if pids else labels.get("io.termgym.run") == spec.run_id:
                found.append(home.name)
    return found


def remove_leftovers(spec: RunSpec) -> None:
    """What a counted leak left, removed so the next fault starts clean (`termgym gc`)."""
    subprocess.run(
        [TERMGYM, "gc", "--run", spec.run_id], env=spec.environ(), capture_output=True,
        timeout=300, check=False,
    )  # fmt: skip


def count_leftovers(tally: Tally, spec: RunSpec, pids: set[int] | None, what: str) -> None:
    """Count what the run left (`leftovers`) into `tally` as leaked, note it as left by
    `what`, and remove it so that the next fault starts clean."""
    left = leftovers(spec, pids)
    tally.leaked += len(left)
    if left:
        tally.notes.append(f"{spec.run_id}: {what} {left}")
        remove_leftovers(spec)


def counted(spec: RunSpec) -> tuple[set[str], int]:
    """(episodes with a graded recording, episodes the report counts twice or never planned)."""
    from termgym.report import load_run
    from termgym.run import finished_episodes

    done = finished_episodes(spec.out)
    ids = Counter(s.episode_id for s in load_run(spec.out, resamples=0).summaries)
    planned = spec.planned()
    twice = sum(n - 1 for n in ids.values() if n > 1) + len(set(ids) - planned)
    return done, twice


def stop_at(proc: subprocess.Popen[bytes], signum: int, delay: float) -> str:
    """Send `signum` `delay` seconds after the start; "missed" if the run ended first, "hang"
    if it did not end within STOP_BOUND, else "stopped"."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return "missed"
        time.sleep(0.02)
    if proc.poll() is not None:
        return "missed"
    proc.send_signal(signum)
    try:
        proc.wait(timeout=STOP_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "hang"
    if proc.returncode == 0:
        return "missed"  # it had done its work: the signal came as it exited
    return "stopped"


def finish(spec: RunSpec, log: Path, tally: Tally) -> None:
    """Resume the run to its end (again after a run that ended with infrastructure errors),
    then count what was lost, doubled and left."""
    for _ in range(3):
        proc = start(spec, log)
        try:
            code = proc.wait(timeout=RESUME_BOUND)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            tally.hangs += 1
            tally.notes.append(f"{spec.run_id}: a resume ran past {RESUME_BOUND:g} s")
            continue
        if code == 0:
            break
        tally.notes.append(f"{spec.run_id}: a resume exited {code} (resumed again)")
    done, twice = counted(spec)
    lost = spec.planned() - done
    tally.lost += len(lost)
    tally.twice += twice
    if lost:
        tally.notes.append(f"{spec.run_id}: lost {sorted(lost)}")
    count_leftovers(tally, spec, None, "left after its end:")


def signal_faults(
    spec: RunSpec, signals: list[int], rng: random.Random, span: float, log: Path
) -> Tally:
    """Start the run and send each of `signals` in turn at a random point of `span` seconds
    from its start (each to a new process resuming the run), then resume it to its end."""
    tally = Tally(spec.backend)
    for signum in signals:
        proc = start(spec, log)
        how = stop_at(proc, signum, rng.uniform(0.2, span))
        name = signal.Signals(signum).name
        if how == "missed":
            break  # the run reached its end first: nothing left to stop
        tally.injected += 1
        tally.by_kind[name] += 1
        if how == "hang":
            tally.hangs += 1
            tally.notes.append(f"{spec.run_id}: {name} did not stop the run in {STOP_BOUND:g} s")
        if signum in GRACEFUL:
            if proc.returncode not in (128 + signum, -signum):
                tally.notes.append(f"{spec.run_id}: {name} gave exit {proc.returncode}")
            count_leftovers(tally, spec, {proc.pid}, f"{name} left")
    finish(spec, log, tally)
    return tally


def full_run_seconds(spec: RunSpec, log: Path) -> float:
    """How long the run takes to its end undisturbed (the span of the random points)."""
    began = time.monotonic()
    proc = start(spec, log)
    proc.wait(timeout=RESUME_BOUND)
    return time.monotonic() - began


# ---- the run folder's disk full ---------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `folder` (root only), unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def grow(folder: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True,
                   capture_output=True)  # fmt: skip


def disk_full_fault(spec: RunSpec, disk: Path, log: Path) -> Tally:
    """The run folder on a disk too small for it: the run must stop with an error that says
    so, leave no sandbox, and resume to its end once the disk has room."""
    tally = Tally(spec.backend)
    proc = start(spec, log)
    try:
        code = proc.wait(timeout=RESUME_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        tally.hangs += 1
        code = None
    tally.injected += 1
    tally.by_kind["disk full"] += 1
    said = log.read_text(errors="replace")
    if code == 0 or "no space left" not in said.lower():
        tally.notes.append(f"{spec.run_id}: a full disk ended the run with {code}, unsaid")
    count_leftovers(tally, spec, {proc.pid}, "the full disk left")
    grow(disk, "64m")
    finish(spec, log, tally)
    return tally


# ---- runs side by side on a fresh cache ---------------------------------------------------------


def together_fault(specs: list[RunSpec], cache: Path, tests: list[str], log: Path) -> Tally:
    """Runs and a test session started at the same moment on the empty cache `cache`: each
    must succeed, and nothing be lost, doubled or left."""
    tally = Tally(specs[0].backend)
    procs = [start(spec, log) for spec in specs]
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=ROOT, env={**os.environ, "TERMGYM_CACHE": str(cache)},
        stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    tally.injected += 1
    tally.by_kind["together"] += 1
    for proc in [*procs, session]:
        try:
            code = proc.wait(timeout=RESUME_BOUND)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            tally.hangs += 1
            continue
        if code != 0:
            tally.notes.append(f"side by side: {' '.join(map(str, proc.args[:3]))} exited {code}")
    for spec in specs:
        finish(spec, log, tally)
    return tally


# ---- the Docker engine restarted ---------------------------------------------------------------


class OwnEngine:
    """A Docker engine of the harness's own (its data, exec root, socket and pid file, no
    bridge of the default network, no iptables rules), so that restarting it touches no
    other work on the machine. The base image is copied into it from the host's engine."""

    def __init__(self, home: Path, *, cgroup: str = "termgym-faults", bridge: str = "") -> None:
        self.home = home
        self.socket = home / "docker.sock"
        self.address = f"unix://{self.socket}"
        self.cgroup = cgroup
        self.bridge = bridge
        """A bridge interface made beforehand (`scripts/fresh_cache_proof.py` gives its
        builds a network through one); "" for none: the engine's containers, and the
        builds' steps, have no network."""
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        config = self.home / "daemon.json"
        config.write_text("{}\n")
        return [
            "dockerd", "--config-file", str(config), "--data-root", str(self.home / "data"),
            "--exec-root", str(self.home / "exec"), "--pidfile", str(self.home / "docker.pid"),
            "-H", self.address, f"--bridge={self.bridge or 'none'}", "--iptables=false",
            "--ip-masq=false", "--ip-forward=false", "--cgroup-parent", self.cgroup,
        ]  # fmt: skip

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        with (self.home / "dockerd.log").open("ab") as handle:
            self.proc = subprocess.Popen(
                self.argv(), stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            done = subprocess.run(
                ["docker", "-H", self.address, "info"], capture_output=True, timeout=30
            )
            if done.returncode == 0 and self.proc.poll() is None:
                return  # this dockerd answers (not one left by an earlier harness)
            time.sleep(0.5)
        raise RuntimeError(
            f"the harness's dockerd did not start (exit {self.proc.poll()}): see "
            f"{self.home}/dockerd.log"
        )

    def stop(self, *, crash: bool = False) -> None:
        """Stop the engine: SIGTERM (its shutdown stops the containers), or with `crash`
        SIGKILL, as a crash does; a shutdown that hangs past 30 s is killed."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGKILL if crash else signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if crash or self.proc.returncode == -signal.SIGKILL:
            self._kill_own("containerd")  # a killed dockerd can leave its containerd
            self._forget_dead_containerd()

    def _forget_dead_containerd(self) -> None:
        """Its containerd's pid file, once that process is dead: a new dockerd takes a
        zombie (one init has not reaped yet) for a containerd still running, and waits on
        it until it gives up."""
        pidfile = self.home / "exec" / "containerd" / "containerd.pid"
        with contextlib.suppress(OSError, ValueError):
            pid = int(pidfile.read_text())
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    break
                if stat[stat.rfind(")") + 2] in "ZX":
                    break
                if str(self.home).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)  # this engine's containerd, still up
                time.sleep(0.1)
            pidfile.unlink()

    def restart(self, *, crash: bool = False) -> None:
        self.stop(crash=crash)
        self.start()

    def _kill_own(self, program: str) -> None:
        """SIGKILL the processes of `program` whose command line names this engine's folders
        (its containerd, its shims), never another engine's, and wait until they are gone
        (a new dockerd takes a containerd still in the process table for a live one)."""
        killed = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if os.path.basename(argv[0]) == program.encode() and str(
                    self.home
                ).encode() in b" ".join(argv):
                    os.kill(int(proc.name), signal.SIGKILL)
                    killed.append(proc)
        deadline = time.monotonic() + 60
        while any(p.exists() for p in killed) and time.monotonic() < deadline:
            time.sleep(0.1)

    def load_image(self, image: str) -> None:
        """Copy `image` from the host's engine into this one."""
        save = subprocess.Popen(
            ["docker", "save", image],
            stdout=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if k != "DOCKER_HOST"},
        )
        subprocess.run(["docker", "-H", self.address, "load", "-q"], stdin=save.stdout,
                       check=True, capture_output=True, timeout=900)  # fmt: skip
        save.wait(timeout=60)

    def remove(self) -> None:
        """Stop it and delete everything it kept."""
        with contextlib.suppress(Exception):
            if self.proc is not None and self.proc.poll() is None:
                subprocess.run(
                    ["docker", "-H", self.address, "rm", "-f",
                     *subprocess.run(["docker", "-H", self.address, "ps", "-aq"],
                                     capture_output=True, text=True).stdout.split()],
                    capture_output=True, timeout=120,
                )  # fmt: skip
        self.stop()
        for procs in Path("/sys/fs/cgroup").glob(f"*/{self.cgroup}/**/cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):  # containers it lost track of
                for pid in procs.read_text().split():
                    os.kill(int(pid), signal.SIGKILL)
        self._kill_own("containerd")
        self._kill_own("containerd-shim-runc-v2")
        from termgym.isolation import unmount_below

        unmount_below(str(self.home))
        shutil.rmtree(self.home, ignore_errors=True)
        for folder in Path("/sys/fs/cgroup").glob(f"*/{self.cgroup}"):
            for below in sorted(folder.rglob("*/"), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    below.rmdir()
            with contextlib.suppress(OSError):
                folder.rmdir()


def engine_restart_fault(
    spec: RunSpec, engine: OwnEngine, rng: random.Random, span: float, log: Path
) -> Tally:
    """Restart the engine at a random point of the run; the run (or its resume) must end
    with every episode once and no container left in the engine."""
    tally = Tally(spec.backend)
    proc = start(spec, log)
    delay = rng.uniform(0.5, span)
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if proc.poll() is None:
        crash = rng.random() < 0.5
        engine.restart(crash=crash)
        tally.injected += 1
        tally.by_kind["engine crash and restart" if crash else "engine restart"] += 1
    try:
        proc.wait(timeout=RESUME_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        tally.hangs += 1
        tally.notes.append(f"{spec.run_id}: the run hung after the engine restarted")
    # containers the restart stopped are removed by the run's background removals, which
    # end with its process: what is left now is left
    count_leftovers(tally, spec, {proc.pid}, "the engine restart left")
    finish(spec, log, tally)
    return tally
