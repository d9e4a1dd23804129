"""`termgym check` gives each solution the task's own `agent_timeout`: what an agent has to
solve it (an imported task's is its harness's), not a limit of check's own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from termgym.check import check_variant
from termgym.tasks import load_task, task_image

SLOW_ORACLE = """#!/usr/bin/env bash
sleep 90
echo 10 > /app/out.txt
"""


@pytest.mark.docker
def test_a_solution_running_past_the_tasks_agent_timeout_fails_its_row(
    task_folder: Callable[..., Path], docker_engine: None
) -> None:
    folder = task_folder(spec={"limits": {"agent_timeout": 3, "grading_timeout": 30}})
    (folder / "solution" / "oracle.sh").write_text(SLOW_ORACLE)
    task = load_task(folder)
    (row,) = check_variant(task, "original", task_image(task), "docker")
    assert (row.solution, row.expected, row.ok) == ("oracle", "pass", False)
    assert "timed out: True" in row.why, row.why
