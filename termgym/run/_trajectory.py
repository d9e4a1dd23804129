"""Trajectories: what one rollout episode hands an RL trainer, and their JSONL form.

One JSON object per line, `format: "termgym-trajectory/1"`; `Trajectory.from_dict` reads it
back into the same type. Messages are OpenAI-style chat messages (the model's view); the
grading fields (variant, class, verdicts) are the trainer's view and were never shown to
the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from termgym._vocabulary import EPISODE_STATUSES, EndClass, EpisodeStatus, Variant, as_variant
from termgym.errors import RecordingError

FORMAT = "termgym-trajectory/1"

_OLD_STATUSES: dict[str, EpisodeStatus] = {"policy-error": "agent-error"}
"""Statuses files written before the one vocabulary hold, and the status each one is now."""


@dataclass(frozen=True)
class Trajectory:
    """One episode of a rollout.

    Attributes:
        episode_id: Names the recording (`<record_dir>/episodes/<episode_id>.jsonl`).
        task: The task id.
        variant: The episode's variant (the trainer's to know, never the model's).
        seed: The episode's seed (rule values of sampled variants come from it).
        index: The episode's number among the (task, variant) pair's episodes.
        messages: The whole conversation: system, user, assistant (with tool calls), tool.
        actions: Per turn, the action run (a command, keystrokes, "<submit>"), or None
            when the reply held none.
        rewards: Per turn, the reward (0 until the last turn, which carries the score).
        reward: The episode's score (the weighted mean of its graders' scores).
        terminated: The model submitted.
        truncated: The step or turn budget ran out (graded all the same), or an error.
        episode_class: adapted / stale / both / neither / grader-error / error, None for original.
        verdicts: Rule set -> {passed, score}: the episode's own and the shadow ones.
        metadata: `termgym.chat.grading_metadata` of the final info.
        status: The episode's `EpisodeStatus`, as results.jsonl says it: ok (graded, a
            grader-error included), agent-error (the policy raised; the episode was graded
            as it stood, and counted), infra-error (termgym's machinery failed after every
            retry: skip it in training).
        error: The policy's exception, why grading failed, or the infrastructure error.
        attempts: How many attempts the episode took (infrastructure errors are retried).
        episode_file: The recording, when recorded.
        steps: Actions run in the terminal (SUBMIT not counted).
        seconds: Wall-clock duration of the episode.
    """

    episode_id: str
    task: str
    variant: Variant
    seed: int
    index: int = 0
    messages: tuple[dict[str, Any], ...] = ()
    actions: tuple[str | None, ...] = ()
    rewards: tuple[float, ...] = ()
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    episode_class: EndClass | None = None
    verdicts: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    status: EpisodeStatus = "ok"
    error: str | None = None
    attempts: int = 1
    episode_file: str | None = None
    steps: int = 0
    seconds: float = 0.0

    @property
    def counted(self) -> bool:
        """False for infrastructure errors, which every rate leaves out."""
        return self.status != "infra-error"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form (one line of trajectories.jsonl)."""
        data = asdict(self)
        data["class"] = data.pop("episode_class")
        data["messages"] = list(self.messages)
        data["actions"] = list(self.actions)
        data["rewards"] = list(self.rewards)
        return {"format": FORMAT, **data}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        """Read the form `to_dict` writes.

        Raises:
            RecordingError: not a termgym trajectory, or a field is missing or mistyped.
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise RecordingError(f"expected a trajectory with format {FORMAT!r}, found {found!r}")
        try:
            return cls(
                episode_id=str(data["episode_id"]),
                task=str(data["task"]),
                variant=as_variant(data["variant"]),
                seed=int(data["seed"]),
                index=int(data.get("index", 0)),
                messages=tuple(dict(m) for m in data.get("messages", ())),
                actions=tuple(None if a is None else str(a) for a in data.get("actions", ())),
                rewards=tuple(float(r) for r in data.get("rewards", ())),
                reward=float(data.get("reward", 0.0)),
                terminated=bool(data.get("terminated", False)),
                truncated=bool(data.get("truncated", False)),
                episode_class=data.get("class", data.get("cls")),
                verdicts=dict(data.get("verdicts") or {}),
                metadata=dict(data.get("metadata") or {}),
                status=_status(data.get("status", "ok")),
                error=data.get("error"),
                attempts=int(data.get("attempts", 1)),
                episode_file=data.get("episode_file"),
                steps=int(data.get("steps", 0)),
                seconds=float(data.get("seconds", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"a trajectory field is missing or mistyped: {exc!r}") from exc


def _status(value: Any) -> EpisodeStatus:
    """A saved status as the vocabulary says it; files from before it say "policy-error"."""
    status = _OLD_STATUSES.get(value, value)
    if status not in EPISODE_STATUSES:
        raise ValueError(f"status: expected one of {', '.join(EPISODE_STATUSES)}, found {value!r}")
    return status  # type: ignore[no-any-return]


def save_trajectories(trajectories: Iterable[Trajectory], path: str | Path) -> Path:
    """Append trajectories to a JSONL file (created with its folder if missing)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(json.dumps(trajectory.to_dict(), ensure_ascii=False) + "\n")
    return target


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Every trajectory of a JSONL file; RecordingError names the line that is not one."""
    source = Path(path)
    if not source.is_file():
        raise RecordingError(f"expected a trajectories JSONL file, found no file {source}")
    out = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(Trajectory.from_dict(json.loads(line)))
        except (ValueError, RecordingError) as exc:
            raise RecordingError(f"{source}:{number}: {exc}") from exc
    return out
