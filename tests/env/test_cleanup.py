"""No container outlives an env: after close, an exception, Ctrl-C or SIGTERM; recordings
survive a kill -9 of the process writing them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import termgym
from termgym.images._engine import docker_client
from termgym.recording import read_episode

# Closing a pool stops its containers one after another, which a machine busy with other
# work can make take minutes: the waits below allow for that, and the test for them.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]
CLEAN_UP = 600
"""Seconds a child may take to clean up after its ending (its hang guard fires after)."""
ROOT = Path(__file__).resolve().parents[2]


def containers_of(run_id: str) -> list:
    # sparse: one list call; a full list inspects each container after listing, which fails
    # with NotFound when the pool removes one in between (a recycled standby)
    return docker_client().containers.list(
        all=True, filters={"label": f"io.termgym.run={run_id}"}, sparse=True
    )


def _script(run_id: str, ending: str, record_dir: str = "") -> str:
    return textwrap.dedent(
        f"""
        import faulthandler, os, select, signal, sys, time
        # a hang says where, on stderr: late by itself, at once on SIGUSR1 (see _Child.end)
        faulthandler.dump_traceback_later({CLEAN_UP + 120}, exit=True)
        faulthandler.register(signal.SIGUSR1, all_threads=True)

        def await_signal():
            # the kernel may hand a signal to any thread, and a sleeping main thread would
            # sleep on (Python runs handlers in it): a signal to any thread wakes this one
            r, w = os.pipe()
            os.set_blocking(w, False)
            signal.set_wakeup_fd(w)
            while True:
                select.select([r], [], [])
                os.read(r, 512)

        import termgym
        env = termgym.make("text-report", run_id={run_id!r}, pool_size=2,
                           record_dir={record_dir!r} or None)
        env.reset(seed=0)
        env.step("echo first")
        env.step("echo second")
        print("READY", flush=True)
        {ending}
        """
    )


def _default_sigint() -> None:
    """In the child: Ctrl-C as in a terminal, even when this suite runs with SIGINT ignored
    (started in the background by a script), which Python would otherwise keep ignoring."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Child:
    """A Python process that makes an env, steps it twice, says READY, then ends as told.

    Its stderr goes to the file `log`, which a chatty clean-up can never fill as it would a
    pipe."""

    def __init__(self, run_id: str, ending: str, log: Path, record_dir: str = "") -> None:
        self.log = log
        with log.open("w") as stderr:  # the child keeps its own copy open
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _script(run_id, ending, record_dir)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                preexec_fn=_default_sigint,
            )

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.strip() == "READY", self.stderr()

    def end(self, timeout: float = CLEAN_UP) -> int:
        """Its exit status; if it has none after `timeout`, fail with where each thread is."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)  # the dump is written meanwhile
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the child had not ended {timeout:g} s on:\n{self.stderr()}")


def test_close_leaves_no_container(base_image: str, run_id: str) -> None:
    env = termgym.make("text-report", run_id=run_id, pool_size=2)
    env.reset(seed=0)
    env.step("true")
    assert containers_of(run_id)
    env.close()
    from termgym.env._pool import close_all_pools

    close_all_pools()
    assert containers_of(run_id) == []


@pytest.mark.parametrize(
    "ending",
    ["raise RuntimeError('agent crashed')", "os.kill(os.getpid(), signal.SIGINT); await_signal()"],
    ids=["exception", "ctrl-c"],
)
def test_process_ending_badly_leaves_no_container(base_image, run_id, ending, tmp_path) -> None:
    child = _Child(run_id, ending, tmp_path / "stderr")
    child.ready()
    assert child.end() != 0
    assert containers_of(run_id) == []


def test_sigterm_leaves_no_container(base_image: str, run_id: str, tmp_path: Path) -> None:
    child = _Child(run_id, "await_signal()", tmp_path / "stderr")
    child.ready()
    assert containers_of(run_id)
    child.proc.send_signal(signal.SIGTERM)
    assert child.end() == 128 + signal.SIGTERM, child.stderr()
    assert containers_of(run_id) == []


def test_recording_survives_kill_9_mid_episode(tmp_path, base_image, run_id) -> None:
    child = _Child(run_id, "await_signal()", tmp_path / "stderr", record_dir=str(tmp_path))
    child.ready()
    os.kill(child.proc.pid, signal.SIGKILL)
    child.end(timeout=30)
    [path] = list((tmp_path / "episodes").glob("*.jsonl"))
    log = read_episode(path)
    assert [s.action for s in log.steps] == ["echo first", "echo second"]
    assert log.steps[1].output == "second\n"
    assert log.end is None
    # what kill -9 leaves behind is labelled, so `termgym gc` can find and remove it
    from termgym.sandbox import collect_garbage

    deadline = time.monotonic() + CLEAN_UP
    while containers_of(run_id) and time.monotonic() < deadline:
        collect_garbage()
        time.sleep(0.5)
    assert containers_of(run_id) == []


def test_envs_keep_cleaning_up_after_the_pools_were_closed(base_image: str, run_id: str) -> None:
    from termgym.env._pool import close_all_pools

    env = termgym.make("text-report", run_id=run_id, pool_size=1)
    env.reset(seed=0)
    close_all_pools()  # e.g. a run interrupted earlier in the same process
    env.reset(seed=1)  # a fresh pool serves it
    env.step("true")
    env.close()
    close_all_pools()
    assert containers_of(run_id) == []


def test_a_reset_whose_recording_cannot_start_gives_its_sandbox_back(
    base_image: str, run_id: str, tmp_path: Path
) -> None:
    """A reset whose recorder failed (an episode id already recorded, a bad one, a recorder
    that raised) left the sandbox it had taken running, unused, until the env closed: one
    more container per failed reset."""

    def refusing(header):
        raise RuntimeError("the trainer's buffer is full")

    recorded = termgym.make("text-report", run_id=run_id, pool_size=0, record_dir=tmp_path)
    refused = termgym.make("text-report", run_id=run_id, pool_size=0, recorder=refusing)
    try:
        recorded.reset(seed=0, options={"episode_id": "e-1"})
        recorded.step(termgym.SUBMIT)
        for env, episode_id, error in [
            (recorded, "e-1", "expected a new episode id"),
            (recorded, "a/b", "episode_id must be a plain file name"),
            (refused, "e-2", "the trainer's buffer is full"),
        ]:
            with pytest.raises(Exception, match=error):
                env.reset(seed=0, options={"episode_id": episode_id})
        deadline = time.monotonic() + 120
        while containers_of(run_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert containers_of(run_id) == []  # every sandbox given back and stopped (pool 0)
    finally:
        recorded.close()
        refused.close()
