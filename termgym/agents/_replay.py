"""The replay agent: re-acts the actions of a recorded episode, then submits."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from termgym._actions import SUBMIT
from termgym.agents._base import EpisodeContext
from termgym.errors import AgentError, RecordingError
from termgym.recording import EpisodeHeader, read_episode


def recorded_actions(path: str | Path) -> tuple[EpisodeHeader, list[str]]:
    """The header and the actions (in step order) of an episode recording (.jsonl).

    Submit steps are left out: the agent submits once the actions run out.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentError(f"replay: expected an episode recording (.jsonl), found no file {path}")
    try:
        log = read_episode(path)
    except RecordingError as exc:
        raise AgentError(f"replay: cannot read {path}: {exc}") from exc
    if log.header is None:
        raise AgentError(f"replay: {path.name}: expected a header line first, found none")
    unreadable = [note for note in log.skipped if "step" in note]
    if unreadable:
        raise AgentError(f"replay: {path.name}: {unreadable[0]}")
    steps = sorted(log.steps, key=lambda s: s.index)
    actions = [s.action for s in steps if s.mode != "submit" and s.action.strip() != SUBMIT]
    return log.header, actions


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

    def reset(self, context: EpisodeContext) -> None:
        """Start again from the first recorded action."""
        recorded = self.header.task
        if self.check_task and recorded and recorded != context.task_id:
            raise AgentError(
                f"replay: recording {self.path.name} is of task {recorded!r}, "
                f"expected task {context.task_id!r}"
            )
        mode = self.header.extra.get("mode")
        if mode and mode != context.mode:
            raise AgentError(
                f"replay: recording {self.path.name} was made in {mode} mode, "
                f"expected {context.mode} mode like the episode"
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
