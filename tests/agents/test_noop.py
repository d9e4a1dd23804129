"""The noop agent: the do-nothing baseline, run as a user runs it (`termgym run --agent noop`)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from termgym import SUBMIT
from termgym.agents import EpisodeContext, make_agent, registered_agents
from termgym.cli import main
from termgym.recording import read_run


def test_noop_is_a_bundled_agent_that_submits_at_once() -> None:
    assert "noop" in registered_agents()
    agent = make_agent("noop")
    assert (agent.name, agent.privileged) == ("noop", False)
    agent.reset(EpisodeContext(task_id="t", instruction="do it", max_steps=5))
    assert agent.act({"output": ""}) == SUBMIT
    assert agent.transcript() == []


@pytest.mark.bwrap
def test_termgym_run_agent_noop_grades_the_workspace_as_laid_out(tmp_path, base_rootfs) -> None:
    out = tmp_path / "noop"
    result = CliRunner().invoke(
        main,
        ["run", "--agent", "noop", "--tasks", "text-report", "--variants", "original",
         "--backend", "bwrap", "--out", str(out), "--no-report"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [episode] = read_run(out).episodes
    assert list(episode.steps) == []  # it submitted before any command
    assert episode.end is not None and episode.end.terminated
    assert episode.end.reward == 0.0  # nothing written: the graders fail the workspace
