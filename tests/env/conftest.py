"""Fixtures for environment tests: the oracle's command for a task, a per-test run id."""

from __future__ import annotations

import uuid

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
