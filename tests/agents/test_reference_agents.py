"""oracle, memorizer and replay: the actions they produce, and the registry that builds them."""

from __future__ import annotations

import subprocess

import pytest

from termgym.agents import (
    SUBMIT,
    Agent,
    EpisodeContext,
    Reference,
    make_agent,
    register_agent,
    registered_agents,
    unregister_agent,
)
from termgym.errors import AgentError, UnknownAgent
from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter, StepRecord

ORACLE = """#!/bin/bash
set -e
limit=$(python3 -c 'import json, os
print(json.loads(os.environ["TERMGYM_WITHHELD_RULES"]).get("max_weight", "none"))')
echo "oracle limit=$limit" > result.txt
read -r line || true
echo "stdin=${line:-empty}" >> result.txt
"""
MEMORIZED = """cat > result.txt <<'TERMGYM_SCRIPT'
max_weight=100
TERMGYM_SCRIPT
echo "rules=$TERMGYM_WITHHELD_RULES" >> result.txt
"""


AT_PROMPT = {"screen": "root@sandbox:/app#"}
"""A keys-mode observation of the shell waiting at its prompt (the step before is done)."""


def _context(tmp_path, mode="command", withheld=None):
    ref = Reference(ORACLE, MEMORIZED, withheld_rules=withheld or {}, workdir=str(tmp_path))
    return EpisodeContext("fuel-planner", "Plan.", max_steps=5, mode=mode, reference=ref)


def _run(command: str) -> None:
    # The agent's command runs in a real bash, as the sandbox's shell would run it.
    subprocess.run(["bash", "-c", command], check=True, cwd="/", timeout=30)


def test_oracle_lists_the_workdir_then_runs_an_unmarked_script_whole_then_submits(tmp_path):
    agent = make_agent("oracle")
    agent.reset(_context(tmp_path, withheld={"max_weight": 150}))
    assert agent.act({"output": "", "exit_code": -1}) == "ls -la"
    command = agent.act({"output": "", "exit_code": 0})
    _run(command)
    assert (tmp_path / "result.txt").read_text() == "oracle limit=150\nstdin=empty\n"
    assert agent.act({"output": "", "exit_code": 0}) == SUBMIT
    assert agent.transcript() == []


def test_memorizer_runs_memorized_script_with_empty_rules(tmp_path):
    agent = make_agent("memorizer")
    agent.reset(_context(tmp_path, withheld={"max_weight": 150}))
    command = agent.act({})
    assert "TERMGYM_WITHHELD_RULES='{}'" in command
    _run(command)
    assert (tmp_path / "result.txt").read_text() == ("max_weight=100\nrules={}\n")
    assert agent.act({}) == SUBMIT


def test_reference_agent_without_reference_is_refused():
    agent = make_agent("oracle")
    with pytest.raises(AgentError, match="privileged: expected context.reference"):
        agent.reset(EpisodeContext("t", "do it", max_steps=3))


def test_keys_mode_types_the_command_and_presses_enter(tmp_path):
    agent = make_agent("oracle")
    agent.reset(_context(tmp_path, mode="keys"))
    assert agent.act(AT_PROMPT) == "ls -la<Enter>"
    keys = agent.act(AT_PROMPT)
    assert keys.endswith("<Enter>") and keys.count("<Enter>") == 1
    assert "\n" not in keys and "\t" not in keys
    assert keys.endswith("</dev/null<Enter>".replace("<", "<lt>", 1))


def test_keys_mode_line_runs_the_script_in_bash(tmp_path):
    agent = make_agent("oracle")
    agent.reset(_context(tmp_path, mode="keys", withheld={"max_weight": 7}))
    agent.act(AT_PROMPT)  # ls -la
    line = agent.act(AT_PROMPT).removesuffix("<Enter>").replace("<lt>", "<")
    _run(line)
    assert (tmp_path / "result.txt").read_text() == "oracle limit=7\nstdin=empty\n"


def test_reset_starts_a_new_episode(tmp_path):
    agent = make_agent("memorizer")
    agent.reset(_context(tmp_path))
    agent.act({})
    agent.reset(_context(tmp_path))
    assert agent.act({}) != SUBMIT


