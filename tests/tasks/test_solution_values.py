"""An oracle reads the values its episode states through `{{ name }}`: a rule stated only in
the instruction is solvable by a reference solution, and the memorized one stays as
written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from termgym.check import check_tasks
from termgym.tasks import RuleDraw, instantiate, load_task

ORACLE = """#!/usr/bin/env bash
# writes the limit the instruction states; {{ not_a_rule }} is left as it is
echo {{ limit }} > /app/out.txt
"""
INSTRUCTION = "Write the batch limit, {{ limit }}, alone to /app/out.txt.\n"


@pytest.fixture
def stated_in_instruction(task_folder: Callable[..., Path]) -> Path:
    folder = task_folder(
        spec={"instruction": INSTRUCTION, "grader_pool": None,
              "variants": ["original", "contradicted", "withheld", "sampled"]},
        rule={"stated_in": ["instruction"]},
        files={"policy.txt": None},
    )  # fmt: skip
    (folder / "solution" / "oracle.sh").write_text(ORACLE)
    return folder


def test_the_oracle_is_given_each_episodes_stated_value(stated_in_instruction: Path) -> None:
    task = load_task(stated_in_instruction)
    draw = RuleDraw(contradict="fixed")
    for variant, expected in (("original", 10), ("contradicted", 20), ("withheld", 10)):
        plan = instantiate(task, variant, seed=1, draw=draw)
        assert f"echo {expected} > /app/out.txt" in plan.solution("oracle"), variant
        assert plan.solution("memorized") == "#!/usr/bin/env bash\necho 10 > /app/out.txt\n"
    sampled = instantiate(task, "sampled", seed=1)
    assert f"echo {sampled.rules_enforced['limit']} >" in sampled.solution("oracle")
    # a placeholder naming no rule is left as it is (a solution may carry other templates)
    assert "{{ not_a_rule }}" in sampled.solution("oracle")


@pytest.mark.docker
def test_check_proves_a_rule_stated_only_in_the_instruction(
    stated_in_instruction: Path, docker_engine: None
) -> None:
    rows = check_tasks([load_task(stated_in_instruction)], "docker", jobs=2)
    assert not [r for r in rows if r.ok is False], [r for r in rows if r.ok is False]
    (stale,) = [r for r in rows if r.solution == "memorized" and r.variant == "contradicted"]
    assert stale.episode_class == "stale"
