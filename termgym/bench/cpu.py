"""CPU of a benchmark run, counted by a cgroup of its own: every process the run starts after
it joins (forked workers, sandboxes, zygotes, Ray's daemons), killed ones included.

cgroup v1 (a `cpuacct` hierarchy of its own, as here): the run's group counts everything
below it, since termgym's sandboxes join only the pids, memory and cpu hierarchies. cgroup
v2: the run's group, plus what termgym's sandbox groups used meanwhile (they live under
/sys/fs/cgroup/termgym, so whatever other termgym sandboxes on the machine used is counted
too: the figure is an upper bound there). Docker's containers are the engine's children:
not counted either way.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from types import TracebackType

ROOT = Path("/sys/fs/cgroup")


class CpuMeter:
    """A cgroup this process joins (`with CpuMeter() as meter: ... meter.seconds()`)."""

    def __init__(self) -> None:
        self.kind = ""
        self.dir: Path | None = None
        self._home: Path | None = None
        self._sandboxes = ROOT / "termgym" / "cpu.stat"

    def __enter__(self) -> CpuMeter:
        name = f"termgym-bench-{os.getpid()}-{secrets.token_hex(3)}"
        for kind, parent in (("v1", ROOT / "cpuacct"), ("v2", ROOT)):
            if kind == "v2" and not (ROOT / "cgroup.controllers").exists():
                continue
            if not parent.is_dir() or not os.access(parent, os.W_OK):
                continue
            try:
                folder = parent / name
                folder.mkdir()
                (folder / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                continue
            self.kind, self.dir, self._home = kind, folder, parent
            break
        self._start = self._read()
        return self

    @property
    def counts(self) -> str:
        """How the run is counted ("" when no cgroup could be made here: nothing is)."""
        if self.kind == "v1":
            return "a cpuacct cgroup of the run"
        if self.kind == "v2":
            return "a cgroup of the run, and termgym's sandbox cgroups meanwhile (an upper bound)"
        return ""

    def _read(self) -> float:
        if self.dir is None:
            return 0.0
        if self.kind == "v1":
            return int((self.dir / "cpuacct.usage").read_text()) / 1e9
        used = _usage_usec(self.dir / "cpu.stat")
        if self._sandboxes.exists():
            used += _usage_usec(self._sandboxes)
        return used / 1e6

    def seconds(self) -> float:
        """CPU seconds the run's processes used since the meter started."""
        return self._read() - self._start

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.dir is None or self._home is None:
            return
        try:
            (self._home / "cgroup.procs").write_text(str(os.getpid()))
            self.dir.rmdir()  # fails while a process of the run still lives: left to gc
        except OSError:
            pass


def _usage_usec(stat: Path) -> int:
    for line in stat.read_text().splitlines():
        if line.startswith("usage_usec "):
            return int(line.split()[1])
    return 0
