"""Host cgroups for the bwrap backend: pids, memory and CPU limits (v1 or v2), best effort."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_V1 = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes",), "cpu": ("cpu.cfs_quota_us",)}


class Cgroup:
    """One sandbox's cgroup(s); `applied` says which limits really hold here.

    With cgroup v1 a folder `termgym/<name>` is made under each of the pids, memory and cpu
    hierarchies; with v2 one folder `termgym/<name>`. Without write access (not root, no
    delegation) nothing is applied and `applied` is empty.
    """

    def __init__(self, name: str, *, pids: int, memory_mb: int, cpus: float) -> None:
        self.name = name
        self.dirs: list[Path] = []
        self.applied: list[str] = []
        try:
            if (CGROUP_ROOT / "cgroup.controllers").exists():
                self._make_v2(pids, memory_mb, cpus)
            else:
                self._make_v1(pids, memory_mb, cpus)
        except OSError:
            self.remove()
            self.dirs, self.applied = [], []

    def _make_v1(self, pids: int, memory_mb: int, cpus: float) -> None:
        values = {
            "pids": {"pids.max": str(pids)},
            "memory": {"memory.limit_in_bytes": str(memory_mb << 20)},
            "cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": str(int(cpus * 100000))},
        }
        for controller, files in values.items():
            base = CGROUP_ROOT / controller
            if not base.is_dir() or not os.access(base, os.W_OK):
                continue
            folder = base / "termgym" / self.name
            folder.mkdir(parents=True, exist_ok=True)
            self.dirs.append(folder)
            for file, value in files.items():
                (folder / file).write_text(value)
            self.applied.append(controller)

    def _make_v2(self, pids: int, memory_mb: int, cpus: float) -> None:
        parent = CGROUP_ROOT / "termgym"
        parent.mkdir(exist_ok=True)
        available = (CGROUP_ROOT / "cgroup.subtree_control").read_text().split()
        wanted = [c for c in ("pids", "memory", "cpu") if c in available]
        (parent / "cgroup.subtree_control").write_text(" ".join("+" + c for c in wanted))
        folder = parent / self.name
        folder.mkdir(exist_ok=True)
        self.dirs.append(folder)
        values = {
            "pids": ("pids.max", str(pids)),
            "memory": ("memory.max", str(memory_mb << 20)),
            "cpu": ("cpu.max", f"{int(cpus * 100000)} 100000"),
        }
        for controller in wanted:
            file, value = values[controller]
            (folder / file).write_text(value)
            self.applied.append(controller)

    def procs_files(self) -> tuple[str, ...]:
        """The `cgroup.procs` file of each folder: a process writes its pid there to join
        (`termgym.sandbox._spawn.Launch.cgroups`)."""
        return tuple(str(folder / "cgroup.procs") for folder in self.dirs)

    def memory_kills(self) -> int:
        """How many of its processes its memory limit killed so far (the memory controller's
        oom_kill count; 0 where it keeps none or no memory cgroup is applied)."""
        for folder in self.dirs:
            for name in ("memory.oom_control", "memory.events"):  # v1, v2
                with contextlib.suppress(OSError, ValueError):
                    for line in (folder / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
        return 0

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.dirs:
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
        return found

    def kill_all(self, patience: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until none is left; False if some survive."""
        deadline = time.monotonic() + patience
        pause = 0.0005  # a killed process is gone within a millisecond or two: look again soon
        while True:
            members = self.pids()
            if not members:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def remove(self) -> None:
        """Kill what is left and delete the folders (idempotent)."""
        if self.dirs:
            self.kill_all()
        for folder in self.dirs:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
        self.dirs = []


def remove_stale_cgroups(live: set[str]) -> None:
    """Delete empty termgym cgroups whose sandbox name is not in `live`."""
    parents = [CGROUP_ROOT / "termgym"] + [CGROUP_ROOT / c / "termgym" for c in _V1]
    for parent in parents:
        if not parent.is_dir():
            continue
        for folder in parent.iterdir():
            if folder.is_dir() and folder.name not in live:
                with contextlib.suppress(OSError):
                    folder.rmdir()
