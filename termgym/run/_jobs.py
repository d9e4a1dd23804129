"""The episodes a run is made of, and which of them a previous attempt already finished."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from termgym._vocabulary import GRADER_ERROR, INFRA_ERROR, Variant, as_variant
from termgym.errors import TaskNotFound
from termgym.recording import end_from
from termgym.tasks import Task


@dataclass(frozen=True)
class Job:
    """One episode to run: a task, a variant, and its number among that pair's episodes."""

    task: str
    variant: Variant
    index: int
    seed: int

    @property
    def episode_id(self) -> str:
        """Stable id, so a resumed run recognises the episode (names the recording)."""
        return f"{self.task}--{self.variant}--{self.index:03d}"


def select_tasks(patterns: list[str], available: list[str]) -> list[str]:
    """The task ids matching any of the glob patterns, in sorted order.

    Raises:
        TaskNotFound: a pattern matches no task (the available ids are listed).
    """
    chosen: set[str] = set()
    for pattern in patterns:
        matched = fnmatch.filter(available, pattern)
        if not matched:
            raise TaskNotFound(
                f"no task matches {pattern!r}; available: {', '.join(sorted(available))}"
            )
        chosen.update(matched)
    return sorted(chosen)


def episode_seed(run_seed: int, task: str, variant: str, index: int) -> int:
    """A seed derived from the run seed and the episode's place, stable across resumes."""
    digest = hashlib.sha256(f"{run_seed}/{task}/{variant}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def plan_jobs(
    tasks: Sequence[str], variants: Mapping[str, Sequence[Variant]], episodes: int, run_seed: int
) -> list[Job]:
    """Every (task, variant, index) episode of a run; `variants` maps task -> its variants."""
    return [
        Job(task, variant, index, episode_seed(run_seed, task, variant, index))
        for task in tasks
        for variant in variants[task]
        for index in range(episodes)
    ]


def plan_task_set(
    tasks: Sequence[Task], variants: Sequence[str], episodes: int, run_seed: int
) -> list[Job]:
    """`plan_jobs` over loaded tasks, each with the variants of `variants` it offers, after
    checking what a rollout or a framework's dataset is asked for (so that no dataset comes
    out empty, or short of a variant, without a word).

    Raises:
        ValueError: `variants` is one str or names no variant, `episodes` is no int >= 1,
            or a variant asked for is offered by no task of the set (each task's are named).
    """
    if isinstance(variants, str):
        raise ValueError(
            f"variants: expected a list of variant names, e.g. [{variants!r}], got the str "
            f"{variants!r}"
        )
    wanted = [as_variant(name) for name in variants]
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes: expected a positive int, got {episodes!r}")
    per_task = {t.id: [v for v in wanted if v in t.spec.variants] for t in tasks}
    offered = {v for vs in per_task.values() for v in vs}
    missing = [v for v in wanted if v not in offered]
    if missing:
        offers = "; ".join(f"{t.id}: {', '.join(t.spec.variants)}" for t in tasks)
        raise ValueError(
            f"no task of the set offers the variant(s) {missing}; expected a variant some "
            f"task offers ({offers})"
        )
    return plan_jobs([t.id for t in tasks], per_task, episodes, run_seed)


def finished_episodes(out_dir: Path) -> set[str]:
    """Episode ids whose recording ends with a graded end line (no infrastructure error).

    A grader error (the final state could not be graded) is finished: it is the agent's
    doing and counts, so a resumed run does not give the agent another try at it.
    """
    done: set[str] = set()
    folder = out_dir / "episodes"
    if not folder.is_dir():
        return done
    for path in folder.glob("*.jsonl"):
        last = _last_line(path)
        if last is None or last.get("type") != "end":
            continue
        try:
            end = end_from(last)
        except ValueError:  # a malformed end line: run the episode again (kept aside)
            continue
        if end.episode_class == GRADER_ERROR or not (end.error or end.episode_class == INFRA_ERROR):
            done.add(path.stem)
    return done


def _last_line(path: Path) -> dict | None:
    """The recording's last line but its signature (which follows the end line)."""
    try:
        data = path.read_bytes().rstrip(b"\n")
    except OSError:
        return None
    cut = data.rfind(b"\n") + 1
    if data.startswith(b'{"type":"signature"', cut):
        data = data[: max(cut - 1, 0)]
        cut = data.rfind(b"\n") + 1
    try:
        value = json.loads(data[cut:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
