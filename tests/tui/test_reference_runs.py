"""The committed reference runs the TUI snapshots replay are what the agents do today."""

from __future__ import annotations

import pytest

from .reference_runs import RUNS, episode_file


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_recorded_reference_runs_are_what_the_agents_do_now(name: str) -> None:
    from termgym.agents import EpisodeContext, Reference, conflict_reason, ends_episode, make_agent
    from termgym.recording import read_episode
    from termgym.tasks import get_task, instantiate, rule_files

    agent, task_id, variant, _ = RUNS[name]
    log = read_episode(episode_file(name))
    assert log.header is not None and log.end is not None
    assert (log.header.agent, log.header.task, log.header.variant) == (agent, task_id, variant)
    task = get_task(task_id)
    plan = instantiate(task, variant, log.header.seed)
    reference = Reference(
        plan.solution("oracle"),
        plan.solution("memorized"),
        withheld_rules=dict(plan.withheld),
        workdir=task.spec.workdir,
        rule_files=rule_files(task.spec),
        cheater_script=plan.solution("cheater") if task.spec.cheater else "",
        conflict=plan.conflict.describe() if plan.conflict else "",
    )
    live = make_agent(agent)
    live.reset(EpisodeContext(task.id, "", 50, reference=reference))
    actions = []
    while not ends_episode(action := live.act({})):
        actions.append(action)
    assert [step.action for step in log.steps] == actions and log.end.conflict == conflict_reason(
        action
    ), (
        "the agents or the task's scripts changed: re-record with "
        "`.venv/bin/python tests/tui/reference_runs.py`, then update the snapshots"
    )
