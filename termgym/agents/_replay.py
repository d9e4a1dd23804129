"""The replay agent: re-acts the actions of a recorded episode, then submits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from termgym.agents._base import SUBMIT, EpisodeContext
from termgym.errors import AgentError


def recorded_actions(path: str | Path) -> tuple[dict[str, Any], list[str]]:
    """The header and the actions (in step order) of an episode recording (.jsonl).

    A recording is JSON lines: one {"type": "header"} line, one {"type": "step", "action"}
    line per step, and an {"type": "end"} line. A trailing SUBMIT is dropped (the agent
    submits once the actions run out).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise AgentError(f"replay: cannot read recording {str(path)!r}: {exc}") from exc
    header: dict[str, Any] = {}
    steps: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(text.splitlines()):
                break  # a crash may leave the last line half written
            raise AgentError(
                f"replay: {path.name} line {number}: expected a JSON object, found {line[:60]!r}"
            ) from exc
        kind = record.get("type")
        if kind == "header":
            header = record
        elif kind == "step":
            action = record.get("action")
            if not isinstance(action, str):
                raise AgentError(
                    f"replay: {path.name} line {number}: expected a step with a string "
                    f"'action', found {action!r}"
                )
            steps.append((int(record.get("step", len(steps) + 1)), action))
    if not header:
        raise AgentError(f"replay: {path.name}: expected a header line first, found none")
    actions = [a for _, a in sorted(steps, key=lambda s: s[0])]
    if actions and actions[-1].strip() == SUBMIT:
        actions.pop()
    return header, actions


class ReplayAgent:
    """Re-acts the actions of a recorded episode in order, then submits.

    Args:
        episode: Path of the recording (runs/<run>/episodes/<id>.jsonl).
        check_task: Refuse to replay into an episode of a different task.
    """

    name = "replay"
    privileged = True

    def __init__(self, episode: str | Path, check_task: bool = True) -> None:
        self.path = Path(episode)
        self.check_task = check_task
        self.header, self.actions = recorded_actions(self.path)
        self._next = 0

    @property
    def recorded_task(self) -> str | None:
        """The task id the recording names (None if its header does not say)."""
        task = self.header.get("task_id", self.header.get("task"))
        return task if isinstance(task, str) else None

    def reset(self, context: EpisodeContext) -> None:
        """Start again from the first recorded action."""
        recorded = self.recorded_task
        if self.check_task and recorded is not None and recorded != context.task_id:
            raise AgentError(
                f"replay: recording {self.path.name} is of task {recorded!r}, "
                f"expected task {context.task_id!r}"
            )
        self._next = 0

    def act(self, observation: Mapping[str, Any]) -> str:
        """The next recorded action, or SUBMIT once they run out."""
        if self._next >= len(self.actions):
            return SUBMIT
        action = self.actions[self._next]
        self._next += 1
        return action

    def transcript(self) -> list[dict[str, Any]]:
        """A replay writes nothing of its own."""
        return []
