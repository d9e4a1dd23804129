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
    _wait_for(tmux_session, "fuel-0  adapted  reward 1.00  30 steps  fuel-planner · contradicted")
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


def _title(session: str) -> str:
    done = subprocess.run(
        ["tmux", "display-message", "-p", "-t", session, "#{pane_title}"],
        capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def _escaping_episode(folder: Path) -> Path:
    """An episode whose every field an agent writes, or a grader quotes, sets the terminal's
    title to say which field it came from, were it obeyed."""
    from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter, StepRecord

    def sets(field: str) -> str:
        return f"\x1b]2;SET-BY-{field}\x1b\\\x1b[2J"

    header = EpisodeHeader(
        episode_id="ep", task="fuel-planner", task_version=1, variant="contradicted",
        rules_visible={"max_weight": 100}, rules_enforced={"max_weight": 150}, seed=0,
        agent="llm", backend="bwrap", versions={}, started=time.time(),
        extra={"instruction": "plan"},
    )  # fmt: skip
    with EpisodeWriter(folder, header) as writer:
        writer.step(
            StepRecord(0, "command", "ls" + sets("action"), "out" + sets("output"), 0, 0.01)
        )
        writer.end(
            EpisodeEnd(
                reward=0.0,
                terminated=True,
                truncated=False,
                episode_class="stale",
                conflict="why" + sets("conflict"),
                verdicts={
                    "contradicted": {
                        "passed": False,
                        "rules": {"max_weight": 150},
                        "results": [
                            {
                                "grader": "tests",
                                "passed": False,
                                "score": 0.0,
                                "message": "test_a: got " + sets("failure"),
                                "details": {"failed": ["test_a"]},
                            }
                        ],
                    },
                    "original": {"passed": True, "rules": {"max_weight": 100}},
                },
                extra={
                    "transcript": [
                        {
                            "step": 1,
                            "role": "assistant",
                            "content": "hi" + sets("transcript"),
                            "reasoning": "so" + sets("reasoning"),
                        }
                    ]
                },
                tamper={
                    "tests": [{"path": "/app/x" + sets("tamper"), "kind": "changed"}],
                    "known": True,
                },
            )  # fmt: skip
        )
    return folder / "episodes" / "ep.jsonl"


def test_what_an_agent_wrote_is_shown_never_obeyed_by_the_terminal(
    tmux_session: str, tmp_path: Path
) -> None:
    """Its action, output, transcript, a grader's message quoting it, its conflict report,
    the paths it changed: an escape sequence in any of them set the window title (and could
    clear the screen or write over a verdict) before every pane showed it as text."""
    episode = _escaping_episode(tmp_path)
    _start(tmux_session, f"env -u COLUMNS -u LINES {TERMGYM} tui {episode}")
    _wait_for(tmux_session, "step 0 (1 of 1)")
    before = _title(tmux_session)
    assert "SET-BY" not in before, before
    for pane in ("2", "3", "4", "1"):
        _keys(tmux_session, pane)
        time.sleep(0.5)
        assert "SET-BY" not in _title(tmux_session), (pane, _title(tmux_session))
    shown = _screen(tmux_session)
    assert "⎋]2;SET-BY-action" in shown, shown  # there, as text
