"""SIGHUP (the terminal closed) and SIGTERM end `termgym play` and `termgym tui` as Ctrl-C ends
a run: the sandbox removed, the terminal given back (the alternate screen left, the keys
mode reset), an exit status of 128 + the signal. Each runs on a real pseudo-terminal
(pexpect)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pexpect
import pytest

from termgym.recording import read_episode
from tests.faults.harness import STOP_BOUND, TASKS, TERMGYM, RunSpec, leftovers


def _ended(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF, timeout=STOP_BOUND)
    child.close()
    return child.before.decode(errors="replace")


@pytest.mark.bwrap
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=lambda s: s.name)
def test_play_stopped_by_its_terminal_or_a_signal_leaves_nothing(
    base_rootfs: str, tmp_path: Path, signum: signal.Signals
) -> None:
    out = tmp_path / "human"
    child = pexpect.spawn(
        TERMGYM, ["play", "cargo-limit", "--path", TASKS, "--backend", "bwrap", "--out", str(out)],
        dimensions=(40, 120), timeout=120,
    )  # fmt: skip
    child.expect("`exit` submits")
    child.send("echo typed-before-the-signal\r")
    child.expect("typed-before-the-signal")
    time.sleep(0.3)
    child.kill(signum)
    said = _ended(child)
    assert child.exitstatus == 128 + signum, said[-2000:]
    assert f"stopped by {signum.name}" in said
    assert leftovers(RunSpec(out, "bwrap"), {child.pid}) == []
    (episode,) = (out / "episodes").glob("*.jsonl")
    end = read_episode(episode).end
    assert end is not None and "abandoned" in (end.error or "")  # ungraded, said so


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=lambda s: s.name)
def test_the_tui_following_a_run_gives_the_terminal_back_on_a_signal(
    tmp_path: Path, signum: signal.Signals
) -> None:
    run = tmp_path / "runs" / "followed"
    (run / "episodes").mkdir(parents=True)  # a run that has not finished an episode yet
    (run / "run.json").write_text(json.dumps({"type": "run", "schema": 1, "run_id": "followed"}))
    child = pexpect.spawn(TERMGYM, ["tui", str(run)], dimensions=(40, 120), timeout=120)
    child.expect("followed")  # drawn, following the run
    time.sleep(0.5)
    child.kill(signum)
    said = _ended(child)
    assert child.exitstatus == 128 + signum, said[-2000:]
    assert "\x1b[?1049l" in said  # the alternate screen left: the terminal is the shell's
    assert "every sandbox" not in said  # it started none
