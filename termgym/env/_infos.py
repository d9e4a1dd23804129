"""Step infos whose every key keeps one type across envs and steps, so vector envs stack them.

Gymnasium's vector envs stack each info key into one array per step, typed by the first
env's value: an int exit code beside a None (a submit, a timeout) raised TypeError, and a
dict beside a None was written into as if it were the array. So numbers, flags and
mappings are never None here: where there is no value, the number has a fixed stand-in
and a flag beside it says so (`exit_code` -1 with `exited` False; a verdict's `passed`
False and `score` 0.0 with `known` False; no tamper evidence read is an empty mapping).
Text stays a str or None (both stack into one object array). Recordings keep their own
form (`docs/recording-format.md`): only what the env hands out is made stackable here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from termgym.env._timing import Duration
from termgym.sandbox import RunResult


def command_info(result: RunResult, step: int) -> dict[str, Any]:
    """The info of a step that ran a command or typed keys."""
    return {
        "exit_code": -1 if result.exit_code is None else int(result.exit_code),
        "exited": result.exit_code is not None,
        "duration": Duration(result.duration),
        "timed_out": bool(result.timed_out),
        "output_truncated": bool(result.truncated),
        "shell_restarted": bool(result.restarted),
        "step": step,
    }


def no_command_info(step: int) -> dict[str, Any]:
    """The same keys for a step that ran nothing (a submit, a conflict report, a stop, a
    sandbox lost under the command): no exit code, no time, nothing cut short."""
    return {
        "exit_code": -1,
        "exited": False,
        "duration": Duration(0.0),
        "timed_out": False,
        "output_truncated": False,
        "shell_restarted": False,
        "step": step,
    }


def stackable_verdicts(verdicts: Mapping[str, Any]) -> dict[str, Any]:
    """Verdicts (rule set -> `Verdict.to_dict()`) with `passed` a bool and `score` a float
    in every one: where a grader could not run (`error` says why) they are False and 0.0,
    and `known` is False."""
    out: dict[str, Any] = {}
    for name, verdict in verdicts.items():
        if not isinstance(verdict, Mapping):
            out[name] = verdict
            continue
        passed, score = verdict.get("passed"), verdict.get("score")
        out[name] = {
            **verdict,
            "passed": bool(passed),
            "score": float(score) if isinstance(score, int | float) else 0.0,
            "known": isinstance(passed, bool) and isinstance(score, int | float),
        }
    return out


def new_episode_id(prefix: str, *, planned: bool = False) -> str:
    """An episode id no other episode has: a task id with the time and 8 random hex digits,
    or (`planned`) a planned episode's id (a dataset row's: one per task, variant, index and
    seed) with 8 random hex digits, so that every rollout of the row (a GRPO group, a second
    evaluation into the same record_dir) records an episode of its own."""
    token = uuid.uuid4().hex[:8]
    if planned:
        return f"{prefix}--{token}"
    return f"{prefix}-{time.strftime('%Y%m%dT%H%M%S')}-{token}"
