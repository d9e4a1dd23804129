"""`termgym play` in a real terminal (tmux): a person's keystrokes become recorded steps."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from termgym.recording import read_episode

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
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


@pytest.mark.docker
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
        _wait_for(session, "Ctrl-] ends the episode")
        _wait_for(session, "root@sandbox:/app#")
        _tmux("send-keys", "-t", session, "echo played-$((6*7))", "Enter")
        _wait_for(session, "played-42")
        _tmux("send-keys", "-t", session, "C-]")
        _wait_for(session, "Enter or s: submit for grading")
        _tmux("send-keys", "-t", session, "Enter")
        screen = _wait_for(session, "replay it: termgym tui ", timeout=120)
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


@pytest.mark.bwrap
def test_a_person_reports_the_conflict_of_an_impossible_episode(tmp_path, base_rootfs) -> None:
    """As agents do with REPORT_CONFLICT: Ctrl-], r, the reason. The end screen shows the
    rule values (seen, in force, the shadows') and the command that replays the episode."""
    session = f"tg-play-{uuid.uuid4().hex[:6]}"
    out = tmp_path / "run"
    command = f"{TERMGYM} play text-report --variant impossible --backend bwrap --out {out}"
    _tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", session, f"{command}; sleep infinity")
    try:
        _wait_for(session, "root@sandbox:/app#")
        _tmux("send-keys", "-t", session, "C-]")
        _wait_for(session, "r: report that the task contradicts itself")
        _tmux("send-keys", "-t", session, "x")  # any other key: back to the shell
        _wait_for(session, "(back to the shell)")
        _tmux("send-keys", "-t", session, "echo still-here", "Enter")
        _wait_for(session, "still-here")
        _tmux("send-keys", "-t", session, "C-]")
        _tmux("send-keys", "-t", session, "r")
        _wait_for(session, "what contradicts what?")
        _tmux("send-keys", "-t", session, "top_n is 14 in the spec, 1x", "BSpace", "1 in the tests")
        # (the values are drawn per episode: the reason is the person's words, not checked)
        _tmux("send-keys", "-t", session, "Enter")
        screen = _wait_for(session, "replay it: termgym tui ", timeout=120)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    [path] = list((out / "episodes").glob("*.jsonl"))
    log = read_episode(path)
    assert log.end is not None and log.end.conflict == "top_n is 14 in the spec, 11 in the tests"
    assert "reported a conflict: top_n is 14 in the spec, 11 in the tests" in screen
    seen, enforced = log.header.rules_visible["top_n"], log.header.rules_enforced["top_n"]
    original = log.end.verdicts["original"]["rules"]["top_n"]
    # what the person saw, what was in force, the original's and the stated rule set's
    assert seen != enforced and re.search(rf"top_n +{seen} +{enforced} +{original} +{seen}", screen)
    assert re.search(r"rule +you saw +in force +original +stated", screen), screen
    assert f"replay it: termgym tui {path}" in screen.replace("\n", "")
    assert [s.action for s in log.steps] == ["echo still-here<Enter>"]
