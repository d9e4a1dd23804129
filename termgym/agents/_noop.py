"""The noop agent: submits at once, the do-nothing baseline every benchmark reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from termgym._actions import SUBMIT
from termgym.agents._base import EpisodeContext


class NoopAgent:
    """Takes no action: its first action is SUBMIT, so the task's files are graded as laid out.

    Its pass rate is what a task gives for nothing (a grader that passes an untouched
    workspace shows here), and an agent's score is worth what it adds to it.
    """

    name = "noop"
    privileged = False

    def reset(self, context: EpisodeContext) -> None:
        """Nothing to prepare."""

    def act(self, observation: Mapping[str, Any]) -> str:
        """SUBMIT, always."""
        return SUBMIT

    def transcript(self) -> list[dict[str, Any]]:
        """It writes nothing."""
        return []