def _recording(path, task="fuel-planner", actions=("ls", "cat a", SUBMIT), mode="command"):
    header = EpisodeHeader(
        episode_id=path.stem,
        task=task,
        task_version=1,
        variant="original",
        rules_visible={},
        rules_enforced={},
        seed=0,
        agent="human",
        backend="docker",
        versions={},
        started=0.0,
        extra={"mode": mode},
    )
    writer = EpisodeWriter(path.parent.parent, header)
    for i, action in enumerate(actions):
        step_mode = "submit" if action == SUBMIT else mode
        writer.step(
            StepRecord(index=i, mode=step_mode, action=action, output="", exit_code=0, duration=0.0)
        )
    writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False))
    writer.close()
    return path


def test_replay_reacts_recorded_actions_then_submits(tmp_path):
    agent = make_agent("replay", episode=str(_recording(tmp_path / "episodes" / "e1.jsonl")))
    agent.reset(_context(tmp_path))
    assert [agent.act({}) for _ in range(4)] == ["ls", "cat a", SUBMIT, SUBMIT]
    agent.reset(_context(tmp_path))
    assert agent.act({}) == "ls"


def test_replay_refuses_another_task(tmp_path):
    path = _recording(tmp_path / "episodes" / "e.jsonl", task="other")
    agent = make_agent("replay", episode=str(path))
    with pytest.raises(AgentError, match="is of task 'other'"):
        agent.reset(_context(tmp_path))


def test_replay_refuses_a_recording_of_another_mode(tmp_path):
    path = _recording(tmp_path / "episodes" / "k.jsonl", actions=("ls<Enter>",), mode="keys")
    agent = make_agent("replay", episode=str(path))
    with pytest.raises(AgentError, match="made in keys mode"):
        agent.reset(_context(tmp_path))


def test_replay_of_a_file_without_header_says_so(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('not json\n{"type": "end"}\n')
    with pytest.raises(AgentError, match="expected a header line"):
        make_agent("replay", episode=str(path))
    with pytest.raises(AgentError, match="found no file"):
        make_agent("replay", episode=str(tmp_path / "missing.jsonl"))


def test_unknown_agent_suggests_the_close_name():
    with pytest.raises(UnknownAgent, match="Did you mean 'memorizer'"):
        make_agent("memorise")


def test_unknown_option_suggests_the_close_option():
    with pytest.raises(AgentError, match="Did you mean 'episode'"):
        make_agent("replay", episod="x")


def test_a_missing_required_option_is_named_with_how_to_give_it(tmp_path):
    from termgym.run import RunConfig, Runner

    expected = r"agent 'replay' needs the option\(s\) \['episode'\]; expected each as --agent-opt"
    with pytest.raises(AgentError, match=expected):
        make_agent("replay")
    out = tmp_path / "run"
    with pytest.raises(AgentError, match=expected):  # before any episode, none recorded
        Runner(RunConfig(agent="replay", tasks=("fuel-planner",), out=out)).run()
    assert not out.exists()


class _Echo:
    name = "echo"
    privileged = False

    def reset(self, context):
        self.n = 0

    def act(self, observation):
        self.n += 1
        return SUBMIT if self.n > 1 else "echo hi"

    def transcript(self):
        return []


@pytest.fixture
def echo_agent():
    register_agent("echo-test", _Echo)
    yield
    unregister_agent("echo-test")


def test_registered_factory_builds_an_agent(echo_agent):
    assert "echo-test" in registered_agents()
    agent = make_agent("echo-test")
    assert isinstance(agent, Agent)
    agent.reset(EpisodeContext("t", "i", 3))
    assert agent.act({}) == "echo hi"


def test_factory_returning_a_non_agent_is_refused():
    register_agent("broken-test", lambda: object())
    try:
        with pytest.raises(AgentError, match="expected an object with name"):
            make_agent("broken-test")
    finally:
        unregister_agent("broken-test")


def test_string_options_from_the_command_line_get_the_declared_types(tmp_path):
    agent = make_agent(
        "llm",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        temperature="0.5",
        max_tokens="none",
        probe="true",
        extra_body='{"top_k": 5}',
    )
    assert (agent.temperature, agent.max_tokens, agent.probe_enabled) == (0.5, None, True)
    assert agent.extra_body == {"top_k": 5}
    with pytest.raises(AgentError, match="option 'max_tokens': expected int, found 'many'"):
        make_agent("llm", model="m", base_url="http://127.0.0.1:9/v1", max_tokens="many")
    path = _recording(tmp_path / "episodes" / "e.jsonl")
    replay = make_agent("replay", episode=str(path), check_task="no")
    assert replay.check_task is False
