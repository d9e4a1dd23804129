"""The steps an agent's own log says it ran: an ATIF trajectory's tool calls as steps with
`source` "agent", each placed inside the step of termgym's that was running when the log says
it ran (an in-sandbox CLI agent runs many commands inside one long step of termgym's).

Trust: the trajectory is the agent's own account, written by its harness from logs the
agent kept in a sandbox it controlled as root, and read after its run. Nothing here checks
it against what happened. So what it gives is evidence to read (the TUI, the report's
counts), never an input to a verdict: grading reads the sandbox, the trace audit reads
termgym's own steps and the gateway's record of the model calls, the replay agent re-runs
termgym's steps only; none of them reads a reported step. An agent that lies in its log
changes what the reported steps say, and nothing else. The trajectory is read defensively:
malformed parts are left out, sizes are capped.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from termgym.recording._records import StepRecord

MAX_REPORTED = 5_000
"""Reported steps kept per episode (the rest are counted in the agent log's note)."""
MAX_OUTPUT = 100_000
"""Characters of a reported step's output kept (the trajectory keeps the whole)."""
MAX_TRAJECTORY = 8_000_000
"""Characters of an agent's trajectory kept with the episode (a larger one is left out)."""

_EXIT_PATTERNS = (
    re.compile(r"(?m)^Process exited with code (-?\d+)"),  # Codex CLI's exec output
    re.compile(r"<returncode>(-?\d+)</returncode>"),  # mini-swe-agent 1's observation
    re.compile(r"(?m)^Exit code:? (-?\d+)"),
)
_WALL_PATTERN = re.compile(r"(?m)^Wall time: ([0-9.]+) seconds")  # Codex CLI's exec output


@dataclass(frozen=True)
class AgentLog:
    """An agent's own account of its episode, kept with the episode's end as evidence.

    Attributes:
        producer: Who wrote it (`harbor:codex 0.171.0`: the agent and its version).
        trajectory: The account, an ATIF trajectory as its producer wrote it (JSON-able).
        commands: Its tool calls are commands the agent ran itself, outside termgym's
            steps (an agent inside the sandbox): they become reported steps. False for an
            agent all of whose commands are termgym's steps already (Terminus-2).
    """

    producer: str
    trajectory: Mapping[str, Any] = field(default_factory=dict)
    commands: bool = True


@dataclass(frozen=True)
class Window:
    """When one of termgym's steps ran: seconds from the episode's start."""

    start: float
    end: float


def reported_steps(log: AgentLog, windows: Sequence[Window], started: float) -> list[StepRecord]:
    """The tool calls of `log`'s trajectory as steps the agent reported, in its order.

    Args:
        log: The agent's account.
        windows: When each of termgym's steps ran (index i: step i).
        started: The episode's start, as Unix time (to place the log's timestamps).
    """
    if not log.commands or not windows:
        return []
    longest = max(range(len(windows)), key=lambda i: windows[i].end - windows[i].start)
    out: list[StepRecord] = []
    within = longest
    for when, name, arguments, output, facts in _calls(log.trajectory):
        if len(out) >= MAX_REPORTED:
            break
        t = when - started if when is not None else None
        if t is not None:
            within = _window_at(windows, t)
        action, mode = _action(name, arguments)
        exit_code, duration = _outcome(output, facts)
        out.append(
            StepRecord(
                index=len(out),
                mode=mode,
                action=action,
                output=output[:MAX_OUTPUT],
                exit_code=exit_code,
                duration=duration,
                truncated=len(output) > MAX_OUTPUT,
                t=t if t is not None else windows[within].start,
                source="agent",
                within=within,
            )
        )
    return out


def kept_trajectory(log: AgentLog) -> dict[str, Any]:
    """What the episode's end keeps of the agent's log: its producer, the trajectory (left
    out, with a note, past MAX_TRAJECTORY characters)."""
    text = json.dumps(log.trajectory, ensure_ascii=False, default=str)
    kept: dict[str, Any] = {"producer": log.producer, "format": "atif"}
    if len(text) > MAX_TRAJECTORY:
        kept["note"] = f"trajectory of {len(text)} characters left out (over {MAX_TRAJECTORY})"
    else:
        kept["trajectory"] = json.loads(text)
    return kept


def _window_at(windows: Sequence[Window], t: float) -> int:
    """The step running at `t`: the last one that began by then (the first, before any)."""
    found = 0
    for i, window in enumerate(windows):
        if window.start <= t:
            found = i
        else:
            break
    return found


def _calls(
    trajectory: Mapping[str, Any],
) -> Iterator[tuple[float | None, str, Any, str, dict[str, Any]]]:
    """(when, tool name, arguments, output, facts) of each tool call of the agent's steps."""
    steps = trajectory.get("steps") if isinstance(trajectory, Mapping) else None
    for step in steps if isinstance(steps, list) else ():
        if not isinstance(step, Mapping) or step.get("source") != "agent":
            continue
        calls = step.get("tool_calls")
        if not isinstance(calls, list):
            continue
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, Mapping) else None
        by_id = {
            r.get("source_call_id"): r
            for r in (results if isinstance(results, list) else ())
            if isinstance(r, Mapping)
        }
        found = step.get("extra")
        extra: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        when = _unix(step.get("timestamp"))
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            call_id = call.get("tool_call_id")
            result = by_id.get(call_id) or (by_id.get(None) if len(calls) == 1 else None)
            output = _text(result.get("content")) if result is not None else ""
            output, facts = _unwrapped(output, _facts(extra, call_id))
            yield when, str(call.get("function_name") or "?"), call.get("arguments"), output, facts


