"""Live-state grading: the graders run in a clean verifier that shares the agent's network."""

from __future__ import annotations

from pathlib import Path

import termgym
from termgym.tasks import load_task

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "live-service"


def _episode(backend: str, script: str) -> tuple[float, dict]:
    task = load_task(TASK)
    env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
    try:
        env.reset(seed=0)
        body = task.path(script).read_text()
        env.step(f"bash <<'TERMGYM_SOLUTION'\n{body}\nTERMGYM_SOLUTION")
        _, reward, _, _, info = env.step(termgym.SUBMIT)
        return reward, info
    finally:
        env.close()


def test_a_service_the_agent_left_running_is_graded_where_it_runs(backend) -> None:
    reward, info = _episode(backend, "solution/oracle.sh")
    assert info["error"] is None and (reward, info["class"]) == (1.0, "adapted")
    reward, info = _episode(backend, "solution/memorized.sh")
    assert (reward, info["class"]) == (0.0, "stale")


def test_without_a_running_service_live_grading_fails_the_task(backend) -> None:
    task = load_task(TASK)
    env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
    try:
        env.reset(seed=0)
        env.step("echo 20 > /app/index.html")  # the right page, but nothing serves it
        _, reward, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert (reward, info["class"]) == (0.0, "neither")
