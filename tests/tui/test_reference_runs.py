"""The committed reference runs the TUI snapshots replay are what the agents do today."""

from __future__ import annotations

import pytest

from .reference_runs import AGENTS, episode_file


@pytest.mark.parametrize("agent", AGENTS)
def test_the_recorded_reference_runs_are_what_the_agents_do_now(agent: str) -> None:
    from termgym.agents import SUBMIT, EpisodeContext, Reference, make_agent
    from termgym.recording import read_episode
    from termgym.tasks import get_task, rule_files

    log = read_episode(episode_file(agent))
    assert log.header is not None
    task = get_task(log.header.task)
    reference = Reference(
        task.path(task.spec.oracle).read_text(),
        task.path(task.spec.memorized or "").read_text(),
        withheld_rules={},  # contradicted: nothing is withheld
        workdir=task.spec.workdir,
        rule_files=rule_files(task.spec),
    )
    live = make_agent(agent)
    live.reset(EpisodeContext(task.id, "", 50, reference=reference))
    actions = []
    while (action := live.act({})) != SUBMIT:
        actions.append(action)
    assert [step.action for step in log.steps] == actions, (
        "the agents or the task's scripts changed: re-record with "
        "`.venv/bin/python tests/tui/reference_runs.py`, then update the snapshots"
    )
