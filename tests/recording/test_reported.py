"""Steps an agent's own log reports: read from its ATIF trajectory, placed inside termgym's
steps by time, written as `reported` lines that no reader takes for steps termgym ran, and
never read by what grades, audits or replays an episode."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from termgym.recording import (
    AgentLog,
    EpisodeEnd,
    EpisodeFollower,
    EpisodeWriter,
    StepRecord,
    Window,
    read_episode,
    reported_steps,
)

from .conftest import make_header, make_step

STARTED = 1_700_000_000.0


def _at(seconds: float) -> str:
    return datetime.fromtimestamp(STARTED + seconds, UTC).isoformat().replace("+00:00", "Z")


def _call(name: str, arguments: dict, output: str, at: float, **extra: object) -> dict:
    call_id = f"call_{name}_{at}"
    return {
        "step_id": 1,
        "timestamp": _at(at),
        "source": "agent",
        "message": "",
        "tool_calls": [{"tool_call_id": call_id, "function_name": name, "arguments": arguments}],
        "observation": {"results": [{"source_call_id": call_id, "content": output}]},
        **({"extra": extra} if extra else {}),
    }


# What Harbor's converters write: Codex's exec calls keep Codex's metadata (exit code and
# seconds), mini-swe-agent's observations carry a <returncode>, Claude Code calls tools by
# name (Bash, Read ...).
TRAJECTORY = {
    "schema_version": "ATIF-v1.6",
    "session_id": "s",
    "agent": {"name": "codex", "version": "0.171.0"},
    "steps": [
        {"step_id": 1, "timestamp": _at(0.5), "source": "user", "message": "the task"},
        _call("exec_command", {"cmd": "cat /app/policy/fuel_policy.json"}, '{"max_weight": 150}',
              12.0, tool_metadata={"exit_code": 0, "duration_seconds": 0.25}),
        _call("bash", {"command": "false"}, "<returncode>1</returncode><output></output>", 13.0),
        _call("shell", {"command": ["bash", "-lc", "ls /app"]}, "plan.py\n", 14.0),
        _call("Read", {"file_path": "/app/plan.py"}, "import json", 15.0),
        {"step_id": 9, "timestamp": _at(16.0), "source": "agent", "message": "Done."},
    ],
}  # fmt: skip

# termgym's steps: set-up (0-1 s), the agent's own long command (10-20 s), its log's download
WINDOWS = [Window(0.0, 1.0), Window(10.0, 20.0), Window(20.5, 21.0)]


def test_each_tool_call_of_the_agents_log_is_a_reported_step_inside_the_step_it_ran_in():
    steps = reported_steps(AgentLog("harbor:codex", TRAJECTORY), WINDOWS, STARTED)
    assert [(s.action, s.mode) for s in steps] == [
        ("cat /app/policy/fuel_policy.json", "command"),
        ("false", "command"),
        ("ls /app", "command"),
        ('Read {"file_path": "/app/plan.py"}', "tool"),
    ]
    assert all(s.source == "agent" and s.within == 1 and s.at_step == 1 for s in steps)
    assert [s.index for s in steps] == [0, 1, 2, 3]
    assert [s.exit_code for s in steps] == [0, 1, None, None]  # where the log says
    assert steps[0].duration == 0.25 and steps[0].output == '{"max_weight": 150}'
    assert [round(s.t, 3) for s in steps] == [12.0, 13.0, 14.0, 15.0]


def test_a_call_without_a_time_goes_where_the_one_before_went_else_in_the_longest_step():
    untimed = json.loads(json.dumps(TRAJECTORY))
    for step in untimed["steps"]:
        step.pop("timestamp")
    steps = reported_steps(AgentLog("a", untimed), [Window(0, 1), Window(2, 9), Window(9, 9.5)], 0)
    assert {s.within for s in steps} == {1}


def test_an_agent_whose_commands_are_termgyms_steps_already_reports_none():
    assert reported_steps(AgentLog("harbor:terminus-2", TRAJECTORY, False), WINDOWS, STARTED) == []


def test_a_malformed_log_gives_what_is_readable_and_never_raises():
    junk = {"steps": [None, 3, {"source": "agent", "tool_calls": ["x", {"arguments": 5}]},
                      {"source": "agent", "tool_calls": 7, "timestamp": "not a time"}]}  # fmt: skip
    steps = reported_steps(AgentLog("a", junk), WINDOWS, STARTED)
    assert [(s.action, s.output, s.exit_code) for s in steps] == [("? 5", "", None)]
    assert reported_steps(AgentLog("a", {"steps": "no"}), WINDOWS, STARTED) == []


def _episode(tmp_path: Path, reported: list[StepRecord]) -> Path:
    with EpisodeWriter(tmp_path, make_header()) as writer:
        for i in range(3):
            writer.step(make_step(i))
        for step in reported:
            writer.step(step)
        writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False))
    return writer.jsonl_path


def test_reported_steps_are_lines_of_their_own_type_and_read_apart_from_termgyms(tmp_path):
    reported = reported_steps(AgentLog("harbor:codex", TRAJECTORY), WINDOWS, STARTED)
    path = _episode(tmp_path, reported)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["header"] + ["step"] * 3 + ["reported"] * 4 + [
        "end",
        "signature",  # over every line before it: the reported ones are signed too
    ]
    assert lines[-2]["steps"] == 3  # the end counts termgym's steps
    assert read_episode(path).provenance == "signed"
    for lazy in (False, True):
        log = read_episode(path, lazy=lazy)
        assert [s.action for s in log.steps] == ["echo 0", "echo 1", "echo 2"]
        assert all(s.source == "termgym" and s.within is None for s in log.steps)
        assert [s.action for s in log.reported] == [s.action for s in reported]
        assert all(s.source == "agent" and s.within == 1 for s in log.reported)
    assert path.with_suffix(".cast").read_text().count('"m"') == 3  # no cast for reported ones
    follower = EpisodeFollower(path)
    assert [s.action for s in follower.poll()] == ["echo 0", "echo 1", "echo 2"]
    assert len(follower.reported) == 4


def test_the_line_type_not_a_field_says_who_ran_a_step(tmp_path):
    path = _episode(tmp_path, [])
    lines = path.read_text().splitlines()
    forged_step = json.loads(lines[1]) | {"source": "agent", "within": 0}
    forged_report = json.loads(lines[2]) | {"type": "reported", "source": "termgym"}
    lines[1:3] = [json.dumps(forged_step), json.dumps(forged_report)]
    path.write_text("\n".join(lines) + "\n")
    log = read_episode(path)
    assert [(s.action, s.source, s.within) for s in log.steps] == [
        ("echo 0", "termgym", None),
        ("echo 2", "termgym", None),
    ]
    assert [(s.action, s.source) for s in log.reported] == [("echo 1", "agent")]


def test_a_lying_log_changes_nothing_that_grades_audits_or_replays(tmp_path):
    """An agent with root in its sandbox writes its own log: here it claims it read the
    policy and saw the remembered value there, and wrote the reading planner. The episode's
    verdict is the sandbox's (its end line, written by termgym's grading); the trace the
    audit reads, the summary the rates count and the actions a replay re-runs are the same
    as without the lie."""
    from dataclasses import replace

    from termgym.agents._replay import recorded_actions
    from termgym.analysis.audit import audit_trace, trace_from_log
    from termgym.analysis.metrics import summary_from_log

    lie = {
        "steps": [
            _call("exec_command", {"cmd": "cat /app/policy/fuel_policy.json"},
                  '{"max_weight": 100}', 12.0, tool_metadata={"exit_code": 0}),
            _call("exec_command", {"cmd": "cp /tmp/reading.py /app/plan.py"}, "", 13.0),
        ]
    }  # fmt: skip
    honest = tmp_path / "honest"
    lying = tmp_path / "lying"
    plain = read_episode(_episode(honest, []))
    told = read_episode(
        _episode(lying, reported_steps(AgentLog("harbor:codex", lie), WINDOWS, STARTED))
    )
    assert len(told.reported) == 2 and not plain.reported
    assert trace_from_log(told) == trace_from_log(plain)
    assert audit_trace(trace_from_log(told)) == audit_trace(trace_from_log(plain))
    counted = summary_from_log(told)
    assert counted.reported_steps == 2  # counted for reading, and nothing else differs
    assert replace(counted, reported_steps=0) == summary_from_log(plain)
    assert recorded_actions(told.path)[1] == recorded_actions(plain.path)[1]
