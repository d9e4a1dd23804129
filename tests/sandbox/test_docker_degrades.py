"""What the docker backend does where the engine fails for a moment: a pause the kernel's
freezer refuses ("unable to freeze", on a loaded machine) falls back on SIGSTOP of the
container's processes from the host, which holds them as still, and lets them go after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from termgym.sandbox import SandboxConfig, make_sandbox
from termgym.sandbox._docker import _cgroup_procs

pytestmark = pytest.mark.docker


def _states(pids: list[int]) -> set[str]:
    found = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        found.add(stat[stat.rfind(")") + 2])
    return found


def test_the_fallback_of_a_refused_pause_holds_every_process_still_then_lets_go(
    base_image: str,
) -> None:
    with make_sandbox("docker", SandboxConfig(image=base_image)) as sandbox:
        sandbox.run("(while true; do date +%s%N >> /tmp/ticks; sleep 0.01; done) &")
        ticks = Path(f"/proc/{sandbox.init_pid}/root/tmp/ticks")
        deadline = time.monotonic() + 30
        while not ticks.exists():
            assert time.monotonic() < deadline, "the writer never wrote"
            time.sleep(0.05)
        assert sandbox._local(), "the container's processes are not this host's"
        assert sandbox._stop_all()
        pids = _cgroup_procs(sandbox.init_pid)
        assert len(pids) >= 3 and _states(pids) == {"T"}  # every one, the forks too
        before = ticks.stat().st_size
        time.sleep(0.3)
        assert ticks.stat().st_size == before
        sandbox._unpause("stopped", 5.0)
        assert "T" not in _states(_cgroup_procs(sandbox.init_pid))
        time.sleep(0.3)
        assert ticks.stat().st_size > before
