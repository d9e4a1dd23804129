"""The fault suite's fast part: `termgym run` stopped by SIGTERM, SIGHUP, Ctrl-C and SIGKILL at
random points and resumed, `termgym check` stopped by SIGTERM, and a run whose folder's disk
fills up. Nothing lost, nothing counted twice, no sandbox left, no hang (tests/faults/
harness.py says what each counts; scripts/fault_suite.py runs fifty and more per backend).

The random points are drawn from a seed printed with any failure (TERMGYM_FAULT_SEED sets it).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.faults.harness import (
    STOP_BOUND,
    TASKS,
    TERMGYM,
    RunSpec,
    Tally,
    disk_full_fault,
    full_run_seconds,
    leftovers,
    signal_faults,
    small_disk,
)

SEED = int(os.environ.get("TERMGYM_FAULT_SEED") or time.time_ns() % 1_000_000)
SIGNALS = {
    "bwrap": [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP, signal.SIGINT],
    "docker": [signal.SIGTERM, signal.SIGKILL],
}


def _clean(tally: Tally) -> None:
    assert tally.injected >= 1, f"no fault reached the run (seed {SEED})"
    assert tally.clean and not tally.notes, f"seed {SEED}: {tally}"


def test_a_run_stopped_at_random_points_resumes_whole_and_leaves_nothing(
    backend: str, tmp_path: Path, run_id: str
) -> None:
    rng, tally = random.Random(SEED), Tally(backend)
    log = tmp_path / "log"
    # The random points fall inside the time an undisturbed run of the same size takes here
    # and now (a fixed span is past a fast run's end on an idle machine, before it on a
    # loaded one), interpreter start included.
    timing = RunSpec(tmp_path / f"{run_id}-timing", backend, episodes=3, concurrency=1)
    span = max(0.4, 0.9 * full_run_seconds(timing, log))
    for attempt in range(4):  # a point past a fast run's end reaches nothing: another run
        spec = RunSpec(tmp_path / f"{run_id}-{attempt}", backend, episodes=3, concurrency=1)
        tally.add(signal_faults(spec, SIGNALS[backend], rng, span, log))
        if tally.injected >= 2:
            break
    _clean(tally)


@pytest.mark.docker
def test_sigterm_stops_check_and_removes_its_verifiers(base_image: str, tmp_path: Path) -> None:
    import docker

    client = docker.from_env()
    proc = subprocess.Popen(
        [TERMGYM, "check", "cargo-limit", "--path", TASKS, "--backend", "docker"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    label = {"label": f"io.termgym.pid={proc.pid}"}
    deadline = time.monotonic() + 300
    while not client.containers.list(filters=label, sparse=True) and proc.poll() is None:
        assert time.monotonic() < deadline, "check started no container"
        time.sleep(0.1)
    time.sleep(random.Random(SEED).uniform(0.0, 2.0))  # its checks under way
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=STOP_BOUND)
    said = out.decode(errors="replace")
    assert proc.returncode == 128 + signal.SIGTERM, said[-2000:]
    assert "stopped by SIGTERM" in said and "docker disk limits" not in said
    assert client.containers.list(all=True, filters=label, sparse=True) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small disk needs root")
@pytest.mark.bwrap
def test_a_full_run_folder_stops_the_run_with_what_to_do_then_it_resumes(
    base_rootfs: str, tmp_path: Path, run_id: str
) -> None:
    with small_disk(tmp_path / "disk", "24k") as disk:
        spec = RunSpec(disk / run_id, "bwrap", episodes=4)
        _clean(disk_full_fault(spec, disk, tmp_path / "log"))
    assert leftovers(spec) == []


@pytest.mark.bwrap
def test_a_run_whose_agent_waits_on_a_silent_model_stops_without_waiting_for_it(
    base_rootfs: str, tmp_path: Path, run_id: str
) -> None:
    """The agent's thread waits on a model that never answers (its request's timeout is 10
    minutes): SIGTERM ends the run all the same, its sandboxes removed, within the command
    line's grace of 10 s (the busy thread is left behind, its work gone with its sandbox)."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    try:
        spec = RunSpec(tmp_path / run_id, "bwrap", variants=("original",), episodes=1)
        argv = spec.argv()
        argv[argv.index("oracle")] = "llm"
        argv += ["--agent-opt", "model=silent", "--agent-opt",
                 f"base_url=http://127.0.0.1:{silent.getsockname()[1]}/v1",
                 "--agent-opt", "timeout=600", "--agent-opt", "max_retries=0"]  # fmt: skip
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        silent.settimeout(300)
        held, _ = silent.accept()  # the agent's request, held open: its sandbox is up
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=STOP_BOUND)
        held.close()
    finally:
        silent.close()
    assert proc.returncode == 128 + signal.SIGTERM, out.decode(errors="replace")[-2000:]
    assert time.monotonic() - began < 45  # the runner waits 5 s for its threads, the exit 10
    assert leftovers(spec, {proc.pid}) == []


@pytest.mark.bwrap
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_demo_stopped_says_so_and_nothing_else(
    base_rootfs: str, tmp_path: Path, signum: signal.Signals
) -> None:
    """Stopping printed warnings of the stop's own making (a pre-start, a zygote refused)."""
    proc = subprocess.Popen(
        [TERMGYM, "demo", "--backend", "bwrap", "--out", str(tmp_path / "demo")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(random.Random(SEED).uniform(3.0, 6.0))  # its first episodes under way
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=STOP_BOUND)
    said = out.decode(errors="replace")
    assert proc.returncode == 128 + signum, said[-2000:]
    what = "Ctrl-C" if signum == signal.SIGINT else signum.name
    assert f"termgym demo: stopped by {what}" in said
    assert "could not" not in said and "Traceback" not in said, said[-2000:]
    assert leftovers(RunSpec(tmp_path / "x", "bwrap"), {proc.pid}) == []


@pytest.mark.bwrap
def test_ctrl_c_as_the_command_line_starts_says_so_too(
    base_rootfs: str, tmp_path: Path, run_id: str
) -> None:
    """A Ctrl-C while the command line was still read (its module imported, its options
    parsed) ended with click's "Aborted!" and exit 1, which says nothing of a signal."""
    rng = random.Random(SEED)
    spec = RunSpec(tmp_path / run_id, "bwrap", variants=("original",), episodes=1)
    for _ in range(5):
        proc = subprocess.Popen(
            spec.argv(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=STOP_BOUND)
        said = out.decode(errors="replace")
        # before Python runs termgym it is the interpreter's own doing (a death by SIGINT,
        # or "Fatal Python error" in its start); from termgym's import on, 130 and a line
        interpreters = proc.returncode == -signal.SIGINT or "Fatal Python error" in said
        assert interpreters or proc.returncode in (130, 0), said[-1500:]
        assert "Aborted!" not in said
