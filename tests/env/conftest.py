"""Fixtures for environment tests: the oracle's command for a task, a per-test run id."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from termgym.tasks import get_task


def oracle_command(task_id: str, withheld: str = "{}") -> str:
    """The task's oracle solution as one shell command, as the oracle agent sends it."""
    script = get_task(task_id).path("solution/oracle.sh").read_text()
    return f"TERMGYM_WITHHELD_RULES='{withheld}' bash <<'TERMGYM_ORACLE'\n{script}\nTERMGYM_ORACLE"


def memorized_command(task_id: str) -> str:
    """The task's memorized solution (original values hard-coded) as one shell command."""
    script = get_task(task_id).path("solution/memorized.sh").read_text()
    return f"bash <<'TERMGYM_MEMO'\n{script}\nTERMGYM_MEMO"


@pytest.fixture
def run_id() -> str:
    """A run id unique to the test, put on every container as a label."""
    return f"test-{uuid.uuid4().hex[:10]}"


def type_until(
    env: Any,
    action: str,
    *,
    screen: str | None = None,
    output: str | None = None,
    patience: float = 60.0,
) -> tuple[dict, str]:
    """Type `action` in keys mode, then wait (empty actions, further apart each time) until
    `screen` is on the screen and `output` in what the terminal printed since. A keys step
    ends when the terminal goes quiet for a moment, and a busy machine's programs answer after
    one. Returns the last observation and everything printed since `action` was typed."""
    obs, *_ = env.step(action)
    printed = obs["output"]
    deadline, pause = time.monotonic() + patience, 0.1
    while (screen is not None and screen not in obs["screen"]) or (
        output is not None and output not in printed
    ):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"after {action!r}, expected screen {screen!r} and output {output!r} within "
                f"{patience:g} s; the screen shows:\n{obs['screen']}\nprinted: {printed!r}"
            )
        time.sleep(pause)  # what comes meanwhile waits in the terminal for the next read
        pause = min(pause * 2, 3.0)  # few empty steps: each one counts against max_steps
        obs, *_ = env.step("")
        printed += obs["output"]
    return obs, printed
