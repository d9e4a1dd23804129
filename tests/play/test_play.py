"""`termgym play` in a real terminal (tmux): a person's keystrokes become recorded steps."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from termgym.recording import read_episode

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]
TERMGYM = str(Path(sys.executable).parent / "termgym")


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def _wait_for(session: str, text: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never showed on the screen:\n{screen}")


def test_a_person_plays_a_task_and_the_episode_is_recorded(tmp_path, base_image) -> None:
    session = f"tg-play-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "run"
    _tmux(
        "new-session",
        "-d",
        "-x",
        "120",
        "-y",
        "40",
        "-s",
        session,
        f"{TERMGYM} play text-report --out {out}; sleep infinity",  # the pane stays to be read
    )
    try:
        _wait_for(session, "Ctrl-] submits")
        _wait_for(session, "root@sandbox:/app#")
        _tmux("send-keys", "-t", session, "echo played-$((6*7))", "Enter")
        _wait_for(session, "played-42")
        _tmux("send-keys", "-t", session, "C-]")
        screen = _wait_for(session, "recording ", timeout=120)
        assert "reward 0.00, class - (original)" in screen
        # why it failed: the rule set's verdict and the failing tests, by name
        assert "original     FAIL" in screen
        assert "report: test_the_shipped_articles_have_their_report:" in screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    [path] = list((out / "episodes").glob("*.jsonl"))
    log = read_episode(path)
    assert log.header.agent == "human"
    assert [s.action for s in log.steps] == ["echo played-$((6*7))<Enter>"]
    assert "played-42" in log.steps[0].output
    assert log.end is not None and log.end.terminated
