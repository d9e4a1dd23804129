"""The real `termgym tui` in a real terminal (tmux): keys sent, the screen read back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TERMGYM = Path(sys.executable).parent / "termgym"


@pytest.fixture
def tmux_session() -> Iterator[str]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    if not TERMGYM.exists():
        pytest.skip(f"the termgym script is not installed next to {sys.executable}")
    name = f"termgym-tui-test-{os.getpid()}"
    yield name
    subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def _screen(session: str) -> str:
    done = subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
    )
    return done.stdout


def _wait_for(session: str, text: str, timeout: float = 60.0, gone: bool = False) -> str:
    """Read the terminal until it shows `text` (or, with `gone`, no longer shows it)."""
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = _screen(session)
        if (text in shown) is not gone:
            return shown
        time.sleep(0.05)
    expected = f"{text!r} gone from" if gone else f"{text!r} on"
    raise AssertionError(f"expected {expected} the terminal; it shows:\n{shown}")


def _keys(session: str, *keys: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", session, *keys], check=True)


def _start(session: str, command: str) -> None:
    tmux = ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", command]
    subprocess.run(tmux, check=True)
    # Keep 160x50 whatever clients come and go.
    subprocess.run(["tmux", "set-option", "-w", "-t", session, "window-size", "manual"])
    subprocess.run(["tmux", "resize-window", "-t", session, "-x", "160", "-y", "50"])


def test_the_app_runs_in_a_real_terminal_and_answers_keys(run_dir: Path, tmux_session: str) -> None:
    episode = run_dir / "episodes" / "fuel-0.jsonl"
    # COLUMNS / LINES inherited from the tmux server would override the real terminal size.
    _start(tmux_session, f"env -u COLUMNS -u LINES {TERMGYM} tui {episode}")
    _wait_for(tmux_session, "step 29 (30 of 30)")
    _wait_for(tmux_session, "4 Transcript  esc Back  ? Keys  q Quit")  # the full 160-column footer
    _wait_for(tmux_session, "fuel-0  fuel-planner · contradicted · synthetic  adapted")
    _keys(tmux_session, "g", "j", "j", "j", "j")
    _wait_for(tmux_session, "step 4 (5 of 30)")
    _wait_for(tmux_session, "agent@sandbox:/app$ python3 plan.py --leg 4")
    _keys(tmux_session, "?")
    _wait_for(tmux_session, "keys: episode view")
    # An Escape followed at once by a key reads as Alt+key: the next key goes once it was read.
    _keys(tmux_session, "Escape")
    _wait_for(tmux_session, "keys: episode view", gone=True)
    _keys(tmux_session, "3")
    _wait_for(tmux_session, "contradicts the original")
    _keys(tmux_session, "Escape")
    _wait_for(tmux_session, "run 20260101-000000-demo")
    _keys(tmux_session, "q")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        alive = subprocess.run(["tmux", "has-session", "-t", tmux_session], capture_output=True)
        if alive.returncode != 0:
            break
        time.sleep(0.1)
    else:
        pytest.fail("q did not quit the app")
