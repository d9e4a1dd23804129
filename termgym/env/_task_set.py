"""Task sets and task schedules: which tasks a multi-task environment holds, and which runs next.

A task set is a folder (of task folders, or one task), a glob over the registered task ids
("*", "fuel-*"), a list mixing ids, folders and loaded tasks, or what a benchmark importer
returns (any iterable of tasks or folders). A schedule draws the task of each episode, in
the environment, with its generator, as variant schedules draw variants.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from termgym._task_paths import SPEC_FILE, task_dirs
from termgym.env._schedule import check_mix
from termgym.errors import TaskNotFound
from termgym.tasks import Task, get_task, load_task

TaskSource = str | Path | Task | Iterable[str | Path | Task]
"""What `resolve_task_set` accepts."""

SCHEDULE_FORMS = (
    "'uniform' (each episode draws a task, equal odds), 'cycle' (the tasks in turn), "
    "a {task_id: weight} mix, or a list of stages [{'episodes': N, 'mix': {...}}, ..., "
    "{'mix': {...}}]"
)


def resolve_task_set(source: TaskSource) -> tuple[Task, ...]:
    """The tasks of a task set, loaded and validated, in a stable order, without repeats.

    Raises:
        TaskNotFound: a glob matches no task, an id is unknown, a folder holds no task.
        ValueError: the set is empty, or two tasks share an id.
    """
    items = [source] if isinstance(source, str | Path | Task) else list(source)
    tasks: list[Task] = []
    for item in items:
        tasks.extend(_resolve_one(item))
    unique: dict[str, Task] = {}
    for task in tasks:
        seen = unique.get(task.id)
        if seen is not None and seen.root.resolve() != task.root.resolve():
            raise ValueError(
                f"two tasks share the id {task.id!r}: {seen.root} and {task.root}; "
                "expected one task per id in a task set"
            )
        unique.setdefault(task.id, task)
    if not unique:
        raise ValueError(f"expected at least one task in the task set, found none in {source!r}")
    return tuple(unique.values())


def _resolve_one(item: str | Path | Task) -> list[Task]:
    if isinstance(item, Task):
        return [item]
    path = Path(item)
    if path.is_dir():
        if (path / SPEC_FILE).is_file():
            return [load_task(path)]
        found = [child for child in sorted(path.iterdir()) if (child / SPEC_FILE).is_file()]
        if not found:
            raise TaskNotFound(
                f"expected a task folder or a folder of task folders (each with {SPEC_FILE}); "
                f"{path} holds none"
            )
        return [load_task(child) for child in found]
    if not isinstance(item, str):
        raise TaskNotFound(f"expected a task folder, found no folder {path}")
    available = sorted(task_dirs())
    if any(ch in item for ch in "*?["):
        matched = fnmatch.filter(available, item)
        if not matched:
            raise TaskNotFound(f"no task matches {item!r}; available: {', '.join(available)}")
        return [get_task(task_id) for task_id in matched]
    return [get_task(item)]


@dataclass(frozen=True)
class TaskStage:
    """Task weights used for `episodes` episodes (None: from then on); `cycle` takes turns."""

    mix: tuple[tuple[str, float], ...]
    episodes: int | None = None
    cycle: bool = False


@dataclass(frozen=True)
class TaskSchedule:
    """Which task each episode of a multi-task environment runs.

    Forms (`TaskSchedule.coerce`): "uniform" (the default), "cycle", a {task_id: weight}
    mix, or a curriculum of stages, each a mix (or "uniform"/"cycle") with an episode count
    (the last stage may omit it). Episodes are counted per environment.
    """

    stages: tuple[TaskStage, ...]

    @classmethod
    def coerce(cls, value: Any, task_ids: Sequence[str]) -> TaskSchedule:
        """A schedule over `task_ids` from one of the forms; ValueError says what is wrong."""
        if isinstance(value, TaskSchedule):
            schedule = value
        elif (
            value is None
            or isinstance(value, str)
            or (isinstance(value, Mapping) and "mix" not in value)
        ):
            schedule = cls((_stage({"mix": value}, 0, task_ids),))
        elif isinstance(value, Mapping):
            schedule = cls((_stage(value, 0, task_ids),))
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            schedule = cls(tuple(_stage(stage, n, task_ids) for n, stage in enumerate(value)))
        else:
            raise ValueError(f"a task schedule is {SCHEDULE_FORMS}; got {value!r}")
        schedule.validate(task_ids)
        return schedule

    def validate(self, task_ids: Sequence[str]) -> None:
        """Every task named is in the set, weights are usable, only the last stage is open."""
        if not self.stages:
            raise ValueError(f"a task schedule needs at least one stage; expected {SCHEDULE_FORMS}")
        for number, stage in enumerate(self.stages):
            check_mix(
                stage.mix,
                task_ids,
                f"task schedule stage {number}",
                unknown=lambda name: f"{name!r} is not in the task set ({', '.join(task_ids)}).",
                empty="the weights add up to 0",
            )
            if stage.episodes is None and number != len(self.stages) - 1:
                raise ValueError(
                    f"task schedule stage {number}: expected 'episodes' "
                    "(only the last stage may omit it)"
                )

    def draw(self, rng: np.random.Generator, episode_index: int) -> str:
        """The task id of episode number `episode_index` (0-based)."""
        stage, within = self.stages[-1], episode_index
        for candidate in self.stages:
            if candidate.episodes is None or within < candidate.episodes:
                stage = candidate
                break
            within -= candidate.episodes
        names = [name for name, weight in stage.mix if weight > 0]
        if stage.cycle:
            return names[within % len(names)]
        weights = np.asarray([weight for _, weight in stage.mix if weight > 0], dtype=float)
        return names[int(rng.choice(len(names), p=weights / weights.sum()))]


def _stage(value: Any, number: int, task_ids: Sequence[str]) -> TaskStage:
    if not isinstance(value, Mapping):
        raise ValueError(
            f"task schedule stage {number}: expected a mapping {{'episodes': N, 'mix': ...}}, "
            f"got {value!r}"
        )
    unknown = set(value) - {"mix", "episodes"}
    if unknown:
        raise ValueError(
            f"task schedule stage {number}: expected the keys 'mix' and 'episodes'; "
            f"got {sorted(unknown)}"
        )
    mix, cycle = value.get("mix"), False
    if mix is None or mix == "uniform":
        mix = dict.fromkeys(task_ids, 1.0)
    elif mix == "cycle":
        mix, cycle = dict.fromkeys(task_ids, 1.0), True
    elif isinstance(mix, str):
        mix = {mix: 1.0}
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(
            f"task schedule stage {number}: expected 'uniform', 'cycle', a task id or a "
            f"non-empty {{task_id: weight}} mapping; got {mix!r}"
        )
    episodes = value.get("episodes")
    if episodes is not None and (
        isinstance(episodes, bool) or not isinstance(episodes, int) or episodes <= 0
    ):
        raise ValueError(
            f"task schedule stage {number}: expected 'episodes' to be a positive int or "
            f"absent; got {episodes!r}"
        )
    weights = []
    for name, weight in mix.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(
                f"task schedule stage {number}: expected a number as the weight of {name!r}, "
                f"got {weight!r}"
            )
        weights.append((str(name), float(weight)))
    return TaskStage(tuple(weights), episodes, cycle)
