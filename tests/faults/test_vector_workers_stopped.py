"""A trainer's AsyncVectorEnv stopped by a signal, to the trainer or to one of the workers, or
killed: every sandbox the workers started is removed (a worker ends as Ctrl-C ends it, and
one whose parent is gone ends at its next message), and nothing hangs."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.faults.harness import ROOT, STOP_BOUND, RunSpec, leftovers

pytestmark = pytest.mark.bwrap

TRAINER = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from gymnasium.vector import AsyncVectorEnv
    import termgym

    def make():
        return termgym.make(sys.argv[1], backend="bwrap", run_id=sys.argv[2], pool_size=1,
                            shadow=False)

    vec = AsyncVectorEnv([make] * 2, shared_memory=False)
    vec.reset(seed=0)
    vec.step(np.array(["cat policy.txt"] * 2, dtype=object))
    print("READY", " ".join(str(p.pid) for p in vec.processes), flush=True)
    while True:
        vec.step(np.array(["cat policy.txt"] * 2, dtype=object))
        time.sleep(0.05)
    """
)


def _trainer(run_id: str) -> tuple[subprocess.Popen[str], list[int]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", TRAINER, str(ROOT / "examples" / "tasks" / "cargo-limit"), run_id],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY"):
            return proc, [int(p) for p in line.split()[1:]]
    raise AssertionError(f"the trainer did not start: exit {proc.wait()}")


def _no_leftovers(run_id: str, pids: list[int]) -> None:
    spec = RunSpec(Path(run_id), "bwrap")
    deadline = time.monotonic() + STOP_BOUND
    while leftovers(spec) and time.monotonic() < deadline:  # workers end on their own
        time.sleep(0.2)
    assert leftovers(spec) == []
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


@pytest.mark.parametrize(
    "ending", ["sigterm-trainer", "sigkill-trainer", "sigterm-worker", "sighup-all"]
)
def test_vector_workers_leave_no_sandbox_however_the_trainer_is_stopped(
    base_rootfs: str, run_id: str, ending: str
) -> None:
    proc, workers = _trainer(run_id)
    try:
        if ending == "sigterm-trainer":
            proc.send_signal(signal.SIGTERM)
        elif ending == "sigkill-trainer":
            proc.kill()
        elif ending == "sigterm-worker":  # a process manager stops one worker
            subprocess.run(["kill", "-TERM", str(workers[0])], check=True)
            time.sleep(1.0)
            proc.send_signal(signal.SIGTERM)  # the trainer sees its worker gone; then stops
        else:  # the terminal closed: the whole process group hears it
            for pid in (proc.pid, *workers):
                subprocess.run(["kill", "-HUP", str(pid)], check=False)
        proc.wait(timeout=STOP_BOUND)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _no_leftovers(run_id, workers)