def _facts(extra: Mapping[str, Any], call_id: Any) -> dict[str, Any]:
    """What the step's extra says of one call's outcome (Harbor's Codex converter keeps
    Codex's exec metadata: exit_code, duration_seconds)."""
    facts: dict[str, Any] = {}
    metadata = extra.get("tool_metadata")
    if isinstance(metadata, Mapping):
        facts.update(metadata)
    details = extra.get("tool_call_details")
    if isinstance(details, Mapping) and isinstance(details.get(call_id), Mapping):
        inner = details[call_id].get("metadata")
        if isinstance(inner, Mapping):
            facts.update(inner)
    return facts


def _unwrapped(output: str, facts: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An observation that is a JSON object of the command's output and exit code (as
    mini-swe-agent's are: {"returncode", "output"}) as that output, its code a fact."""
    if not output.startswith("{") or '"output"' not in output:
        return output, facts
    try:
        found = json.loads(output)
    except ValueError:
        return output, facts
    if not isinstance(found, Mapping) or not isinstance(found.get("output"), str):
        return output, facts
    for key in ("returncode", "exit_code", "exitCode"):
        if key in found and "exit_code" not in facts:
            facts = {**facts, "exit_code": found[key]}
    return found["output"], facts


def _action(name: str, arguments: Any) -> tuple[str, str]:
    """A tool call as a step's action: a shell command ("command"), or the tool and its
    arguments ("tool")."""
    if isinstance(arguments, Mapping):
        command = arguments.get("command", arguments.get("cmd"))
        if isinstance(command, list) and all(isinstance(c, str) for c in command):
            command = _shell_line(command)
        if isinstance(command, str) and command.strip():
            return command, "command"
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{name} {text}", "tool"


def _shell_line(argv: list[str]) -> str:
    """`["bash", "-lc", "ls"]` as the command it runs (`ls`); another argv joined."""
    if len(argv) == 3 and argv[1] in ("-c", "-lc") and argv[0].rsplit("/", 1)[-1] in (
        "bash", "sh", "zsh",
    ):  # fmt: skip
        return argv[2]
    return shlex.join(argv)


def _outcome(output: str, facts: Mapping[str, Any]) -> tuple[int | None, float]:
    """The exit code and seconds the log gives for a call (None and 0.0 where it is silent)."""
    code = facts.get("exit_code")
    exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if exit_code is None:
        for pattern in _EXIT_PATTERNS:
            match = pattern.search(output)
            if match:
                exit_code = int(match.group(1))
                break
    seconds = facts.get("duration_seconds")
    duration = float(seconds) if isinstance(seconds, int | float) and seconds >= 0 else 0.0
    if not duration:
        match = _WALL_PATTERN.search(output)
        duration = float(match.group(1)) if match else 0.0
    return exit_code, duration


def _unix(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)
